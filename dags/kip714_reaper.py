"""``kip714_reaper``: every 5 minutes, delete time-boxed client-metrics subscriptions whose window ended.

This is the guarantee behind the troubleshooting window: even when the worker that opened a window is
killed outright, its subscription (``kip714-<label>-exp<UTC>-<8 hex>``) is removed within one run of
this DAG after the expiry. Names outside that pattern are never touched.

It sweeps ``$KIP714_REAPER_CONN_IDS`` (comma separated), default ``$KIP714_KAFKA_CONN_ID`` or
``kafka_default``: list every cluster windows are opened on (``dag_settings.py``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_kip714.operators.client_metrics import ReapExpiredClientMetricsSubscriptionsOperator
from airflow_provider_kip714.settings import reaper_conn_ids

CONN_IDS = reaper_conn_ids()

with DAG(
    dag_id="kip714_reaper",
    description="Delete expired KIP-714 troubleshooting-window subscriptions",
    schedule="*/5 * * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=1)},
    tags=["kip714"],
) as dag:
    for conn_id in CONN_IDS:  # one task per cluster: one unreachable cluster does not stop the others
        ReapExpiredClientMetricsSubscriptionsOperator(
            task_id="reap_expired_subscriptions" if len(CONN_IDS) == 1 else f"reap_expired__{conn_id}",
            kafka_config_id=conn_id,
            execution_timeout=timedelta(minutes=4),
        )
