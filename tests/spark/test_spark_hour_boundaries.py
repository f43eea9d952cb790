"""Consecutive hourly runs lose no point at the hour boundary; late and nameless points are counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import anomalies
import pandas as pd
import pytest
import rollups
from pyspark.sql import functions as F

from airflow_provider_kip714.analytics.tables import read_table
from airflow_provider_kip714.storage.data_root import RunArea
from tests.support.synthetic_landing import LandingWriter, client_labels, make_client, rows_table

pytestmark = pytest.mark.spark

MIDNIGHT = datetime(2026, 2, 1, tzinfo=UTC)
METRIC = "org.apache.kafka.producer.record.queue.time.max"


def _ns(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000) * 1000


def _point(moment: datetime, stamped: datetime, metric: str | None = METRIC) -> dict[str, object]:
    """A gauge point taken at ``moment`` whose record the broker stamped at ``stamped`` (its folder)."""
    return {
        **client_labels(make_client(1)),
        "metric_name": metric,
        "metric_type": "gauge",
        "value": 1.0,
        "time": _ns(moment),
        "record_timestamp": int(stamped.timestamp() * 1000),
        "date": stamped.strftime("%Y-%m-%d"),
        "hour": stamped.hour,
    }


def _hour(landing: Path, output: Path, start: datetime, spark) -> rollups.RunSummary:  # type: ignore[no-untyped-def]
    argv = ["--input", str(landing), "--output", str(output), "--start", start.isoformat()]
    return rollups.run([*argv, "--end", (start + timedelta(hours=1)).isoformat(), "--bucket", "1m"], spark)


def test_consecutive_hours_keep_the_boundary_point_once_and_count_late_and_nameless(
    tmp_path: Path, spark
) -> None:  # type: ignore[no-untyped-def]
    landing, output = tmp_path / "landing", tmp_path / "out"
    writer = LandingWriter(landing)
    regular = [MIDNIGHT + timedelta(seconds=s) for s in range(-600, 600, 10)]  # 23:50 .. 00:09:50
    boundary = MIDNIGHT - timedelta(milliseconds=10)  # 23:59:59.990, stamped 00:00:00.020
    writer.write(rows_table([_point(m, m) for m in regular]))
    writer.write(rows_table([_point(boundary, MIDNIGHT + timedelta(milliseconds=20))]))
    writer.write(rows_table([_point(MIDNIGHT + timedelta(minutes=5), MIDNIGHT + timedelta(minutes=5), None)]))

    before = _hour(landing, output, MIDNIGHT - timedelta(hours=1), spark)
    # landed after the 23:00 run: a point of 23:30 whose push the broker stamped at 00:45
    writer.write(rows_table([_point(MIDNIGHT - timedelta(minutes=30), MIDNIGHT + timedelta(minutes=45))]))
    after = _hour(landing, output, MIDNIGHT, spark)

    rolled = spark.read.parquet(str(output / "rollups"))
    counts = {row["bucket_start"].replace(tzinfo=UTC): row["count"] for row in rolled.collect()}
    assert sum(counts.values()) == len(regular) + 1  # every point once, the boundary one included
    assert counts[MIDNIGHT - timedelta(minutes=1)] == 7  # 23:59:00..50 and 23:59:59.990
    assert counts[MIDNIGHT] == 6
    assert rolled.where(F.col("metric_name").isNull()).count() == 0
    assert before.notes == {"late_points": 0, "null_metric_name_points": 0}
    assert after.notes == {"late_points": 1, "null_metric_name_points": 1}


RULES = str(Path(anomalies.__file__).parent / "rules" / "default_rules.json")


def _write_breach(landing: Path, breach: tuple[datetime, datetime]) -> None:
    """23:30 to 00:30, a queue time every 10 s: 9000 ms during ``breach``, 10 ms otherwise."""
    moments = [MIDNIGHT + timedelta(seconds=s) for s in range(-1800, 1800, 10)]
    high = [breach[0] <= moment < breach[1] for moment in moments]
    points = [{**_point(m, m), "value": 9000.0 if up else 10.0} for m, up in zip(moments, high, strict=True)]
    LandingWriter(landing).write(rows_table(points))


def _hourly_anomalies(landing: Path, output: Path, start: datetime, spark) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    """The hourly pipeline for one hour: rollups, then anomalies judged on the rollups table."""
    _hour(landing, output, start, spark)
    interval = ["--start", start.isoformat(), "--end", (start + timedelta(hours=1)).isoformat()]
    anomalies.run(
        ["--input", str(landing), "--output", str(output), *interval, "--bucket", "1m", "--rules", RULES],
        spark,
    )
    found = spark.read.parquet(str(output / "anomalies")).where(
        F.col("rule_name") == "producer-record-queue-time"
    )
    return [row.asDict() for row in found.collect()]


def test_a_breach_straddling_the_hour_is_found_by_the_run_in_which_it_lasts_long_enough(
    tmp_path: Path, spark
) -> None:  # type: ignore[no-untyped-def]
    """KIP-714's own example (queue time above 5000 ms for more than 180 s) from 23:58 to 00:02: two
    minutes in each hour, so neither hourly run alone holds 180 s of it. The 00:00 run judges it with
    the buckets before its start that can belong to it, and files it under its own hour."""
    landing, output = tmp_path / "landing", tmp_path / "out"
    breach = (MIDNIGHT - timedelta(minutes=2), MIDNIGHT + timedelta(minutes=2))
    _write_breach(landing, breach)

    assert _hourly_anomalies(landing, output, MIDNIGHT - timedelta(hours=1), spark) == []
    found = _hourly_anomalies(landing, output, MIDNIGHT, spark)
    assert len(found) == 1, found
    anomaly = found[0]
    assert anomaly["breach_start"].replace(tzinfo=UTC) == breach[0]
    assert anomaly["breach_end"].replace(tzinfo=UTC) == breach[1]
    assert (anomaly["duration_seconds"], anomaly["breached_buckets"]) == (240, 4)
    assert anomaly["hour"] == 0  # filed under the run that found it: the 23:00 partition stays as written


def test_a_breach_both_runs_report_is_read_once_with_its_whole_span(tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    """23:55 to 00:02: the 23:00 run already reports [23:55, 00:00); the 00:00 run reports it again,
    extended to 00:02. Readers (the report, the UI page, the demo) keep one row: the whole span."""
    landing, output = tmp_path / "landing", tmp_path / "analytics"
    breach = (MIDNIGHT - timedelta(minutes=5), MIDNIGHT + timedelta(minutes=2))
    _write_breach(landing, breach)

    assert len(_hourly_anomalies(landing, output, MIDNIGHT - timedelta(hours=1), spark)) == 1
    assert len(_hourly_anomalies(landing, output, MIDNIGHT, spark)) == 2  # one row per run
    read = read_table(RunArea(tmp_path), "anomalies")
    read = read[read["rule_name"] == "producer-record-queue-time"]
    assert len(read) == 1
    row = read.iloc[0]
    assert (row["breach_start"], row["breach_end"]) == (pd.Timestamp(breach[0]), pd.Timestamp(breach[1]))
    assert row["duration_seconds"] == 420
