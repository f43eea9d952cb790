"""The window operator and the reaper in real Airflow (dag.test() in subprocesses, isolated AIRFLOW_HOME).

Each Airflow run is its own process with its own SQLite metadata DB, so Airflow's global config never
leaks into other tests, and a run can be SIGKILLed like a dying worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dag_test_env import kafka_connection, make_airflow_env
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory

from airflow_provider_kip714.clock import ManualClock
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.subscriptions.window_name import (
    format_window_name,
    parse_window_name,
    try_parse_window_name,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_DAGS = Path(__file__).parent / "dags"
RUNNER = Path(__file__).parent / "airflow_dag_runner.py"
WINDOW_DAG = TEST_DAGS / "kip714_test_window.py"
REAPER_DAG = REPO_ROOT / "dags" / "kip714_reaper.py"


@pytest.fixture(scope="module")
def airflow_env(kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for an isolated Airflow: tmp AIRFLOW_HOME, SQLite, kafka_default -> the session Kafka."""
    home = tmp_path_factory.mktemp("airflow-home")
    return make_airflow_env(home, home / "kip714-data", kafka_cluster, dags_folder=TEST_DAGS)


def names_with_label(admin: ClientMetricsAdmin, label: str) -> list[str]:
    return [
        name
        for name in admin.list_names()
        if (window := try_parse_window_name(name)) and window.label == label
    ]


