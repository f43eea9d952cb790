"""Telemetry pieces in real Airflow: dag.test() in a subprocess with an isolated AIRFLOW_HOME."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dag_test_env import make_airflow_env
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from plugin_topic import subscription
from telemetry_helpers import create_topic, good_records, produce_records, read_dir, run_librdkafka_clients

pytestmark = pytest.mark.integration

TEST_DAGS = Path(__file__).parent / "dags"
RUNNER = Path(__file__).parent / "airflow_dag_runner.py"
DAG_FILE = TEST_DAGS / "kip714_test_telemetry.py"


@pytest.fixture(scope="module")
def airflow_env(kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("airflow-home-telemetry")
    return make_airflow_env(home, home / "kip714-data", kafka_cluster, dags_folder=TEST_DAGS)


def run_dag(env: dict[str, str], dag_id: str, timeout_s: float = 300) -> tuple[dict, str]:
    completed = subprocess.run(
        [sys.executable, str(RUNNER), str(DAG_FILE), dag_id, datetime.now(UTC).isoformat()],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no summary from dag.test: {completed.stderr[-3000:]}"
    return json.loads(lines[-1]), completed.stdout + completed.stderr


def test_arrival_sensor_fires_when_matching_clients_push(
    kafka_cluster: LocalKafkaCluster, airflow_env: dict[str, str]
) -> None:
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    config = kafka_cluster.client_config()
    prefix = f"arrive-{uuid.uuid4().hex[:8]}"
    name = f"kip714-test-{prefix}"
    with subscription(kafka_cluster.bootstrap_servers, name, f"client_id={prefix}-.*"):
        env = {
            **airflow_env,
            "KIP714_TEST_ARRIVAL_SUBSCRIPTION": name,  # reuse the subscription's match
            "KIP714_TEST_ARRIVAL_TIMEOUT_S": "120",
        }
        # clients start only after the DAG run has started: the sensor must see records arriving later
        clients = threading.Timer(8.0, run_librdkafka_clients, args=(config, prefix, 5.0))
        clients.start()
        try:
            summary, output = run_dag(env, "kip714_test_arrival")
        finally:
            clients.join()
    assert summary["state"] == "success", output[-3000:]
    seen = summary["xcom"]["wait_for_clients"]
    seen = json.loads(seen) if isinstance(seen, str) else seen
    assert seen["match"] == [f"client_id={prefix}-.*"]
    by_id = {client["client_id"]: client for client in seen["clients"]}
    assert set(by_id) <= {f"{prefix}-producer", f"{prefix}-consumer"} and by_id
    assert all(client["client_software_name"] == "confluent-kafka-python" for client in by_id.values())
    assert all(client["client_software_version"] for client in by_id.values())


def test_arrival_sensor_times_out_cleanly(
    kafka_cluster: LocalKafkaCluster, airflow_env: dict[str, str]
) -> None:
    env = {
        **airflow_env,
        "KIP714_TEST_ARRIVAL_MATCH": f"client_id=nobody-{uuid.uuid4().hex[:8]}",
        "KIP714_TEST_ARRIVAL_TIMEOUT_S": "6",
    }
    started = time.monotonic()
    summary, output = run_dag(env, "kip714_test_arrival", timeout_s=240)
    assert summary["state"] == "failed"
    assert summary["tasks"]["wait_for_clients"] == "failed"
    assert "Timed out after 6.0s waiting for 1 client(s)" in output
    assert time.monotonic() - started < 240


def test_landing_operator_lands_and_emits_the_asset(
    kafka_cluster: LocalKafkaCluster, airflow_env: dict[str, str], tmp_path: Path
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=2, prefix="dagland")
    produce_records(config, topic, good_records(40, partitions=2, points=3))
    out = tmp_path / "zone"
    env = {**airflow_env, "KIP714_TEST_LAND_OUT": str(out), "KIP714_TEST_TOPIC": topic}
    summary, output = run_dag(env, "kip714_test_land")
    assert summary["state"] == "success", output[-3000:]
    landed = summary["xcom"]["land"]
    landed = json.loads(landed) if isinstance(landed, str) else landed
    assert (landed["records"], landed["points"], landed["quarantined"]) == (40, 120, 0)
    assert read_dir(out / "datapoints").num_rows == 120
    database = Path(airflow_env["AIRFLOW_HOME"]) / "airflow.db"
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            "SELECT asset.uri, asset_event.extra FROM asset_event "
            "JOIN asset ON asset.id = asset_event.asset_id"
        ).fetchall()
    events = [json.loads(extra) for uri, extra in rows if uri == (out / "datapoints").resolve().as_uri()]
    assert events and events[-1]["records"] == 40 and events[-1]["points"] == 120
