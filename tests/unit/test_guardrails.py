"""The window guardrail on hand-made capabilities: prefix rules, library selectors, payload estimate."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_kip714.subscriptions.model import prefix_matches
from airflow_provider_kip714.troubleshooting.guardrails import (
    Capability,
    check_window,
    estimate_push_bytes,
)

JAVA = [
    Capability("apache-kafka-java", "3.9.1", f"org.apache.kafka.producer.m{i:03d}", 1.0) for i in range(100)
]
RDKAFKA = [
    Capability("librdkafka", "2.16.0", "org.apache.kafka.producer.record.queue.time.max", 1.0),
    Capability("librdkafka", "2.16.0", "org.apache.kafka.producer.node.request.latency.max", 3.0),
]


def test_prefix_rules_follow_kafka():
    assert prefix_matches("org.apache.kafka.producer.x", ["org.apache.kafka.producer."])
    assert prefix_matches("anything", ["*"]) and prefix_matches("anything", [""])
    assert not prefix_matches("org.apache.kafka.consumer.x", ["org.apache.kafka.producer."])


def test_no_matching_metric_is_reported_per_library_and_selectors_narrow_libraries():
    warnings = check_window([*JAVA, *RDKAFKA], ["org.apache.kafka.producer.record"], {})
    assert [(w.kind, w.library) for w in warnings] == [("no_matching_metric", "apache-kafka-java 3.9.1")]
    only_rdkafka = {"client_software_name": "librdkafka"}
    assert check_window([*JAVA, *RDKAFKA], ["org.apache.kafka.producer.record"], only_rdkafka) == []
    assert check_window([*JAVA, *RDKAFKA], [], {}) == []  # a blocking window asks for nothing
    assert check_window([], ["org.apache.kafka.consumer."], {}) == []  # no table: nothing to judge by


def test_payload_estimate_grows_with_points_and_warns_near_and_over_the_limit():
    assert estimate_push_bytes([RDKAFKA[1]]) > estimate_push_bytes([RDKAFKA[0]])
    java_size = estimate_push_bytes(JAVA)
    assert 8_000 < java_size < 12_000  # the Java client's full set is about 10 KB decompressed
    over = check_window(JAVA, ["*"], {}, telemetry_max_bytes=java_size - 1)
    assert [w.kind for w in over] == ["payload_too_large"]
    near = check_window(JAVA, ["*"], {}, telemetry_max_bytes=int(java_size / 0.9))
    assert [w.kind for w in near] == ["payload_near_limit"]
    assert check_window(JAVA, ["*"], {}, telemetry_max_bytes=java_size * 2) == []


def _write_capabilities(area_root: Path, rows: list[tuple[str, str, float, datetime]]) -> None:
    """One capabilities Parquet file the way the Spark app lays it out (table under analytics/)."""
    folder = area_root / "analytics" / "capabilities" / "date=2026-03-01" / "hour=10"
    folder.mkdir(parents=True)
    table = pa.Table.from_pylist(
        [
            {
                "client_software_name": name,
                "client_software_version": "2.16.0",
                "metric_name": metric,
                "metric_type": "gauge",
                "instances": 1,
                "points_per_push": points,
                "first_seen": seen,
                "last_seen": seen,
            }
            for name, metric, points, seen in rows
        ]
    )
    pq.write_table(table, folder / "part-00000.parquet")


def test_the_guardrail_reads_every_area_it_can_see_and_keeps_the_newest_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the scheduled area was read: a deployment with troubleshooting runs alone got no warning."""
    from airflow_provider_kip714.subscriptions.model import Subscription
    from airflow_provider_kip714.troubleshooting.guardrails import (
        check_subscription,
        load_capabilities_of,
        visible_areas,
    )

    monkeypatch.setenv("KIP714_DATA_DIR", str(tmp_path))
    old, new = datetime(2026, 3, 1, 9, tzinfo=UTC), datetime(2026, 3, 1, 11, tzinfo=UTC)
    metric = "org.apache.kafka.producer.record.queue.time.max"
    _write_capabilities(tmp_path / "troubleshoot" / "run-a", [("librdkafka", metric, 9.0, new)])
    _write_capabilities(tmp_path / "troubleshoot" / "run-b", [("librdkafka", metric, 1.0, old)])
    subscription = Subscription.from_spec(name="guard", metrics=["org.apache.kafka.consumer."], match=[])
    (warning,) = check_subscription(subscription)
    assert (warning.kind, warning.library) == ("no_matching_metric", "librdkafka 2.16.0")

    _write_capabilities(tmp_path, [("apache-kafka-java", "org.apache.kafka.consumer.poll.idle", 1.0, old)])
    areas = visible_areas()
    # live mode's area (the freshest), the scheduled one, then each troubleshooting run's
    assert [area.root for area in areas[:2]] == [tmp_path / "live", tmp_path] and len(areas) == 4
    by_library = {(c.software_name, c.metric_name): c.points_per_push for c in load_capabilities_of(areas)}
    assert by_library == {
        ("librdkafka", metric): 9.0,
        ("apache-kafka-java", "org.apache.kafka.consumer.poll.idle"): 1.0,
    }
