"""The product DAGs, unchanged, on the cluster topology: 3 Kafka brokers, data on S3 (S3Proxy), Spark
standalone (2 workers), and one broker SIGKILLed in the middle of the troubleshooting window.

Only connections and settings differ from the single-machine tests: the Kafka connection lists three
brokers, ``KIP714_DATA_DIR`` is an ``s3://<conn_id>@bucket/prefix`` URL, ``spark_default`` points at
the standalone master (client deploy mode), and the s3a jars are on the Spark classpath. Select with
``-m cluster``.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from dag_test_env import make_airflow_env, run_dag_test
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from object_storage import CONN_ID, LocalS3
from spark_cluster import local_spark  # noqa: F401 (fixture)
from test_dags_troubleshoot import start_clients_when_subscribed, troubleshoot_conf, troubleshoot_names

from airflow_provider_kip714.analytics.tables import read_table
from airflow_provider_kip714.storage.data_root import RunArea, as_storage_path
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.telemetry.landing_zone import LandingZone

# Set-up (S3Proxy, a standalone master and 2 workers, Airflow's DB) plus the runs exceed the default 900 s
# on a loaded 2-core machine.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.cluster,
    pytest.mark.timeout(2400),
]

WINDOW_S = 30
KILLED_NODE = 2


@pytest.fixture(scope="module")
def kafka_cluster(kafka_cluster_factory: LocalKafkaClusterFactory) -> Iterator[LocalKafkaCluster]:
    """Three brokers (every one a KRaft voter with the plugin) instead of the session's single broker."""
    cluster = kafka_cluster_factory.start(name=f"cluster-topology-{uuid.uuid4().hex[:6]}", brokers=3)
    yield cluster
    cluster.stop()


def kill_a_broker_mid_window(
    cluster: LocalKafkaCluster, admin: ClientMetricsAdmin, before: set[str], down_s: float = 10.0
) -> tuple[threading.Thread, dict[str, float]]:
    """Background thread: once the window's subscription exists and its clients push, SIGKILL a broker,
    keep it down ``down_s`` seconds, start it again; records when."""
    happened: dict[str, float] = {}

    def run() -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not troubleshoot_names(admin) - before:
            time.sleep(0.5)
        time.sleep(WINDOW_S / 3)
        happened["killed_at"] = time.time()
        cluster.kill(KILLED_NODE)
        time.sleep(down_s)
        cluster.start_node(KILLED_NODE)
        happened["restarted_at"] = time.time()

    thread = threading.Thread(target=run, name="kip714-test-broker-killer", daemon=True)
    thread.start()
    return thread, happened


@pytest.fixture(scope="module")
def cluster_env(
    kafka_cluster: LocalKafkaCluster,
    local_s3: LocalS3,
    local_spark,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, str]:
    home = tmp_path_factory.mktemp("airflow-home-cluster")
    env = make_airflow_env(home, local_s3.url(f"cluster-{uuid.uuid4().hex[:6]}"), kafka_cluster)  # type: ignore[arg-type]
    variable = f"AIRFLOW_CONN_{CONN_ID.upper()}"
    env[variable] = os.environ[variable]
    env["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps(
        {"conn_type": "spark", "host": local_spark.master_url, "extra": {"deploy-mode": "client"}}
    )
    env["KIP714_SPARK_EXTRA_CLASSPATH"] = local_spark.s3a_classpath
    return env


def test_troubleshoot_on_s3_and_spark_standalone(
    kafka_cluster: LocalKafkaCluster, cluster_env: dict[str, str]
) -> None:
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    prefix = f"cl-{uuid.uuid4().hex[:8]}"
    conf = troubleshoot_conf(prefix, WINDOW_S)
    with ClientMetricsAdmin(to_kafka_python_kwargs(kafka_cluster.client_config())) as admin:
        before = troubleshoot_names(admin)
        thread, clients = start_clients_when_subscribed(
            admin, before, kafka_cluster.client_config(), prefix, seconds=WINDOW_S - 5
        )
        killer, killed = kill_a_broker_mid_window(kafka_cluster, admin, before)
        summary, output, _ = run_dag_test(
            cluster_env, "kip714_troubleshoot", datetime.now(UTC), conf=conf, timeout_s=1200
        )
        thread.join(timeout=120)
        killer.join(timeout=180)
        assert "restarted_at" in killed, f"broker {KILLED_NODE} was not killed and restarted: {killed}"
        assert summary is not None, output[-5000:]
        assert summary["state"] == "success", (summary["tasks"], output[-6000:])
        assert summary["xcom"]["open_subscription"] not in admin.list_names()
    assert "error" not in clients, clients
    landed = summary["xcom"]["land_window"]
    assert landed["records"] > 0 and landed["quarantined"] == 0
    landing = landed["landing"]
    assert landing.startswith(f"s3://{CONN_ID}@"), landing
    # the window's landing zone is on S3, with commit markers; Spark wrote the analytics there too
    zone = LandingZone(landing, "_client_telemetry")
    raw = zone.read_table("raw", columns=["partition", "offset", "timestamp"])
    assert sum(1 for _ in zone.committed()) > 0 and raw.num_rows >= landed["records"]
    offsets = Counter(zip(raw.column("partition").to_pylist(), raw.column("offset").to_pylist(), strict=True))
    assert not [key for key, n in offsets.items() if n > 1], "an offset landed twice"
    after_kill = [ts for ts in raw.column("timestamp").to_pylist() if ts.timestamp() > killed["killed_at"]]
    assert after_kill, "nothing landed from after the broker was killed: the window did not carry on"
    area = RunArea(as_storage_path(landed["area"]))
    rollups = read_table(area, "rollups")
    assert not rollups.empty and rollups["client_id"].str.startswith(prefix).any()
    report = as_storage_path(str(summary["xcom"]["report"]))
    text = report.read_text()
    assert f"{prefix}-producer" in text
    assert "spark://" in output or "Spark-Submit cmd" in output


def test_rollups_on_s3_and_spark_standalone(
    kafka_cluster: LocalKafkaCluster, cluster_env: dict[str, str]
) -> None:
    run_at = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    summary, output, _ = run_dag_test(cluster_env, "kip714_rollups", run_at, timeout_s=1500)
    assert summary is not None and summary["state"] == "success", (
        summary and summary["tasks"],
        output[-6000:],
    )
    landed = summary["xcom"]["land"]
    assert landed["records"] > 0
    area = RunArea(as_storage_path(cluster_env["KIP714_DATA_DIR"]))
    assert LandingZone(str(area.landing), "_client_telemetry").read_table("raw").num_rows >= landed["records"]
    rollups = read_table(area, "rollups")
    assert not rollups.empty
