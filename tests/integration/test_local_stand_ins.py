"""``kip714 local-s3`` as users run it: idempotent start, status, one-line errors, stop."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kip714_dev.local_kafka.ports import free_ports

pytestmark = pytest.mark.cluster


def kip714(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "airflow_provider_kip714.cli.main", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


def test_local_s3_start_is_idempotent_and_stop_cleans_up(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    data_dir = str(tmp_path / "s3")
    first = kip714("local-s3", "start", "--data-dir", data_dir, "--port", str(port), "--json")
    assert first.returncode == 0, first.stderr
    state = json.loads(first.stdout)
    assert state["endpoint_url"] == f"http://127.0.0.1:{port}" and state["bucket"] == "kip714"
    assert state["access_key"] and state["secret_key"]
    try:
        again = kip714("local-s3", "start", "--data-dir", data_dir, "--port", str(port), "--json")
        assert again.returncode == 0 and json.loads(again.stdout)["pid"] == state["pid"]
        other = kip714("local-s3", "start", "--data-dir", str(tmp_path / "other"), "--port", str(port))
        assert other.returncode == 2
        assert other.stderr.strip().splitlines() == [
            f"kip714: error: --port: port {port} on 127.0.0.1 is already in use; pick another port"
        ]
        assert kip714("local-s3", "status", "--data-dir", data_dir).returncode == 0
        other_bucket = kip714(
            "local-s3", "start", "--data-dir", data_dir, "--port", str(port), "--bucket", "other-bucket"
        )
        assert other_bucket.returncode == 2
        assert other_bucket.stderr.strip().splitlines() == [
            f"kip714: error: --bucket: the S3Proxy of {Path(data_dir).resolve()} already runs with bucket "
            "'kip714', not 'other-bucket'; use --bucket kip714 or stop it first"
        ]
    finally:
        stopped = kip714("local-s3", "stop", "--data-dir", data_dir)
    assert stopped.returncode == 0 and f"stopped pid {state['pid']}" in stopped.stdout
    assert kip714("local-s3", "status", "--data-dir", data_dir).returncode == 3
    assert not (tmp_path / "s3" / "s3proxy.pid").exists()
