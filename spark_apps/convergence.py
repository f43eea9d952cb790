"""Spark app: how fast each troubleshooting window's subscription reached the clients it matches.

    spark-submit --py-files kip714_common.zip spark_apps/convergence.py \\
        --input <landing root> --output <analytics root> \\
        --start 2026-01-31T13:00:00Z --end 2026-01-31T13:30:00Z --windows windows.json

``windows.json`` lists ``{"name", "subscribed_at", "metrics": [prefixes], "match": {selector: regex}}``
(the troubleshooting DAG knows all four when it creates the subscription). Writes
``<output>/convergence/`` (``CONVERGENCE_SCHEMA``): one row per window and matched client instance with
``first_push_time`` and ``delay_seconds``, and per window the 50/90/100 % delays. Prints ``KIP714_SUMMARY``
and one ``KIP714_CONVERGENCE`` line per window. Rules in ``kip714_common.convergence``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import timedelta
from functools import reduce

from kip714_common.cli import (
    CommonArgs,
    Interval,
    base_parser,
    parse_common,
    parse_duration_seconds,
    run_main,
)
from kip714_common.convergence import WindowSpec, load_windows, window_rows, with_shares
from kip714_common.errors import SparkAppInputError
from kip714_common.landing import read_run_datapoints
from kip714_common.outputs import RunSummary, summarise_written, write_table
from kip714_common.rollup import date_hour_columns
from kip714_common.schemas import CONVERGENCE_SCHEMA, conform
from kip714_common.session import app_session
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def build_parser():  # type: ignore[no-untyped-def]
    parser = base_parser("KIP-714 subscription convergence per window and client.")
    parser.add_argument("--windows", default=None, help="JSON file: [{name, subscribed_at, metrics, match}]")
    parser.add_argument(
        "--seen-lookback",
        default="10m",
        help="clients seen this long before a window's creation count as matched (default 10m)",
    )
    return parser


APP_NAME = "kip714-convergence"


def convergence_frame(client_points: DataFrame, windows: list[WindowSpec], interval: Interval) -> DataFrame:
    """``CONVERGENCE_SCHEMA`` rows for every window (partitioned by the interval's first hour or later)."""
    rows = with_shares(reduce(DataFrame.unionByName, [window_rows(client_points, w) for w in windows]))
    hour_of = F.date_trunc(
        "hour", F.greatest(F.col("subscribed_at"), F.lit(interval.start).cast("timestamp"))
    )
    date, hour = date_hour_columns(hour_of)
    columns = {"date": date, "hour": hour}
    return conform(rows, CONVERGENCE_SCHEMA, columns)


def check_args(argv: Sequence[str] | None) -> tuple[CommonArgs, list[WindowSpec], timedelta]:
    """Validate the flags and the windows file before Spark starts."""
    namespace, common = parse_common(build_parser(), argv)
    if not namespace.windows:
        raise SparkAppInputError("--windows", "is required: a JSON file listing the windows to follow")
    windows = load_windows(namespace.windows)
    lookback = timedelta(seconds=parse_duration_seconds("--seen-lookback", namespace.seen_lookback))
    return common, windows, lookback


def run(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> RunSummary:
    """Parse ``argv``, compute each window's convergence, write it; returns (and prints) the summary."""
    common, windows, lookback = check_args(argv)
    spark = app_session(spark, APP_NAME)
    interval = common.interval
    read_start = min([interval.start, *(w.subscribed_at - lookback for w in windows)])
    points = read_run_datapoints(spark, common, start=read_start)
    clients = points.frame.where((F.col("record_type") == "client") & F.col("client_instance_id").isNotNull())
    frame = convergence_frame(clients, windows, interval).persist()
    write_table(frame, common.output, "convergence", interval)
    per_window = (
        frame.groupBy("subscription_name")
        .agg(*[F.first(c).alias(c) for c in CONVERGENCE_SCHEMA.fieldNames()[-7:-2]])
        .orderBy("subscription_name")
        .collect()
    )
    frame.unpersist()
    summary = RunSummary(APP_NAME, interval, notes={"windows": [w.name for w in windows]})
    summary.tables["convergence"] = summarise_written(spark, common.output, "convergence", interval)
    summary.print()
    for row in per_window:
        print(
            f"KIP714_CONVERGENCE {row['subscription_name']} matched={row['matched_clients']} "
            f"converged={row['converged_clients']} p50={row['p50_seconds']} p90={row['p90_seconds']} "
            f"p100={row['p100_seconds']}",
            flush=True,
        )
    return summary


if __name__ == "__main__":
    sys.exit(run_main(run, sys.argv[1:]))
