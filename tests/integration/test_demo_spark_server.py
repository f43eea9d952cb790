"""The demo's Spark Connect server (``kip714_dev.demo.spark_server``): idle CPU class until live mode
starts, the DAGs' connection, the pipeline run on pushes landed from real Kafka (what a live cycle runs),
and nothing left running afterwards."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
from kip714_dev.demo.spark_server import CONN_ID, DemoSparkServer
from kip714_dev.local_spark import connect
from telemetry_helpers import client_headers, create_topic, produce_records, producer_like_payload

from spark_apps.package import application_args


def test_the_demos_server_runs_idle_then_analyses_what_was_landed(
    tmp_path: Path, kafka_cluster, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    bootstrap = kafka_cluster.bootstrap_servers
    config = {"bootstrap.servers": bootstrap}
    topic = create_topic(config, partitions=2, prefix="demo-warmup")
    since = datetime.now(UTC) - timedelta(seconds=30)
    now_ns = time.time_ns()
    headers = client_headers()
    records = [
        (i % 2, producer_like_payload(6, seed=i, time_ns=now_ns - i * 10**9), headers) for i in range(20)
    ]
    produce_records(config, topic, records, timestamp_ms=now_ns // 10**6)
    kip714 = str(Path(sys.executable).parent / "kip714")
    landing, analytics = tmp_path / "landing", tmp_path / "analytics"
    land = [kip714, "telemetry", "land", "--bootstrap-server", bootstrap, "--topic", topic, "--out"]
    subprocess.run([*land, str(landing)], check=True, capture_output=True, timeout=120)
    server = DemoSparkServer(tmp_path)

    server.start()
    try:
        for name, value in server.airflow_env().items():
            monkeypatch.setenv(name, value)
        assert server.state is not None
        assert (
            SparkConnectHook(CONN_ID).get_connection_url().rstrip("/") == server.state.url
        )  # what the DAGs connect to
        policy = subprocess.run(
            ["chrt", "-p", str(server.state.pid)], capture_output=True, text=True, check=True
        )
        assert "SCHED_IDLE" in policy.stdout  # the fleet and the broker come first

        server.to_normal_priority()  # live mode and the DAGs: every thread of the JVM, not just its first
        until = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
        args = application_args(str(landing), str(analytics), since.isoformat(), until.isoformat(), "10s")
        server.run_app("pipeline", args, tmp_path / "pipeline.log")
        threads = list(Path(f"/proc/{server.state.pid}/task").iterdir())
        policies = {_policy(int(thread.name)) for thread in threads}
    finally:
        server.stop()

    assert server.error is None
    rollups = pq.read_table(analytics / "rollups")
    assert rollups.num_rows > 0  # the run analysed the landed pushes, not an empty folder
    assert connect.status(server.root) is None
    assert len(threads) > 20 and policies - {"gone"} == {"SCHED_OTHER"}, policies  # "gone": a thread ended


def _policy(tid: int) -> str:
    shown = subprocess.run(["chrt", "-p", str(tid)], capture_output=True, text=True, check=False).stdout
    return shown.split("policy:")[1].split()[0] if "policy:" in shown else "gone"
