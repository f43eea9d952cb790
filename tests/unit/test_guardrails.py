"""The window guardrail on hand-made capabilities: prefix rules, library selectors, payload estimate."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
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


def _write_capabilities(
    area_root: Path, rows: list[tuple[str, str, float, datetime]], hour: datetime | None = None
) -> None:
    """One capabilities Parquet file the way the Spark app lays it out (table under analytics/), in the
    partition of ``hour`` (10:00 on 2026-03-01 by default)."""
    hour = hour or datetime(2026, 3, 1, 10, tzinfo=UTC)
    folder = area_root / "analytics" / "capabilities" / f"date={hour:%Y-%m-%d}" / f"hour={hour.hour}"
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


def test_capabilities_are_read_from_the_tables_newest_week_and_the_newest_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live and hourly tables gain a partition an hour and auto-windows add runs: read whole, each check
    read every hour the deployment ever had (1.7-1.9 s of CPU for a month and 300 runs, docs/live.md)."""
    from airflow_provider_kip714.analytics.tables import CAPABILITY_HOURS, capabilities_of
    from airflow_provider_kip714.storage.data_root import RunArea
    from airflow_provider_kip714.troubleshooting.guardrails import CAPABILITY_RUNS, visible_areas

    monkeypatch.setenv("KIP714_DATA_DIR", str(tmp_path))
    newest = datetime(2026, 3, 8, 1, tzinfo=UTC)  # a week back crosses midnight and several dates
    for back in (0, 1, 2, CAPABILITY_HOURS - 1, CAPABILITY_HOURS, CAPABILITY_HOURS + 30):
        hour = newest - timedelta(hours=back)
        _write_capabilities(tmp_path, [("librdkafka", f"m.{back}", 1.0, hour)], hour)
    held = set(capabilities_of(RunArea(tmp_path))["metric_name"])
    assert held == {"m.0", "m.1", "m.2", f"m.{CAPABILITY_HOURS - 1}"}
    # folders no Spark write makes neither fail the read nor set its bound
    for bogus in ("date=2026-13-40/hour=5", "date=2026-03-09/hour=99"):
        folder = tmp_path / "analytics" / "capabilities" / bogus
        folder.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([{"metric_name": f"bogus {bogus}"}]), folder / "part.parquet")
    assert set(capabilities_of(RunArea(tmp_path))["metric_name"]) == held
    # a table with no hour partition is read whole: nothing to bound by
    flat = tmp_path / "flat" / "analytics" / "capabilities"
    flat.mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist([{"metric_name": "m.flat", "last_seen": newest}]), flat / "part.parquet"
    )
    assert list(capabilities_of(RunArea(tmp_path / "flat"))["metric_name"]) == ["m.flat"]

    for run in range(CAPABILITY_RUNS + 5):
        folder = tmp_path / "troubleshoot" / f"run-{run:03d}"
        folder.mkdir(parents=True)
        os.utime(folder, (1_770_000_000 + run, 1_770_000_000 + run))  # local runs are ordered by time
    areas = visible_areas()
    assert len(areas) == 2 + CAPABILITY_RUNS
    assert areas[2].root.name == f"run-{CAPABILITY_RUNS + 4:03d}"  # the newest runs first
