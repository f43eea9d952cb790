"""The product DAGs under a live Airflow, as production runs them, driven only through the REST API v2.

One Airflow for the module (``tests/support/live_airflow.py``: scheduler, dag-processor, triggerer and
API server as separate processes, LocalExecutor, SQLite, 127.0.0.1), the session's Kafka with the
broker plugin, real librdkafka clients, Spark in local mode through ``spark_default``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from dag_test_env import kafka_connection
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from telemetry_helpers import run_librdkafka_clients
from test_dags_troubleshoot import troubleshoot_conf

from airflow_provider_kip714.storage.data_root import RunArea, troubleshoot_area
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.troubleshooting.window import SENSOR_RETRIES
from tests.support.live_airflow import LiveAirflow, live_airflow_for

# a troubleshooting run here is several task processes, a Spark application and real waits; on a loaded
# 2-core machine two runs side by side took longer than the suite's 900 s per test
pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(2400)]

PRODUCT_DAGS = ("kip714_troubleshoot", "kip714_rollups", "kip714_reaper")
TROUBLESHOOT = "kip714_troubleshoot"
WINDOW_S = 40
RUN_TIMEOUT_S = 1800  # a run under a loaded 2-core machine took over 15 min (two Spark apps at once)
CLIENT_TABLES = ("rollups", "delivery", "convergence", "capabilities", "anomalies", "broker_client_metrics")


@pytest.fixture(scope="module")
def live_airflow(
    request: pytest.FixtureRequest, kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveAirflow]:
    home = tmp_path_factory.mktemp("live-airflow")
    env = {
        "AIRFLOW_CONN_KAFKA_DEFAULT": kafka_connection(kafka_cluster.client_config()),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "KIP714_DATA_DIR": str(home / "data"),
        "KIP714_SPARK_BUILD_DIR": str(home / "spark-build"),
    }
    with live_airflow_for(request, home, env) as airflow:
        airflow.api.wait_for_dags(PRODUCT_DAGS)
        yield airflow


def data_dir(airflow: LiveAirflow) -> Path:
    return Path(airflow.env["KIP714_DATA_DIR"])


def table(area: RunArea, name: str) -> Any:
    folder = Path(str(area.table(name)))
    files = [p for p in folder.rglob("*.parquet") if not p.name.startswith((".", "_"))]
    return ds.dataset(files, format="parquet").to_table() if files else None


def column_values(frame: Any, column: str) -> set[Any]:
    if frame is None or column not in frame.column_names:
        return set()
    return {value for value in frame.column(column).to_pylist() if value is not None}


def landed_client_ids(area: RunArea) -> set[str]:
    folder = Path(str(area.landing)) / "datapoints"
    files = [p for p in folder.rglob("*.parquet") if not p.name.startswith((".", "_"))]
    data = ds.dataset(files, format="parquet").to_table(columns=["client_id"])
    return column_values(data, "client_id")


def wait_for_subscription(airflow: LiveAirflow, run_id: str, timeout_s: float = 300) -> dict[str, Any]:
    """``open_subscription``'s XCom (name, start, end) once the task has run."""
    airflow.api.wait_for_task_state(TROUBLESHOOT, run_id, "open_subscription", {"success"}, timeout_s)
    return dict(airflow.api.xcom(TROUBLESHOOT, run_id, "open_subscription"))


def deferred(airflow: LiveAirflow, run_id: str, task_id: str) -> bool:
    """Whether the task instance reported ``deferred`` (the audit log of the Execution API's updates)."""
    return any(event["event"] == "deferred" for event in airflow.api.events(TROUBLESHOOT, run_id, task_id))


class SubscriptionWatch:
    """Every ``kip714-troubleshoot-*`` subscription seen on the cluster while the block runs (polled
    every 0.5 s on an admin of its own): a retried sensor must not have opened a second window."""

    def __init__(self, kafka_cluster: LocalKafkaCluster) -> None:
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._config = to_kafka_python_kwargs(kafka_cluster.client_config())
        self._thread = threading.Thread(target=self._poll, name="kip714-watch", daemon=True)

    def _poll(self) -> None:
        with ClientMetricsAdmin(self._config) as admin:
            while not self._stop.is_set():
                self.seen |= {name for name in admin.list_names() if name.startswith("kip714-troubleshoot-")}
                self._stop.wait(0.5)

    def __enter__(self) -> SubscriptionWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)


