"""PID-file control never touches a process that is not this data dir's broker (real processes)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kip714_dev.local_kafka.broker_config import DataDirLayout
from kip714_dev.local_kafka.launcher import (
    BrokerNotReadyError,
    broker_status,
    new_cluster_id,
    stop_broker,
)
from kip714_dev.local_kafka.process_control import (
    is_alive,
    is_our_broker,
    read_pid,
    running_broker_pid,
    write_pid,
)

from airflow_provider_kip714.cli.main import main as kip714_main


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A process that is not Kafka, whose PID ends up in a stale PID file."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_stale_pid_file_of_another_process_is_dropped_and_process_spared(
    tmp_path: Path, bystander: subprocess.Popen[bytes]
) -> None:
    layout = DataDirLayout(tmp_path)
    write_pid(layout.pid_file, bystander.pid)
    assert read_pid(layout.pid_file) == bystander.pid
    assert not is_our_broker(bystander.pid, layout.server_properties)
    outcome = stop_broker(tmp_path, timeout_s=1)
    assert not outcome.was_running
    assert bystander.poll() is None, "stop must never signal a process that is not our broker"
    assert not layout.pid_file.exists()


def test_status_of_a_stale_pid_file_is_not_running(
    tmp_path: Path, bystander: subprocess.Popen[bytes]
) -> None:
    layout = DataDirLayout(tmp_path)
    write_pid(layout.pid_file, bystander.pid)
    assert broker_status(tmp_path) is None
    assert running_broker_pid(layout.pid_file, layout.server_properties) is None


def test_a_finished_child_is_reaped_and_reported_dead() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    assert not is_alive(process.pid)


def test_garbage_pid_file_reads_as_no_pid(tmp_path: Path) -> None:
    pid_file = tmp_path / "kafka.pid"
    pid_file.write_text("not a pid\n")
    assert read_pid(pid_file) is None
    assert read_pid(tmp_path / "absent.pid") is None


def test_cluster_ids_are_kafka_uuid_text() -> None:
    ids = {new_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(cluster_id) == 22 and not cluster_id.startswith("-") for cluster_id in ids)


def _wait_for_exec(pid: int, marker: str, timeout_s: float = 10.0) -> None:
    """Popen returns before the child has exec'd; until then /proc shows the parent's command line."""
    cmdline = Path(f"/proc/{pid}/cmdline")
    deadline = time.monotonic() + timeout_s
    while marker not in cmdline.read_bytes().decode(errors="replace"):
        assert time.monotonic() < deadline, f"pid {pid} never showed {marker!r} in its command line"
        time.sleep(0.01)


def test_a_starting_broker_reports_not_ready_and_stop_terminates_exactly_it(
    tmp_path: Path, bystander: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """A stand-in whose command line names kafka.Kafka and this data dir's config counts as ours."""
    layout = DataDirLayout(tmp_path)
    look_alike = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "kafka.Kafka", str(layout.server_properties)]
    )
    try:
        _wait_for_exec(look_alike.pid, "kafka.Kafka")
        write_pid(layout.pid_file, look_alike.pid)
        assert is_our_broker(look_alike.pid, layout.server_properties)
        with pytest.raises(BrokerNotReadyError, match="not ready"):
            broker_status(tmp_path)
        assert kip714_main(["local-kafka", "status", "--data-dir", str(tmp_path)]) == 3
        assert f"pid {look_alike.pid}" in capsys.readouterr().err
        outcome = stop_broker(tmp_path, timeout_s=10)
        assert outcome.was_running and not outcome.killed and outcome.pid == look_alike.pid
        assert not is_alive(look_alike.pid)  # gone after SIGTERM alone (killed is False)
        assert bystander.poll() is None
        assert not layout.pid_file.exists()
    finally:
        look_alike.kill()
        look_alike.wait()
