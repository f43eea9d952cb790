"""``kip714`` prints its own lines only: Airflow's INFO announcements stay out of stderr unless ``-v``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kip714_dev.local_kafka.cluster import LocalKafkaCluster

KIP714 = str(Path(sys.executable).with_name("kip714"))


def _add(cluster: LocalKafkaCluster, home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``subscriptions add`` reaches the broker, reads the data root (guardrail), then is refused."""
    return subprocess.run(
        [KIP714, *flags, "subscriptions", "add", "--bootstrap-server", cluster.bootstrap_servers,
         "--name", "kip714-test-quiet", "--match", "client_id=["],
        capture_output=True, text=True, timeout=120, env={**os.environ, "AIRFLOW_HOME": str(home)},
    )  # fmt: skip


def test_an_error_is_one_line_without_airflow_log_lines(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    completed = _add(kafka_cluster, tmp_path)
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        line for line in completed.stderr.strip().splitlines() if line.startswith("kip714: error: match: ")
    ], completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1


def test_verbose_shows_them(kafka_cluster: LocalKafkaCluster, tmp_path: Path) -> None:
    completed = _add(kafka_cluster, tmp_path, "-v")
    assert completed.returncode == 2
    assert "Reading the config" in completed.stderr  # the path above really reads Airflow's settings
