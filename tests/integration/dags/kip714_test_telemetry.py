"""Test DAGs for telemetry: the arrival sensor and the landing operator (parameters from the environment).

KIP714_TEST_ARRIVAL_MATCH (match), KIP714_TEST_ARRIVAL_SUBSCRIPTION (reuse a subscription's match),
KIP714_TEST_ARRIVAL_TIMEOUT_S, KIP714_TEST_LAND_OUT (landing zone), KIP714_TEST_TOPIC.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_kip714.operators.telemetry import LandClientTelemetryOperator
from airflow_provider_kip714.sensors.telemetry_arrival import ClientTelemetryArrivalSensor

TOPIC = os.environ.get("KIP714_TEST_TOPIC", "_client_telemetry")

with DAG(
    dag_id="kip714_test_arrival", schedule=None, start_date=datetime(2026, 1, 1), catchup=False
) as arrival_dag:
    ClientTelemetryArrivalSensor(
        task_id="wait_for_clients",
        match=os.environ.get("KIP714_TEST_ARRIVAL_MATCH") or None,
        subscription_name=os.environ.get("KIP714_TEST_ARRIVAL_SUBSCRIPTION") or None,
        since="{{ dag_run.start_date.isoformat() }}",
        topic=TOPIC,
        timeout=float(os.environ.get("KIP714_TEST_ARRIVAL_TIMEOUT_S", "60")),
        poke_interval=1,
    )

with DAG(
    dag_id="kip714_test_land", schedule=None, start_date=datetime(2026, 1, 1), catchup=False
) as land_dag:
    LandClientTelemetryOperator(
        task_id="land",
        out_dir=os.environ.get("KIP714_TEST_LAND_OUT", "/tmp/kip714-test-landing"),
        topic=TOPIC,
        fsync=False,
    )
