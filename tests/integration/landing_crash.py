"""SIGKILL a ``kip714 telemetry land`` run mid-way, rerun it, and check every record landed exactly once.

Shared by the local-folder and the S3 landing tests: only where the zone lives and how a landed chunk
shows there differ.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from telemetry_helpers import offsets_by_partition, points_per_offset

PARTITIONS = 3
POINTS = 4


def land_command(bootstrap: str, topic: str, out: str | Path, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "airflow_provider_kip714.cli.main", "telemetry", "land"]
    return [*command, "--bootstrap-server", bootstrap, "--topic", topic, "--out", str(out), *extra]


def landing_env() -> dict[str, str]:
    return {**os.environ, "PYTHONWARNINGS": "ignore"}


def kill_mid_landing(
    command: list[str], landed_enough: Callable[[], bool], *, deadline_s: float, poll_s: float
) -> None:
    """Start the landing and SIGKILL it once ``landed_enough()`` holds (its staging threads die with it)."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=landing_env())
    try:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline and child.poll() is None:
            if landed_enough():
                break
            time.sleep(poll_s)
        assert child.poll() is None, f"landing finished before it could be killed: {child.stderr.read()!r}"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)


def rerun_landing(command: list[str], *, timeout_s: float) -> None:
    rerun = subprocess.run(
        command, capture_output=True, text=True, env=landing_env(), timeout=timeout_s, check=False
    )
    assert rerun.returncode == 0, rerun.stderr


def assert_landed_exactly_once(raw: Any, datapoints: Any, total: int) -> None:
    """Every offset of every partition once in ``raw``, each with its ``POINTS`` datapoints."""
    per_partition = total // PARTITIONS
    assert offsets_by_partition(raw) == {p: list(range(per_partition)) for p in range(PARTITIONS)}
    counts = points_per_offset(datapoints)
    assert len(counts) == total and set(counts.values()) == {POINTS}
    assert datapoints.num_rows == total * POINTS
