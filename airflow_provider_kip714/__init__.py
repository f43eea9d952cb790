"""Apache Airflow provider for Kafka KIP-714 client metrics."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def get_provider_info() -> dict[str, Any]:
    """Describe the provider to Airflow's ProvidersManager (entry point ``apache_airflow_provider``)."""
    return {
        "package-name": "airflow-provider-kip714",
        "name": "Kafka KIP-714 client metrics",
        "description": "Time-boxed KIP-714 client-metrics subscriptions, telemetry landing and Spark analytics.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "Kafka KIP-714 client metrics",
                "external-doc-url": "https://cwiki.apache.org/confluence/x/2xRRCg",
                "tags": ["protocol"],
            }
        ],
        "hooks": [],
        "connection-types": [],
        "plugins": [],
    }
