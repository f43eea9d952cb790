"""Malformed records go to quarantine with their reason while the rest of the topic lands."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from google.protobuf import json_format
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from telemetry_helpers import (
    T0_NS,
    client_headers,
    create_topic,
    every_kind_payload,
    produce_records,
    read_dir,
)

from airflow_provider_kip714.telemetry.landing import land_topic

pytestmark = pytest.mark.integration


def sums_payload() -> bytes:
    def total(name: str, temporality: int, value: int) -> m.Metric:
        return m.Metric(
            name=name,
            sum=m.Sum(
                aggregation_temporality=temporality,
                is_monotonic=True,
                data_points=[
                    m.NumberDataPoint(start_time_unix_nano=T0_NS - 10**9, time_unix_nano=T0_NS, as_int=value)
                ],
            ),
        )

    return m.MetricsData(
        resource_metrics=[
            m.ResourceMetrics(
                scope_metrics=[
                    m.ScopeMetrics(
                        metrics=[
                            total("requests.delta", m.AGGREGATION_TEMPORALITY_DELTA, 5),
                            total("requests.cumulative", m.AGGREGATION_TEMPORALITY_CUMULATIVE, 125),
                        ]
                    )
                ]
            )
        ]
    ).SerializeToString()


NOT_OTLP = random.Random(714).randbytes(300)
"""Random bytes, seeded: ``os.urandom`` began like JSON (``{`` or ``[``) about once in 130 runs, which
``value_format="auto"`` then reads as OTLP/JSON and quarantines as invalid JSON instead."""
assert NOT_OTLP.lstrip()[:1] not in (b"{", b"[")


def test_each_malformed_kind_is_quarantined_with_its_reason(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=1, prefix="malformed")
    good = every_kind_payload()
    logs = logs_pb2.LogsData(
        resource_logs=[
            logs_pb2.ResourceLogs(scope_logs=[logs_pb2.ScopeLogs(log_records=[logs_pb2.LogRecord()])])
        ]
    ).SerializeToString()
    json_value = json_format.MessageToJson(
        m.MetricsData.FromString(good), use_integers_for_enums=True
    ).encode()
    headers = client_headers()
    records = [
        (0, good, headers),  # 0
        (0, NOT_OTLP, headers),  # 1 random bytes
        (0, good[: len(good) // 2], headers),  # 2 truncated protobuf
        (0, logs, headers),  # 3 valid protobuf of another message type
        (0, b'{"resourceMetrics": [', headers),  # 4 invalid JSON
        (0, b"", headers),  # 5 empty value
        (0, good, None),  # 6 missing headers
        (0, json_value, headers),  # 7 OTLP/JSON
        (0, sums_payload(), headers),  # 8 delta and cumulative sums
    ]
    produce_records(config, topic, records)

    result = land_topic(config, topic, tmp_path / "zone", value_format="auto", fsync=False)
    assert (result.records, result.quarantined) == (9, 6)

    quarantine = read_dir(tmp_path / "zone" / "quarantine").to_pylist()
    reasons = {row["offset"]: row["reason"] for row in quarantine}
    assert sorted(reasons) == [1, 2, 3, 4, 5, 6]
    assert reasons[1].startswith("not OTLP protobuf")
    assert reasons[2].startswith("not OTLP protobuf")
    assert reasons[3].startswith("not an OTLP MetricsData")
    assert reasons[4].startswith("invalid JSON")
    assert reasons[5].startswith("empty value")
    assert reasons[6].startswith("missing headers")
    assert {row["offset"]: row["value"] for row in quarantine}[2] == good[: len(good) // 2]

    datapoints = read_dir(tmp_path / "zone" / "datapoints").to_pylist()
    assert sorted({row["offset"] for row in datapoints}) == [0, 7, 8]
    assert sum(1 for row in datapoints if row["offset"] == 0) == 5
    from_proto = sorted((r["metric_name"], r["value"], r["count"]) for r in datapoints if r["offset"] == 0)
    from_json = sorted((r["metric_name"], r["value"], r["count"]) for r in datapoints if r["offset"] == 7)
    assert from_proto == from_json
    sums = {row["metric_name"]: row for row in datapoints if row["offset"] == 8}
    assert (sums["requests.delta"]["temporality"], sums["requests.delta"]["value_int"]) == ("delta", 5)
    assert (sums["requests.cumulative"]["temporality"], sums["requests.cumulative"]["value_int"]) == (
        "cumulative",
        125,
    )
    assert all(row["is_monotonic"] for row in sums.values())
    assert read_dir(tmp_path / "zone" / "raw").num_rows == 9
