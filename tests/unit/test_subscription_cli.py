"""The ``kip714 subscriptions`` CLI refuses bad input with one line and no traceback (no server needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
KIP714 = [sys.executable, "-m", "airflow_provider_kip714.cli.main"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KIP714, "subscriptions", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["add", "--name", "x", "--interval", "50"], "interval.ms: must be between 100 and 3600000"),
        (["add", "--name", "x", "--match", "client_idd=x"], "match: unknown selector"),
        (["add", "--window", "soon", "--block"], "--window: must be a duration"),
        (
            ["add", "--name", "x", "--metrics", "a.", "--block"],
            "block: a blocking subscription has no metrics",
        ),
    ],
)
def test_cli_bad_spec_fails_with_one_line_before_connecting(args: list[str], expected: str) -> None:
    result = run_cli(*args, "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode != 0
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_unreachable_cluster_fails_with_one_line(tmp_path: Path) -> None:
    properties = tmp_path / "fast.properties"
    properties.write_text("socket.connection.setup.timeout.ms=1000\n")
    result = run_cli("list", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(properties))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kip714: error: cannot reach Kafka at 127.0.0.1:1 (PLAINTEXT) within 1000 ms")


def test_cli_refuses_security_settings_kafka_python_cannot_honour(tmp_path: Path) -> None:
    properties = tmp_path / "java.properties"
    properties.write_text("security.protocol=SSL\nssl.truststore.location=/etc/truststore.jks\n")
    result = run_cli("list", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(properties))
    assert result.returncode == 2
    assert "connection extra 'ssl.truststore.location': is not supported" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
