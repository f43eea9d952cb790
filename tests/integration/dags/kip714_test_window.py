"""Test DAG: one troubleshooting window, parameters from the environment (dag.test() re-parses this file).

KIP714_TEST_WINDOW (duration, default 20s), KIP714_TEST_LABEL, KIP714_TEST_MATCH, KIP714_TEST_METRICS,
KIP714_TEST_INTERVAL_MS, KIP714_TEST_POLL_S.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_kip714.operators.client_metrics import ClientMetricsTroubleshootingWindowOperator

with DAG(dag_id="kip714_test_window", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
    ClientMetricsTroubleshootingWindowOperator(
        task_id="window",
        kafka_config_id="kafka_default",
        window=os.environ.get("KIP714_TEST_WINDOW", "20s"),
        window_label=os.environ.get("KIP714_TEST_LABEL", "test-window"),
        metrics=os.environ.get("KIP714_TEST_METRICS", "org.apache.kafka.producer."),
        interval_ms=int(os.environ.get("KIP714_TEST_INTERVAL_MS", "1000")),
        match=os.environ.get("KIP714_TEST_MATCH") or None,
        poll_interval=float(os.environ.get("KIP714_TEST_POLL_S", "2")),
    )
