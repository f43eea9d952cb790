"""PID-file based control of the broker JVM: is it ours and alive, and stopping it cleanly.

Only a process whose command line is ``kafka.Kafka`` with this data dir's server.properties counts
as ours; anything else behind a stale PID file is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from kip714_dev.errors import LocalKafkaError

KAFKA_MAIN_CLASS = "kafka.Kafka"


def read_pid(pid_file: Path) -> int | None:
    try:
        text = pid_file.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


def write_pid(pid_file: Path, pid: int) -> None:
    partial = pid_file.with_name(pid_file.name + ".partial")
    partial.write_text(f"{pid}\n")
    os.replace(partial, pid_file)


def _command_line(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] in {"Z", "X"}


def is_alive(pid: int) -> bool:
    """True while ``pid`` runs; reaps it when it is our child so a finished JVM is not a zombie."""
    with contextlib.suppress(ChildProcessError):
        reaped, _status = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def is_our_broker(pid: int, server_properties: Path) -> bool:
    """True when ``pid`` is a live ``kafka.Kafka`` JVM started with exactly this config file."""
    command = _command_line(pid)
    if not command or not is_alive(pid):
        return False
    return KAFKA_MAIN_CLASS in command and str(server_properties) in command


def running_broker_pid(pid_file: Path, server_properties: Path) -> int | None:
    """The PID of this data dir's running broker, or ``None`` (a stale PID file is removed)."""
    pid = read_pid(pid_file)
    if pid is None:
        return None
    if is_our_broker(pid, server_properties):
        return pid
    pid_file.unlink(missing_ok=True)
    return None


def wait_for_exit(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not is_alive(pid):
            return True
        time.sleep(0.2)
    return not is_alive(pid)


def terminate(pid: int, server_properties: Path, timeout_s: float) -> bool:
    """SIGTERM (Kafka's clean shutdown), then SIGKILL only after ``timeout_s``; True if it had to kill."""
    return terminate_if(pid, lambda candidate: is_our_broker(candidate, server_properties), timeout_s)


def terminate_if(pid: int, ours: Callable[[int], bool], timeout_s: float) -> bool:
    """SIGTERM, then SIGKILL after ``timeout_s``; True if it had to kill. ``pid`` is signalled only while
    ``ours(pid)`` holds, so a PID the kernel reused for a stranger is never touched."""
    if not ours(pid):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if wait_for_exit(pid, timeout_s):
        return False
    if not ours(pid):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if not wait_for_exit(pid, 10):
        raise LocalKafkaError(f"pid {pid} survived SIGKILL; check the machine")
    return True
