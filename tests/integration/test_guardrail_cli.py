"""The guardrail when a window opens from the CLI: a warning per library that lacks the metrics."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from object_storage import LocalS3

from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs

REPO_ROOT = Path(__file__).resolve().parents[2]
SEEN = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def _capabilities_table() -> pa.Table:
    rows = [
        {
            "client_software_name": "confluent-kafka-python",
            "client_software_version": "2.16.1-rdkafka-2.16.0",
            "metric_name": f"org.apache.kafka.producer.{name}",
            "metric_type": "gauge",
            "instances": 2,
            "points_per_push": 1.0,
            "first_seen": SEEN,
            "last_seen": SEEN,
        }
        for name in ("record.queue.time.max", "request.latency.avg")
    ]
    return pa.Table.from_pylist(rows)


CAPABILITIES_FILE = "analytics/capabilities/date=2026-03-01/hour=10/part-00000.parquet"
TROUBLESHOOT_CAPABILITIES_FILE = f"troubleshoot/manual__2026-03-01T10-00-00/{CAPABILITIES_FILE}"


def _data_root(kind: str, tmp_path: Path, local_s3: LocalS3) -> str:
    """A data root holding the capabilities table: a local folder, or a prefix on the real S3 server.

    ``troubleshoot``: a folder where only a troubleshooting run wrote the table (no scheduled analytics).
    """
    buffer = io.BytesIO()
    pq.write_table(_capabilities_table(), buffer)
    if kind in ("folder", "troubleshoot"):
        written = tmp_path / (CAPABILITIES_FILE if kind == "folder" else TROUBLESHOOT_CAPABILITIES_FILE)
        written.parent.mkdir(parents=True)
        written.write_bytes(buffer.getvalue())
        return str(tmp_path)
    prefix = f"guard-{uuid.uuid4().hex[:8]}"
    local_s3.client().put_object(
        Bucket=local_s3.state.bucket, Key=f"{prefix}/{CAPABILITIES_FILE}", Body=buffer.getvalue()
    )
    return local_s3.url(prefix)


# s3: reading the table through ObjectStoragePath set up Airflow's logging, which wrote the guardrail's
# WARNING to stdout ahead of the JSON ("Extra data: line 1 column 5" in the cluster demo)
@pytest.mark.parametrize("kind", ["folder", "s3", "troubleshoot"])
def test_cli_add_warns_when_no_known_library_pushes_the_prefix(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, local_s3: LocalS3, kind: str
):
    data_root = _data_root(kind, tmp_path, local_s3)
    label = f"guard{uuid.uuid4().hex[:6]}"
    added = subprocess.run(
        [
            *(sys.executable, "-m", "airflow_provider_kip714.cli.main", "subscriptions", "add"),
            *("--bootstrap-server", kafka_cluster.bootstrap_servers, "--window", "10m", "--label", label),
            *("--metrics", "org.apache.kafka.consumer.", "--match", f"client_id=nobody-{label}", "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "KIP714_DATA_DIR": data_root},
    )
    assert added.returncode == 0, added.stderr
    name = json.loads(added.stdout)["name"]  # stdout stays the JSON result
    with ClientMetricsAdmin(to_kafka_python_kwargs(kafka_cluster.client_config())) as admin:
        admin.delete(name)
    assert (
        "warning: confluent-kafka-python 2.16.1-rdkafka-2.16.0 pushes none of org.apache.kafka.consumer."
        in added.stderr
    )
