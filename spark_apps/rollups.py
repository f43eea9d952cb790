"""Spark app: roll the landing zone's data points up per time bucket, client, metric and labels.

    spark-submit --py-files kip714_common.zip spark_apps/rollups.py \\
        --input <landing root> --output <analytics root> \\
        --start 2026-01-31T13:00:00Z --end 2026-01-31T14:00:00Z --bucket 1m

Writes ``<output>/rollups/date=YYYY-MM-DD/hour=H/`` (``ROLLUP_SCHEMA``), replacing the interval's
partitions, and prints one ``KIP714_SUMMARY {json}`` line. The summary counts what the run left out:
``null_metric_name_points`` (points without a metric name, skipped) and ``late_points`` (points filed in
the interval's hours whose time is before ``--start`` minus the lookback; see ``landing.LATE_GRACE``),
except under ``pipeline.py --no-read-back`` (a live cycle), where nothing reads them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from kip714_common.cli import common_flags_step, run_main
from kip714_common.landing import landing_counts
from kip714_common.outputs import RunSummary, reads_back, summarise_written, write_table
from kip714_common.rollup import run_rollup
from kip714_common.schemas import ROLLUP_SCHEMA
from kip714_common.session import app_session
from pyspark.sql import SparkSession

APP_NAME = "kip714-rollups"
build_parser, check_args = common_flags_step("Roll KIP-714 data points up per bucket.")


def run(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> RunSummary:
    """Parse ``argv``, roll the interval up, write it; returns (and prints) the summary."""
    common = check_args(sys.argv[1:] if argv is None else argv)
    spark = app_session(spark, APP_NAME)

    interval = common.interval
    _, rolled = run_rollup(spark, common)
    rolled = rolled.select(*ROLLUP_SCHEMA.fieldNames())  # the kept histogram buckets dropped
    write_table(rolled, common.output, "rollups", interval)

    # a pass over the interval's hours for the summary alone: a live cycle (no read-back) skips it
    notes = (
        landing_counts(spark, common.input, common.read_start, interval.start, interval.end)
        if reads_back()
        else {}
    )
    summary = RunSummary(APP_NAME, interval, notes=dict(notes))
    summary.tables["rollups"] = summarise_written(spark, common.output, "rollups", interval)
    summary.print()
    return summary


if __name__ == "__main__":
    sys.exit(run_main(run, sys.argv[1:]))
