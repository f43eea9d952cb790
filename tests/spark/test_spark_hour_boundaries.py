"""Consecutive hourly runs lose no point at the hour boundary; late and nameless points are counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import rollups
from pyspark.sql import functions as F

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
