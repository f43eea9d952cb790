"""Real KIP-714 pushes (librdkafka producer/consumer, the Java client) land through the broker plugin."""

from __future__ import annotations

import math
import time
import uuid
from pathlib import Path

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData
from plugin_topic import subscription
from telemetry_helpers import JAVA_CLIENT_JAR, read_dir, run_java_client, run_librdkafka_clients

from airflow_provider_kip714.decoding.decoder import count_points
from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook
from airflow_provider_kip714.telemetry.landing import land_topic

pytestmark = pytest.mark.integration


def _comparable(value: float | None) -> float | str | None:
    return "NaN" if value is not None and math.isnan(value) else value


def _expected_values(value: bytes) -> list[tuple[str, float | str | None]]:
    """(metric, value) per point, straight from opentelemetry-proto, to compare with the landed rows."""
    out = []
    for resource_metrics in MetricsData.FromString(value).resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                for point in getattr(metric, kind).data_points:
                    if kind in ("gauge", "sum"):
                        which = point.WhichOneof("value")
                        out.append(
                            (metric.name, _comparable(float(getattr(point, which)) if which else None))
                        )
                    else:
                        out.append((metric.name, None))
    return sorted(out, key=repr)


def _wait_for_clients(hook: TelemetryTopicHook, client_ids: set[str], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    seen: set[str] = set()
    while time.monotonic() < deadline and not client_ids <= seen:
        for item in hook.iter_records("earliest", decode=False, timeout_s=20):
            client_id = dict(item.record.headers or []).get("kip714.client_id")
            if client_id is not None:
                seen.add(client_id.decode())
        time.sleep(1)
    assert client_ids <= seen, f"no telemetry from {client_ids - seen} within {limit_s}s (saw {seen})"


def test_real_client_pushes_land_with_every_point(kafka_cluster: LocalKafkaCluster, tmp_path: Path) -> None:
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    config = kafka_cluster.client_config()
    prefix = f"land-{uuid.uuid4().hex[:8]}"
    with subscription(kafka_cluster.bootstrap_servers, f"kip714-test-{prefix}", f"client_id={prefix}-.*"):
        client_ids = set(run_librdkafka_clients(config, prefix, seconds=6).values())
        if JAVA_CLIENT_JAR.exists():
            java_lines = run_java_client(kafka_cluster.bootstrap_servers, f"{prefix}-java", seconds=8)
            client_ids |= {line["client_id"] for line in java_lines}
        hook = TelemetryTopicHook(config=config, topic=kafka_cluster.telemetry_topic)
        _wait_for_clients(hook, client_ids, limit_s=60)

    out = tmp_path / "zone"
    result = land_topic(config, kafka_cluster.telemetry_topic, out, fsync=False)
    assert result.records > 0 and result.quarantined == 0
    raw = read_dir(out / "raw").to_pylist()
    datapoints = read_dir(out / "datapoints")
    ours = [
        row
        for row in raw
        if (row["headers"] and dict(row["headers"]).get("kip714.client_id", "").startswith(prefix))
    ]
    assert {dict(row["headers"])["kip714.client_id"] for row in ours} >= client_ids
    rows = [row for row in datapoints.to_pylist() if (row["client_id"] or "").startswith(prefix)]
    assert len(rows) == sum(count_points(row["value"]) for row in ours)
    by_offset: dict[tuple[int, int], list[tuple[str, float | str | None]]] = {}
    for row in rows:
        value = row["value"] if row["metric_type"] in ("gauge", "sum") else None
        by_offset.setdefault((row["partition"], row["offset"]), []).append(
            (row["metric_name"], _comparable(value))
        )
    for record in ours:
        landed = sorted(by_offset.get((record["partition"], record["offset"]), []), key=repr)
        assert landed == _expected_values(record["value"])
    software = {(row["client_id"], row["client_software_name"]) for row in rows}
    assert (f"{prefix}-producer", "confluent-kafka-python") in software
    metric_names = {row["metric_name"] for row in rows}
    assert any(name.startswith("org.apache.kafka.producer.") for name in metric_names)
    assert any(name.startswith("org.apache.kafka.consumer.") for name in metric_names)
    sums = [row for row in rows if row["metric_type"] == "sum"]
    assert sums and {row["temporality"] for row in sums} == {"delta"}  # Apache Kafka asks for delta
    if JAVA_CLIENT_JAR.exists():
        java_rows = [row for row in rows if row["client_id"].startswith(f"{prefix}-java")]
        assert java_rows and {row["client_software_name"] for row in java_rows} == {"apache-kafka-java"}