def test_product_dags_parse_without_import_errors(live_airflow: LiveAirflow) -> None:
    assert live_airflow.api.import_errors() == []
    assert set(PRODUCT_DAGS) <= live_airflow.api.dag_ids()


def test_two_troubleshooting_runs_side_by_side_keep_to_their_clients(
    live_airflow: LiveAirflow, kafka_cluster: LocalKafkaCluster, admin: ClientMetricsAdmin, cleanup: list[str]
) -> None:
    """Two runs at once for disjoint ``client_id`` selectors: each succeeds, its sensor deferred to the
    triggerer, and its tables and report hold its own clients only, with no false gap.

    The clients push every 10 s under a standing subscription before either window opens, so each run's
    landing margin (60 s before its window) holds pushes from before the window, at another cadence,
    and each run's landing (the whole topic) holds the other run's clients."""
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    api = live_airflow.api
    api.unpause(TROUBLESHOOT)
    tag = uuid.uuid4().hex[:6]
    prefixes = {"p": f"live-{tag}-p", "c": f"live-{tag}-c"}
    standing = Subscription.from_spec(
        name=f"live-standing-{tag}",
        metrics=["org.apache.kafka.producer.", "org.apache.kafka.consumer."],
        interval_ms=10_000,
        match=[f"client_id=live-{tag}-.*"],
    )
    admin.upsert(standing)
    cleanup.append(standing.name)
    config = kafka_cluster.client_config()
    stops = {key: threading.Event() for key in prefixes}
    threads = [
        threading.Thread(
            target=run_librdkafka_clients, args=(config, prefix, RUN_TIMEOUT_S, stops[key]), daemon=True
        )
        for key, prefix in prefixes.items()
    ]
    for thread in threads:
        thread.start()
    watch = SubscriptionWatch(kafka_cluster).__enter__()
    try:
        time.sleep(15)  # pushes at the standing cadence before either window
        runs = {
            key: api.trigger(TROUBLESHOOT, troubleshoot_conf(prefix, WINDOW_S))["dag_run_id"]
            for key, prefix in prefixes.items()
        }
        subscriptions = {key: wait_for_subscription(live_airflow, run_id) for key, run_id in runs.items()}
        # each run's clients close cleanly (terminating push) a few seconds before its window ends
        for key, subscription in subscriptions.items():
            closing = datetime.fromisoformat(subscription["end"]) - timedelta(seconds=4)
            threading.Timer(max(0.0, (closing - datetime.now(UTC)).total_seconds()), stops[key].set).start()
        finals = {key: api.wait_for_run(TROUBLESHOOT, run_id, RUN_TIMEOUT_S) for key, run_id in runs.items()}
    finally:
        watch.__exit__()
        for stop in stops.values():
            stop.set()
        for thread in threads:
            thread.join(60)

    names = set(admin.list_names())
    # one window per run, whatever the sensor's tries (a retry after apache/airflow #67287 opens none)
    assert watch.seen == {subscription["name"] for subscription in subscriptions.values()}
    for key, run_id in runs.items():
        states = api.task_states(TROUBLESHOOT, run_id)
        assert finals[key]["state"] == "success", states
        assert deferred(live_airflow, run_id, "wait_for_pushes"), api.events(TROUBLESHOOT, run_id)
        assert len(api.tries(TROUBLESHOOT, run_id, "open_subscription")) == 1
        sensor_tries = api.tries(TROUBLESHOOT, run_id, "wait_for_pushes")
        print(f"{run_id}: wait_for_pushes tries: {[t['state'] for t in sensor_tries]}")
        assert subscriptions[key]["name"] not in names

    for key, run_id in runs.items():
        own = {f"{prefixes[key]}-producer", f"{prefixes[key]}-consumer"}
        other = {f"{prefix}-producer" for k, prefix in prefixes.items() if k != key}
        area = troubleshoot_area(run_id, data_dir(live_airflow))
        landed = api.xcom(TROUBLESHOOT, run_id, "land_window")
        window_start = datetime.fromisoformat(landed["window_start"])
        assert window_start == datetime.fromisoformat(subscriptions[key]["start"])
        assert datetime.fromisoformat(landed["window_end"]) == datetime.fromisoformat(
            subscriptions[key]["end"]
        )
        assert datetime.fromisoformat(landed["landing_stop"]) > datetime.fromisoformat(landed["window_end"])
        # the landing keeps the whole topic (docs/dags.md): the other run's clients are in it ...
        assert other <= landed_client_ids(area)
        # ... and, before the window, this run's own clients at the standing cadence
        raw = ds.dataset(
            [
                p
                for p in (Path(str(area.landing)) / "datapoints").rglob("*.parquet")
                if not p.name.startswith(".")
            ]
        ).to_table(columns=["client_id", "record_timestamp"])
        before = [
            ts
            for client, ts in zip(
                raw.column("client_id").to_pylist(), raw.column("record_timestamp").to_pylist(), strict=True
            )
            if client in own and ts is not None and ts.replace(tzinfo=UTC) < window_start
        ]
        assert before, (
            "no push of this run's clients landed before its window: the margin case was not exercised"
        )

        rollups = table(area, "rollups")
        assert own <= column_values(rollups, "client_id"), column_values(rollups, "client_id")
        own_instances = column_values(rollups, "client_instance_id")
        for name in CLIENT_TABLES:
            frame = table(area, name)
            assert column_values(frame, "client_id") <= own, (name, column_values(frame, "client_id"))
            if name == "broker_client_metrics":
                assert column_values(frame, "client_instance_id") <= own_instances, name
        delivery = table(area, "delivery")
        rows = [row for row in delivery.to_pylist() if row.get("client_id") in own]
        assert {row["client_id"] for row in rows} == own
        false_gaps = [
            (r["client_id"], r["status"], r["reason"]) for r in rows if r["status"] in ("gaps", "silent")
        ]
        assert not false_gaps, false_gaps
        assert not [row for row in delivery.to_pylist() if row.get("client_instance_id") is None]

        report = Path(str(api.xcom(TROUBLESHOOT, run_id, "report")))
        text = report.read_text()
        assert all(client in text for client in own)
        assert not any(client in text for client in other)


