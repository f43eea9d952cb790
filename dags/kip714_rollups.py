"""``kip714_rollups``: every hour, land the telemetry topic and compute the analytics of that hour.

    land -> analytics (rollups, then thresholds + anomalies, then broker metrics: one Spark application)

Each output table is an Asset (the UI page and downstream DAGs schedule on them). Runs own their
interval: landing is exactly-once by offsets (a rerun lands only what is new), and the Spark apps
replace their interval's ``date=/hour=`` partitions, so retries, reruns and backfills
(``airflow backfill create --dag-id kip714_rollups --from-date ... --to-date ...``) are idempotent.
Data lives under ``scheduled_area()`` (``$KIP714_DATA_DIR``: landing/ and analytics/); the telemetry
comes from connection ``$KIP714_KAFKA_CONN_ID`` (default ``kafka_default``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG, CronDataIntervalTimetable

from airflow_provider_kip714.operators.telemetry import LandClientTelemetryOperator
from airflow_provider_kip714.settings import scheduled_kafka_conn_id
from airflow_provider_kip714.spark.jobs import SPARK_MACROS, analytics_asset, spark_app_operator
from airflow_provider_kip714.storage.data_root import scheduled_area
from spark_apps.package import DEFAULT_RULES

ZONE = scheduled_area()
LEASE_WAIT_S = 300
INTERVAL = {
    "input_root": str(ZONE.landing),
    "output_root": str(ZONE.analytics),
    "start": "{{ data_interval_start.isoformat() }}",
    "end": "{{ data_interval_end.isoformat() }}",
    "bucket": "1m",
}

with DAG(
    dag_id="kip714_rollups",
    description="Hourly KIP-714 analytics: land telemetry, roll up, detect anomalies, broker health",
    schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    user_defined_macros=SPARK_MACROS,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=2)},
    tags=["kip714"],
    doc_md=__doc__,
) as dag:
    land = LandClientTelemetryOperator(
        task_id="land",
        out_dir=ZONE.landing,
        kafka_config_id=scheduled_kafka_conn_id(),
        timeout_s=45 * 60,
        lease_wait_s=LEASE_WAIT_S,  # kip714_live lands into the same zone: take turns
        execution_timeout=timedelta(minutes=50),
    )
    # rollups, thresholds and anomalies, broker health, delivery, capabilities (the guardrail reads them):
    # one Spark application, one JVM start
    analytics = spark_app_operator(
        task_id="analytics",
        app="pipeline",
        extra_args={"rules": str(DEFAULT_RULES), "history": "24h"},
        outlets=[
            analytics_asset(ZONE, table)
            for table in (
                "rollups",
                "thresholds",
                "anomalies",
                "broker_metrics",
                "broker_client_metrics",
                "delivery",
                "capabilities",
            )
        ],
        **INTERVAL,
    )
    land >> analytics
