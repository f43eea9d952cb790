"""Apache Airflow provider for Kafka KIP-714 client metrics."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def get_provider_info() -> dict[str, Any]:
    """Describe the provider to Airflow's ProvidersManager (entry point ``apache_airflow_provider``)."""
    return {
        "package-name": "airflow-provider-kip714",
        "name": "Kafka KIP-714 client metrics",
        "description": (
            "Time-boxed KIP-714 client-metrics subscriptions, telemetry landing and Spark analytics."
        ),
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Kafka KIP-714 client metrics",
                "external-doc-url": "https://cwiki.apache.org/confluence/x/2xRRCg",
                "tags": ["protocol"],
            }
        ],
        "hooks": [
            {
                "integration-name": "Kafka KIP-714 client metrics",
                "python-modules": [
                    "airflow_provider_kip714.hooks.client_metrics",
                    "airflow_provider_kip714.hooks.telemetry_topic",
                ],
            }
        ],
        "operators": [
            {
                "integration-name": "Kafka KIP-714 client metrics",
                "python-modules": [
                    "airflow_provider_kip714.operators.client_metrics",
                    "airflow_provider_kip714.operators.telemetry",
                    "airflow_provider_kip714.operators.report",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": "Kafka KIP-714 client metrics",
                "python-modules": [
                    "airflow_provider_kip714.sensors.client_metrics_window",
                    "airflow_provider_kip714.sensors.telemetry_arrival",
                ],
            }
        ],
        "triggers": [
            {
                "integration-name": "Kafka KIP-714 client metrics",
                "python-modules": [
                    "airflow_provider_kip714.triggers.client_metrics_window",
                    "airflow_provider_kip714.triggers.telemetry_arrival",
                ],
            }
        ],
        "connection-types": [
            {
                # Not "kafka": the apache-kafka provider owns that type and Airflow keeps one hook per
                # type (ours would win, alphabetically). The hook still reads "kafka" connections.
                "hook-class-name": "airflow_provider_kip714.hooks.client_metrics.ClientMetricsHook",
                "hook-name": "Kafka client metrics (KIP-714)",
                "connection-type": "kafka_client_metrics",
                "ui-field-behaviour": {
                    "hidden-fields": ["schema", "login", "password", "port", "host"],
                    "relabeling": {"extra": "Config Dict"},
                    "placeholders": {"extra": '{"bootstrap.servers": "localhost:9092"}'},
                },
            }
        ],
        "extra-links": ["airflow_provider_kip714.operators.report.TroubleshootingReportLink"],
        "plugins": [],
    }
