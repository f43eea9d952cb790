"""Detached JVMs with a PID file, recognised by a marker on their command line (S3Proxy, Spark daemons).

Like the local broker: a process counts as ours only while it is alive and its command line holds the
marker (a config file or data-dir path of this instance), so a stale PID file never makes us signal a
stranger.
"""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.process_control import _command_line, is_alive, read_pid, terminate_if, write_pid


def is_ours(pid: int, marker: str) -> bool:
    command = _command_line(pid)
    return bool(command) and is_alive(pid) and any(marker in part for part in command)


def running_pid(pid_file: Path, marker: str) -> int | None:
    """The live PID behind ``pid_file`` whose command line holds ``marker``; a stale file is removed."""
    pid = read_pid(pid_file)
    if pid is None:
        return None
    if is_ours(pid, marker):
        return pid
    if is_alive(pid) and not _command_line(pid):
        return pid  # between fork and exec (spark-class execs java): no command line to check yet
    pid_file.unlink(missing_ok=True)
    return None


def launch(
    command: list[str], *, cwd: Path, console_log: Path, pid_file: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``command`` in its own session with its output appended to ``console_log``."""
    console_log.parent.mkdir(parents=True, exist_ok=True)
    with console_log.open("ab") as console:
        console.write(f"\n=== started {datetime.now(UTC).isoformat()} ===\n".encode())
        console.flush()
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env={**os.environ, **(env or {})},
                start_new_session=True,
                close_fds=True,
            )
        except OSError as err:
            raise LocalKafkaError(f"could not start {command[0]}: {err}") from err
    write_pid(pid_file, process.pid)
    return process


def terminate(pid: int, marker: str, timeout_s: float) -> bool:
    """SIGTERM, then SIGKILL after ``timeout_s``; True when it had to kill. Only if the PID is ours."""
    return terminate_if(pid, lambda candidate: is_ours(candidate, marker), timeout_s)


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        content = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no output in {path})"
    return "\n".join(content[-lines:])
