"""The ``kip714`` command line as a subprocess, from this checkout (what a user types, exit code and all)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
KIP714 = [sys.executable, "-m", "airflow_provider_kip714.cli.main"]


def run_subscriptions_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``kip714 subscriptions <args>``, its output captured as text."""
    return subprocess.run(
        [*KIP714, "subscriptions", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