def test_sensor_retry_keeps_one_window_and_a_sigkill_mid_landing_still_removes_it(
    live_airflow: LiveAirflow, kafka_cluster: LocalKafkaCluster, admin: ClientMetricsAdmin
) -> None:
    """One run, two failures a window must survive without being duplicated or leaked.

    1. The sensor's first try fails (its subscription is briefly missing when it starts, as a stand-in
       for the scheduler failing it after apache/airflow #67287, which cannot be provoked on demand):
       it retries (``SENSOR_RETRIES``; CI once saw the retry fail too, most likely the #67287 race
       itself), waits for the same window and passes; ``open_subscription`` does not run again and no
       second window appears.
    2. ``land_window``'s task process is SIGKILLed mid-landing: the task fails, and the teardowns still
       delete the (one) subscription."""
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    api = live_airflow.api
    api.unpause(TROUBLESHOOT)
    prefix = f"live-{uuid.uuid4().hex[:6]}-kill"
    stop = threading.Event()
    clients = threading.Thread(
        target=run_librdkafka_clients,
        args=(kafka_cluster.client_config(), prefix, RUN_TIMEOUT_S, stop),
        daemon=True,
    )
    with SubscriptionWatch(kafka_cluster) as watch:
        run_id = api.trigger(TROUBLESHOOT, troubleshoot_conf(prefix, 180))["dag_run_id"]
        try:
            subscription = wait_for_subscription(live_airflow, run_id)
            opened = admin.describe(subscription["name"])
            assert opened is not None
            admin.delete(subscription["name"])
            api.wait_for_task_state(TROUBLESHOOT, run_id, "wait_for_pushes", {"up_for_retry"}, timeout_s=300)
            admin.upsert(opened)  # the same window again: same name, same content
            clients.start()
            api.wait_for_task_state(TROUBLESHOOT, run_id, "land_window", {"running"}, timeout_s=300)
            commits = Path(str(troubleshoot_area(run_id, data_dir(live_airflow)).landing)) / "_commits"
            deadline = time.monotonic() + 120
            while not any(commits.rglob("*.commit")) and time.monotonic() < deadline:
                time.sleep(0.5)  # mid-landing: at least one chunk committed
            pid = api.task_instances(TROUBLESHOOT, run_id)["land_window"]["pid"]
            assert pid, api.task_instances(TROUBLESHOOT, run_id)["land_window"]
            killed_at = time.monotonic()
            os.kill(int(pid), signal.SIGKILL)
            api.wait_for_task_state(
                TROUBLESHOOT, run_id, "land_window", {"failed"}, timeout_s=120, poll_s=0.25
            )
            failed_after = time.monotonic() - killed_at
            final = api.wait_for_run(TROUBLESHOOT, run_id, RUN_TIMEOUT_S)
        finally:
            stop.set()
            if clients.is_alive():
                clients.join(60)
    states = api.task_states(TROUBLESHOOT, run_id)
    sensor_tries = [t["state"] for t in api.tries(TROUBLESHOOT, run_id, "wait_for_pushes")]
    # the first try failed on the missing subscription; a second failed try is most likely #67287 (the retry's
    # trigger fires seconds after it defers, as pushes are already flowing): the retries cover both
    if len(sensor_tries) > 2:  # the retry failed too: its log, to tell #67287 from a defect
        print(api.task_log(TROUBLESHOOT, run_id, "wait_for_pushes", 2)[-4000:])
    assert 2 <= len(sensor_tries) <= SENSOR_RETRIES + 1 and sensor_tries[-1] == "success", sensor_tries
    assert set(sensor_tries[:-1]) <= {"failed", "up_for_retry"}, sensor_tries
    assert len(api.tries(TROUBLESHOOT, run_id, "open_subscription")) == 1
    assert watch.seen == {subscription["name"]}
    assert final["state"] == "failed", states
    assert states["land_window"] == "failed"
    assert states["close_subscription"] == "success" and states["check_subscription_gone"] == "success", (
        states
    )
    assert states["analytics"] == "upstream_failed" and states["report"] == "upstream_failed", states
    assert subscription["name"] not in admin.list_names()
    print(f"land_window failed {failed_after:.1f} s after the SIGKILL; sensor tries: {sensor_tries}")


