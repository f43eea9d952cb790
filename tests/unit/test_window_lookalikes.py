"""Names that look like window names but would never be reaped (or at once) are refused on create."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_kip714.subscriptions.window_name import creation_problem, format_window_name

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "airflow_provider_kip714.cli.main", "subscriptions"]
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

REFUSED = [
    ("kip714-x-exp20200101T000000Z-abcd1234", "has passed"),
    ("kip714-x-exp20261399T000000Z-abcd1234", "looks like a window name"),
    ("KIP714-x-exp20260301T130000Z-abcd1234", "looks like a window name"),
    ("Kip714-x-exp20260301T130000Z-ABCD1234", "looks like a window name"),
    ("kip714-x-exp20260301T130000Z-abcd123", "looks like a window name"),
    ("kip714-x-exp20260301T130000Z", "looks like a window name"),
    ("kip714-x-exp20990101T000000Z-abcd1234", "more than the maximum window"),
    ("kip714-x-exp19990101T000000Z-abcd1234", "has passed"),
]


@pytest.mark.parametrize(("name", "why"), REFUSED)
def test_lookalike_expired_and_out_of_range_window_names_are_refused(name: str, why: str) -> None:
    problem = creation_problem(name, NOW)
    assert problem is not None and why in problem


@pytest.mark.parametrize(
    "name",
    [
        format_window_name("x", NOW + timedelta(hours=1), "abcd1234"),
        "kip714-experiments",
        "kip714-team-expert",
        "orders-exp20200101T000000Z-abcd1234",
        "plain-subscription",
    ],
)
def test_valid_windows_and_ordinary_names_are_accepted(name: str) -> None:
    assert creation_problem(name, NOW) is None


def test_an_existing_expired_window_may_still_be_updated_not_created() -> None:
    expired = format_window_name("x", NOW - timedelta(minutes=1), "abcd1234")
    assert creation_problem(expired, NOW, creating=False) is None
    assert creation_problem(expired, NOW) is not None


@pytest.mark.parametrize("name", [name for name, _ in REFUSED[:3]])
def test_cli_add_refuses_them_with_one_line_before_connecting(name: str) -> None:
    completed = subprocess.run(
        [*CLI, "add", "--bootstrap-server", "127.0.0.1:1", "--name", name, "--block"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO_ROOT)])),
        },
    )
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kip714: error: --name:"), lines


@pytest.mark.parametrize("value", ["99999999999999", "-99999999999999", "12.5", "abc"])
def test_cli_add_names_the_interval_range(value: str) -> None:
    completed = subprocess.run(
        [*CLI, "add", "--bootstrap-server", "127.0.0.1:1", "--name", "x", "--interval", value],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "between 100 and 3600000" in lines[0], lines
