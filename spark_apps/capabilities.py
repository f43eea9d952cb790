"""Spark app: which metrics each client library and version pushes, from the landed data.

    spark-submit --py-files kip714_common.zip spark_apps/capabilities.py \\
        --input <landing root> --output <analytics root> \\
        --start 2026-01-31T13:00:00Z --end 2026-01-31T14:00:00Z

Writes ``<output>/capabilities/`` (``CAPABILITIES_SCHEMA``): per ``client_software_name``, version and
metric name *as the client sends it* (the names a subscription's prefixes are matched against), how many
instances pushed it, its data points per push (labelled series such as per-node latencies push several)
and when it was first and last seen in the interval. A reader keeps the latest row per library and metric
across partitions. Before a window opens, the provider's guardrail reads this table to warn when the
requested prefixes match nothing the matched libraries push, and to estimate the payload against the
broker's ``telemetry.max.bytes``; the report tells "not pushed by this library" apart from "zero".
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from kip714_common.cli import common_flags_step, run_main
from kip714_common.landing import read_run_datapoints
from kip714_common.outputs import RunSummary, summarise_written, write_table
from kip714_common.rollup import date_hour_columns
from kip714_common.schemas import CAPABILITIES_SCHEMA, conform
from kip714_common.session import app_session
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

APP_NAME = "kip714-capabilities"
LIBRARY = ("client_software_name", "client_software_version")
build_parser, check_args = common_flags_step("KIP-714 capabilities: the metrics each client library pushes.")


def capabilities_frame(points: DataFrame) -> DataFrame:
    """``CAPABILITIES_SCHEMA`` rows from normalised client points (one row per library x metric)."""
    client = points.where(
        (F.col("record_type") == "client")
        & F.col("client_software_name").isNotNull()
        & F.col("source_metric_name").isNotNull()
    )
    per_push = client.groupBy(
        *LIBRARY,
        F.col("source_metric_name").alias("metric_name"),
        "client_instance_id",
        "partition",
        "offset",
    ).agg(
        F.count(F.lit(1)).alias("_points"),
        F.first("metric_type", ignorenulls=True).alias("metric_type"),
        F.min("ts").alias("_time"),
    )
    found = per_push.groupBy(*LIBRARY, "metric_name").agg(
        F.first("metric_type", ignorenulls=True).alias("metric_type"),
        F.count_distinct("client_instance_id").alias("instances"),
        F.avg("_points").alias("points_per_push"),
        F.min("_time").alias("first_seen"),
        F.max("_time").alias("last_seen"),
    )
    date, hour = date_hour_columns(F.col("last_seen"))
    columns = {"date": date, "hour": hour}
    return conform(found, CAPABILITIES_SCHEMA, columns)


def run(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> RunSummary:
    """Parse ``argv``, list each library's metrics in the interval, write them; returns the summary."""
    common = check_args(argv)
    spark = app_session(spark, APP_NAME)
    interval = common.interval
    # no counter lookback: a metric pushed only before --start is not a capability seen in the interval
    points = read_run_datapoints(spark, common, start=interval.start)
    write_table(capabilities_frame(points.frame), common.output, "capabilities", interval)
    summary = RunSummary(APP_NAME, interval)
    summary.tables["capabilities"] = summarise_written(spark, common.output, "capabilities", interval)
    summary.print()
    return summary


if __name__ == "__main__":
    sys.exit(run_main(run, sys.argv[1:]))