def test_hourly_rollups_for_the_last_hour_succeed(live_airflow: LiveAirflow) -> None:
    """Unpaused, ``kip714_rollups`` (catchup off) runs its latest complete hour on its own schedule:
    it lands the real topic and computes the hour's tables, and emits its asset events."""
    api = live_airflow.api
    api.unpause("kip714_rollups")
    deadline = time.monotonic() + 120
    runs: list[dict[str, Any]] = []
    while not runs and time.monotonic() < deadline:
        runs = api.request("GET", "/api/v2/dags/kip714_rollups/dagRuns", params={"limit": 5})["dag_runs"]
        time.sleep(1)
    assert runs, "the scheduler created no run of kip714_rollups"
    run = runs[0]
    hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    assert datetime.fromisoformat(run["data_interval_end"]) == hour
    assert datetime.fromisoformat(run["data_interval_start"]) == hour - timedelta(hours=1)
    final = api.wait_for_run("kip714_rollups", run["dag_run_id"], RUN_TIMEOUT_S)
    assert final["state"] == "success", api.task_states("kip714_rollups", run["dag_run_id"])
    events = api.asset_events(source_dag_id="kip714_rollups", source_run_id=run["dag_run_id"])
    uris = {event.get("uri") or "" for event in events}
    assert any(uri.endswith("/rollups") for uri in uris) and any(uri.endswith("/delivery") for uri in uris), (
        events
    )
