"""How the demo runs the ``kip714`` and ``airflow`` commands, and what of their output it shows."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from airflow_provider_kip714.exceptions import Kip714Error


def run_cli(*args: str) -> tuple[dict[str, Any], list[str]]:
    """The command's JSON result and its ``warning:`` lines (the guardrail's advice when a window opens)."""
    command = [kip714_path(), *args, "--json"]
    print("  $ " + " ".join(command[1:]), flush=True)
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise Kip714Error(f"{' '.join(command[1:3])} failed: {completed.stderr.strip()}")
    warnings = [line for line in completed.stderr.splitlines() if line.startswith("warning:")]
    for line in warnings:
        print(f"  {line}", flush=True)
    return json.loads(completed.stdout), warnings


def kip714_path() -> str:
    return str(Path(sys.executable).parent / "kip714")


SHOWN_CHARS = 400
"""A task log line or command echoed by the demo is cut here (a window's conf names 20+ metrics)."""


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]} ... ({len(text)} characters)"


def run_airflow(env: dict[str, str], *args: str, title: str) -> None:
    command = [str(Path(sys.executable).parent / "airflow"), *args]
    print(_cut("  $ airflow " + " ".join(args)), flush=True)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    tail: list[str] = []
    for line in process.stdout:
        tail = [*tail[-40:], line.rstrip()]
        shown = task_log_line(line)
        if shown:
            print(_cut(f"  | {shown}"), flush=True)
    if process.wait() != 0:
        print("\n".join(f"  ! {line}" for line in tail), flush=True)
        raise Kip714Error(f"{title} failed (exit {process.returncode}); its last log lines are above")


_STRUCTLOG = re.compile(
    r"^\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)\.\d+Z \[(\w+)\s*\] (.*?)(?: \[([\w.]+)\])?(?: loc=.*)?$"
)
_OUR_LOGGERS = ("airflow_provider_kip714", "kip714", "airflow.task.operators")
_SPARK_LINES = ("KIP714_SUMMARY", "kip714:", "Spark Connect (")
_SPARK_LOGGERS = ("SparkSubmitHook", "Kip714SparkConnectOperator")


def task_log_line(line: str) -> str | None:
    """The part of ``airflow dags test`` output a demo viewer wants: task starts/ends and our own logs."""
    match = _STRUCTLOG.match(line.rstrip())
    if not match:
        return None
    clock, level, message, logger = match.groups()
    logger = logger or ""
    if message.startswith("[DAG TEST] starting task_id="):
        return f"{clock} > {message.split('=')[1].split()[0]}"
    if message.startswith("[DAG TEST] end task task_id="):
        return f"{clock}   {message.split('=')[1].split()[0]} done"
    if "spark_submit" in logger or logger.endswith(_SPARK_LOGGERS):  # the apps' own output: summaries only
        return f"{clock}   {message}" if any(key in message for key in _SPARK_LINES) else None
    if level in ("error", "critical") or logger.startswith(_OUR_LOGGERS) or logger == "task.stdout":
        return f"{clock}   {message}"
    return None


class Steps:
    """Numbered progress lines, with the time each step took."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.number = 0
        self.started = time.monotonic()

    @contextmanager
    def step(self, title: str) -> Iterator[None]:
        self.number += 1
        print(f"\n[{self.number}/{self.total}] {title} ...", flush=True)
        began = time.monotonic()
        yield
        print(
            f"[{self.number}/{self.total}] done in {time.monotonic() - began:.1f} s "
            f"(demo at {time.monotonic() - self.started:.0f} s)",
            flush=True,
        )
