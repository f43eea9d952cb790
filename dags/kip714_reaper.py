"""``kip714_reaper``: every 5 minutes, delete time-boxed client-metrics subscriptions whose window ended.

This is the guarantee behind the troubleshooting window: even when the worker that opened a window is
killed outright, or its create call succeeded on the broker while the task failed, its subscription
(``kip714-<label>-exp<UTC>-<8 hex>``) is removed within one run of this DAG after the expiry. Names
outside that pattern are never touched; window names with an impossible expiry are removed on sight.

It sweeps every cluster a window was ever opened on: ``$KIP714_REAPER_CONN_IDS`` (comma separated;
default ``$KIP714_KAFKA_CONN_ID`` or ``kafka_default``) plus every connection the operators recorded
before opening a window (Airflow Variables ``kip714_window_conn__<conn_id>``), read at run time by
``window_clusters``. One mapped task per cluster: an unreachable cluster does not stop the others.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG, task

from airflow_provider_kip714.operators.client_metrics import ReapExpiredClientMetricsSubscriptionsOperator
from airflow_provider_kip714.settings import reaper_conn_ids, window_cluster_conn_ids

reaper_conn_ids()  # a bad KIP714_REAPER_CONN_IDS fails the import, naming the variable

with DAG(
    dag_id="kip714_reaper",
    description="Delete expired KIP-714 troubleshooting-window subscriptions on every cluster",
    schedule="*/5 * * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=1)},
    tags=["kip714"],
    doc_md=__doc__,
) as dag:

    @task
    def window_clusters() -> list[str]:
        """The environment's connections plus every connection a window was opened on."""
        conn_ids = window_cluster_conn_ids()
        print(f"Sweeping {len(conn_ids)} cluster(s): {', '.join(conn_ids)}", flush=True)
        return conn_ids

    ReapExpiredClientMetricsSubscriptionsOperator.partial(
        task_id="reap_expired_subscriptions", execution_timeout=timedelta(minutes=4)
    ).expand(kafka_config_id=window_clusters())