def start_dag_test(
    env: dict[str, str], dag_file: Path, dag_id: str, logical_date: datetime, output: Path | None = None
) -> subprocess.Popen[str]:
    """Start the runner in its own process group; with ``output`` its stdout+stderr go to that file."""
    sink = output.open("w") if output is not None else None
    return subprocess.Popen(
        [sys.executable, str(RUNNER), str(dag_file), dag_id, logical_date.isoformat()],
        env=env,
        stdout=sink or subprocess.PIPE,
        stderr=subprocess.STDOUT if sink else subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_for_text(path: Path, text: str, process: subprocess.Popen[str], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        if process.poll() is not None:
            pytest.fail(f"process ended before logging {text!r}: {path.read_text()[-3000:]}")
        time.sleep(0.5)
    pytest.fail(f"{text!r} not logged within {limit_s} s: {path.read_text()[-3000:]}")


def finish(process: subprocess.Popen[str], timeout: float = 300) -> dict:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-4000:]
    return json.loads(out.strip().splitlines()[-1])


def wait_for_names(
    admin: ClientMetricsAdmin, label: str, process: subprocess.Popen[str], limit_s: float
) -> list[str]:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        names = names_with_label(admin, label)
        if names:
            return names
        if process.poll() is not None:
            error = process.stderr.read()[-3000:] if process.stderr else "(see the output file)"
            pytest.fail(f"dag.test ended before creating the window: {error}")
        time.sleep(0.5)
    pytest.fail(f"no window subscription labelled {label} appeared within {limit_s} s")


def kill_group(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGKILL)  # the group holds only the runner we started
    process.wait(timeout=30)


def window_env(env: dict[str, str], label: str, window: str) -> dict[str, str]:
    return {
        **env,
        "KIP714_TEST_LABEL": label,
        "KIP714_TEST_WINDOW": window,
        "KIP714_TEST_MATCH": f"client_id=nobody-{label}",
    }


def test_dag_test_with_20s_window_leaves_no_subscription_and_no_secret_in_logs(
    airflow_env: dict[str, str], admin: ClientMetricsAdmin, kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    label = f"dagtest-{uuid.uuid4().hex[:8]}"
    user = sorted(kafka_cluster.sasl_users)[0]
    password = kafka_cluster.sasl_users[user]
    env = {
        **window_env(airflow_env, label, "20s"),
        # through the SASL listener
        "AIRFLOW_CONN_KAFKA_DEFAULT": kafka_connection(kafka_cluster.client_config(sasl_user=user)),
        # kafka-python logs its whole config (password included) at DEBUG; we filter that record.
        # (Airflow's own supervisor logs MaskSecret requests verbatim at DEBUG, so only kafka goes DEBUG.)
        "AIRFLOW__LOGGING__NAMESPACE_LEVELS": "kafka=DEBUG airflow_provider_kip714=DEBUG",
    }
    output = tmp_path / "dag-test.log"
    process = start_dag_test(env, WINDOW_DAG, "kip714_test_window", datetime.now(UTC), output=output)
    seen = wait_for_names(admin, label, process, limit_s=120)
    assert len(seen) == 1
    described = admin.describe(seen[0])
    assert described is not None and described.metrics == ("org.apache.kafka.producer.",)
    assert described.interval_ms == 1000

    assert process.wait(timeout=300) == 0, output.read_text()[-4000:]
    summary = json.loads(
        next(line for line in reversed(output.read_text().splitlines()) if line.startswith('{"state"'))
    )
    assert summary["state"] == "success", summary
    assert summary["xcom"]["window"] == seen[0]
    assert names_with_label(admin, label) == []
    assert parse_window_name(seen[0]).expires_at <= datetime.now(UTC)
    log_text = output.read_text()
    assert "deleted" in log_text and seen[0] in log_text
    assert password not in log_text


def test_sigkilled_window_is_reused_by_retry_and_removed_by_reaper(
    airflow_env: dict[str, str], admin: ClientMetricsAdmin, tmp_path: Path
) -> None:
    label = f"killed-{uuid.uuid4().hex[:8]}"
    env = window_env(airflow_env, label, "60s")
    logical_date = datetime.now(UTC).replace(microsecond=0)

    first = start_dag_test(env, WINDOW_DAG, "kip714_test_window", logical_date)
    created = wait_for_names(admin, label, first, limit_s=120)
    kill_group(first)
    assert first.returncode == -signal.SIGKILL
    assert names_with_label(admin, label) == created  # a killed worker cleans nothing up

    # The retry (same dag, task, run id, map index and window) finds the same subscription.
    retry_log = tmp_path / "retry.log"
    retry = start_dag_test(env, WINDOW_DAG, "kip714_test_window", logical_date, output=retry_log)
    try:
        wait_for_text(retry_log, f"Window {created[0]} reused; deferring until it ends", retry, limit_s=120)
        assert names_with_label(admin, label) == created
    finally:
        kill_group(retry)
    assert names_with_label(admin, label) == created

    # After the expiry, the real kip714_reaper DAG removes it.
    expiry = parse_window_name(created[0]).expires_at
    time.sleep(max(0.0, (expiry - datetime.now(UTC)).total_seconds()) + 1)
    reaper_env = {**airflow_env, "AIRFLOW__CORE__DAGS_FOLDER": str(REAPER_DAG.parent)}
    summary = finish(start_dag_test(reaper_env, REAPER_DAG, "kip714_reaper", datetime.now(UTC)))
    assert summary["state"] == "success", summary
    assert created[0] in summary["xcom"]["reap_expired_subscriptions"]
    assert names_with_label(admin, label) == []


def test_reaper_dag_removes_expired_windows_only(
    airflow_env: dict[str, str], admin: ClientMetricsAdmin, kafka_cluster: LocalKafkaCluster
) -> None:
    label = f"reaperdag-{uuid.uuid4().hex[:8]}"
    now = datetime.now(UTC)
    expired = format_window_name(label, now - timedelta(seconds=5), "00000001")
    current = format_window_name(label, now + timedelta(hours=1), "00000002")
    admin.upsert(Subscription.from_spec(current, block=True, match=f"client_id=nobody-{label}"))
    # upsert refuses to create an already expired window: create it with a clock from before.
    kwargs = to_kafka_python_kwargs(kafka_cluster.client_config())
    with ClientMetricsAdmin(kwargs, clock=ManualClock(now - timedelta(minutes=5))) as earlier:
        earlier.upsert(Subscription.from_spec(expired, block=True, match=f"client_id=nobody-{label}"))
    try:
        env = {**airflow_env, "AIRFLOW__CORE__DAGS_FOLDER": str(REAPER_DAG.parent)}
        summary = finish(start_dag_test(env, REAPER_DAG, "kip714_reaper", datetime.now(UTC)))
        assert summary["state"] == "success", summary
        assert expired in summary["xcom"]["reap_expired_subscriptions"]
        assert names_with_label(admin, label) == [current]
    finally:
        admin.delete(current)
        admin.delete(expired)


FAILED_CREATE_DAG = TEST_DAGS / "kip714_test_failed_create.py"


def test_a_failed_create_on_an_unlisted_cluster_is_reaped_after_its_expiry(
    airflow_env: dict[str, str], kafka_cluster_factory: LocalKafkaClusterFactory, tmp_path: Path
) -> None:
    """The create reaches the broker, then the worker dies before any XCom or cleanup, on a cluster
    the reaper's environment does not list. Before: the reaper swept only KIP714_REAPER_CONN_IDS
    (default kafka_default), so this window stayed forever. Now the operator records its connection
    before calling the broker and the reaper sweeps every recorded one."""
    other = kafka_cluster_factory.start(name="reaper-other-cluster", with_plugin=False)
    label = f"failedcreate-{uuid.uuid4().hex[:8]}"
    env = {
        **airflow_env,
        "AIRFLOW_CONN_KAFKA_OTHER": kafka_connection(other.client_config()),
        "KIP714_TEST_CONN_ID": "kafka_other",
        "KIP714_TEST_LABEL": label,
        "KIP714_TEST_WINDOW": "15s",
    }
    output = tmp_path / "failed-create.log"
    with ClientMetricsAdmin(to_kafka_python_kwargs(other.client_config())) as other_admin:
        process = start_dag_test(
            env, FAILED_CREATE_DAG, "kip714_test_failed_create", datetime.now(UTC), output
        )
        assert process.wait(timeout=300) == -signal.SIGKILL, output.read_text()[-3000:]
        assert "KIP714_TEST created" in output.read_text()
        created = names_with_label(other_admin, label)
        assert len(created) == 1  # the broker has it; nothing else ran

        expiry = parse_window_name(created[0]).expires_at
        time.sleep(max(0.0, (expiry - datetime.now(UTC)).total_seconds()) + 1)
        reaper_env = {**env, "AIRFLOW__CORE__DAGS_FOLDER": str(REAPER_DAG.parent)}
        reaper_env.pop("KIP714_REAPER_CONN_IDS", None)
        summary = finish(start_dag_test(reaper_env, REAPER_DAG, "kip714_reaper", datetime.now(UTC)))
        assert summary["state"] == "success", summary
        assert summary["xcom"]["window_clusters"] == ["kafka_default", "kafka_other"]
        assert names_with_label(other_admin, label) == []
