"""Spark app: roll the landing zone's data points up per time bucket, client, metric and labels.

    spark-submit --py-files kip714_common.zip spark_apps/rollups.py \
        --input <landing root> --output <analytics root> --start 2026-01-31T13:00:00Z \
        --end 2026-01-31T14:00:00Z --bucket 1m

Writes ``<output>/rollups/date=YYYY-MM-DD/hour=H/`` (``ROLLUP_SCHEMA``), replacing the interval's
partitions, and prints one ``KIP714_SUMMARY {json}`` line.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import timedelta

from kip714_common.cli import base_parser, parse_common, parse_duration_seconds
from kip714_common.landing import read_datapoints
from kip714_common.outputs import RunSummary, summarise_written, write_table
from kip714_common.rollup import rollup_points
from kip714_common.session import configure, get_session
from pyspark.sql import SparkSession

APP_NAME = "kip714-rollups"
DEFAULT_COUNTER_LOOKBACK = "10m"


def add_lookback_flag(parser) -> None:  # type: ignore[no-untyped-def]
    parser.add_argument(
        "--counter-lookback",
        default=DEFAULT_COUNTER_LOOKBACK,
        help="read this much before --start so cumulative counters have a previous point (default 10m)",
    )


def run(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> RunSummary:
    """Parse ``argv``, roll the interval up, write it; returns (and prints) the summary."""
    parser = base_parser(__doc__.splitlines()[0])
    add_lookback_flag(parser)
    namespace, common = parse_common(parser, argv)
    lookback = timedelta(seconds=parse_duration_seconds("--counter-lookback", namespace.counter_lookback))
    spark = configure(spark) if spark is not None else get_session(APP_NAME)

    interval = common.interval
    read_start = interval.start - lookback
    points = read_datapoints(spark, common.input, read_start, interval.end, common.metric_aliases)
    write_table(rollup_points(points, interval, read_start), common.output, "rollups")

    summary = RunSummary(APP_NAME, interval)
    summary.tables["rollups"] = summarise_written(spark, common.output, "rollups", interval)
    summary.print()
    return summary


if __name__ == "__main__":
    run(sys.argv[1:])
