"""The client rollup rows an app judges: from the rollups table, or rolled up from the landing zone.

A troubleshooting window rolls up only the window, while its landing zone also holds the minutes
before it; so history the rollups table lacks (the buckets before its first row) is rolled up from
the landing zone, when that has any.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kip714_common.cli import CommonArgs, Interval
from kip714_common.errors import SparkAppInputError
from kip714_common.landing import DATAPOINTS_DIR, hour_partition_filter, path_exists, read_run_datapoints
from kip714_common.outputs import table_path
from kip714_common.rollup import rollup_points
from kip714_common.schemas import ROLLUP_SCHEMA
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def rollups_from_landing(spark: SparkSession, common: CommonArgs, window: Interval) -> DataFrame:
    """Client rollup rows of ``window`` computed from the landing zone (the rollups app's own pass).

    The run's ``common`` flags (input, counter lookback, aliases, selection) say how to read it."""
    read_start = window.start - common.counter_lookback
    points = read_run_datapoints(spark, common, start=read_start, end=window.end)
    return rollup_points(points, window, read_start).where(F.col("record_type") == "client")


def history_table_rows(spark: SparkSession, analytics_root: str, history: Interval) -> DataFrame | None:
    """Client rollup rows of ``history`` from ``analytics_root``'s rollups table alone; None without one.

    Live mode learns each series' own baseline from the hourly DAG's table: rolling the history up from
    the landing zone would read the whole hour again every minute."""
    path = table_path(analytics_root, "rollups")
    if history.end <= history.start or not path_exists(spark, path):
        return None
    return _client_rows(spark, path, history)


def _client_rows(spark: SparkSession, path: str, window: Interval) -> DataFrame:
    """The client rows of a rollups table whose bucket starts in ``window`` (hour folders pruned)."""
    return (
        spark.read.schema(ROLLUP_SCHEMA)
        .parquet(path)
        .where(hour_partition_filter(window.start, window.end))
        .where((F.col("bucket_start") >= F.lit(window.start)) & (F.col("bucket_start") < F.lit(window.end)))
        .where(F.col("record_type") == "client")
    )


def load_rollups(spark: SparkSession, common: CommonArgs, source: str, window: Interval) -> DataFrame:
    """Client rollup rows of ``window``, from ``--output``'s rollups table or computed from the landing
    zone (``source`` ``"landing"``)."""
    if source == "landing":
        return rollups_from_landing(spark, common, window)
    path = table_path(common.output, "rollups")
    if not path_exists(spark, path):
        raise SparkAppInputError(
            "--output",
            "holds no rollups/ yet: run rollups.py first or pass --rollups-source landing",
            path,
        )
    return _client_rows(spark, path, window)


def load_history(spark: SparkSession, common: CommonArgs, source: str, history: Interval) -> DataFrame | None:
    """Client rollup rows of ``history`` (the buckets before the judged window), or None if there are none.

    From the rollups table when it has them; the buckets before the table's first row in ``history`` are
    rolled up from the landing zone, when it has any.
    """
    if history.end <= history.start:
        return None
    if source == "landing":
        return rollups_from_landing(spark, common, history)
    table = load_rollups(spark, common, source, history)
    first_epoch = table.agg(F.min(F.unix_seconds("bucket_start")).alias("first")).collect()[0]["first"]
    covered_from = history.end if first_epoch is None else datetime.fromtimestamp(first_epoch, UTC)
    if covered_from <= history.start or not path_exists(spark, f"{common.input}/{DATAPOINTS_DIR}"):
        return table
    older = Interval(history.start, covered_from, history.bucket_seconds)
    return table.unionByName(rollups_from_landing(spark, common, older))
