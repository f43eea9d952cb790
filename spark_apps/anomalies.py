"""Spark app: thresholds (learned baselines + static rules) and sustained anomalies over the rollups.

    spark-submit --py-files kip714_common.zip spark_apps/anomalies.py \\
        --input <landing root> --output <analytics root> \\
        --start 2026-01-31T13:00:00Z --end 2026-01-31T14:00:00Z --bucket 1m \\
        --rules spark_apps/rules/default_rules.json --history 24h

Reads ``<output>/rollups/`` for ``[start - history, end)`` (run the rollups app first), or computes the
rollups from the landing zone with ``--rollups-source landing``. Then:

1. the judged rows: the window's client rollups, and those of the breach context before it (the
   longest rule duration plus the bridged gaps: a breach straddling ``--start`` counts whole), each
   tagged with its client group (``--group-by``);
2. candidates, one per judged row and rule that judges it (``candidates.py``): every static rule that
   matches the row, the series' own baseline (median + k x MAD of its history before ``--start`` only;
   history the rollups table lacks is rolled up from the landing zone) and its peers' baseline
   (distance from the median of its consumer group / client-id pattern in the same bucket);
3. anomalies: the runs of breaching buckets per series and rule that last the rule's duration
   (``breaches.py``).

Writes ``<output>/thresholds/`` (partition of ``--start``: the learned baselines and the rules) and
``<output>/anomalies/`` (partition of each breach's start, or of ``--start`` for a breach that began
in the context) and prints a ``KIP714_SUMMARY`` line plus one
``KIP714_ANOMALY`` line per anomaly (max 20).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from functools import reduce

from kip714_common.anomaly_args import AnomalyArgs, build_parser, parse_anomaly_args
from kip714_common.baseline_store import settings_folder, stored_baselines
from kip714_common.baselines import client_group_column, learn_baselines, peer_candidates
from kip714_common.breaches import sustained_breaches
from kip714_common.candidates import baseline_candidates, judged_columns, static_candidates
from kip714_common.cli import Interval, run_main
from kip714_common.landing import hour_partition_filter, path_exists
from kip714_common.outputs import RunSummary, printable, summarise_written, table_path, write_table
from kip714_common.rollup_input import history_table_rows, load_history, load_rollups
from kip714_common.schemas import ANOMALY_SCHEMA
from kip714_common.session import app_session
from kip714_common.thresholds import thresholds_frame
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

APP_NAME = "kip714-anomalies"
PRINTED_ANOMALIES = 20
__all__ = ["APP_NAME", "build_parser", "check_args", "run"]  # a pipeline step (``pipeline.py``)


def check_args(argv: Sequence[str] | None) -> AnomalyArgs:
    """Validate the flags and load the rules (before Spark starts); the first bad one raises."""
    return parse_anomaly_args(argv)


def run(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> RunSummary:
    """Parse ``argv``, learn thresholds, detect anomalies, write both; returns (and prints) the summary."""
    args = check_args(argv)
    spark = app_session(spark, APP_NAME)
    interval, output = args.common.interval, args.common.output

    current = judged_rows(spark, args)
    baselines = own_baselines(spark, args)
    candidates = all_candidates(current, baselines, args)
    thresholds = thresholds_frame(spark, baselines, args.rules, interval, args.settings, args.baseline_for)
    write_table(thresholds, output, "thresholds", interval)
    found = _anomalies(spark, candidates, args.max_gap_buckets, interval.start)
    write_table(found, output, "anomalies", interval)
    if args.rollups_source == "landing":
        current.unpersist()
    if baselines is not None:
        baselines.unpersist()
    return _summarise(spark, args)


def breach_context(args: AnomalyArgs) -> timedelta:
    """How far before ``--start`` a breach still reaching into the run can begin and count: the longest
    duration a rule asks for, plus the gaps a breach may bridge. Without it, an hourly run never sees a
    breach that straddles the hour long enough (3 minutes from 13:58 to 14:01 is 2 + 1 in two runs)."""
    longest = max([rule.for_seconds for rule in args.rules] + [args.baseline_for, 0])
    return timedelta(seconds=longest + (args.max_gap_buckets + 1) * args.common.interval.bucket_seconds)


def judged_rows(spark: SparkSession, args: AnomalyArgs) -> DataFrame:
    """The window's client rollups and those of the breach context before it (``breach_context``), only
    the columns candidates read, each with its ``client_group``.

    One read over ``[start - context, end)``: from the landing zone with ``--rollups-source landing``,
    else the rollups table (the previous hourly run's rows; a troubleshooting window's own table holds
    none before the window, and a window's turnaround gets no second roll-up from the landing zone).
    """
    common = args.common
    interval = common.interval
    judged = Interval(interval.start - breach_context(args), interval.end, interval.bucket_seconds)
    current = load_rollups(spark, common, args.rollups_source, judged)
    current = current.select(*judged_columns(args.rules)).withColumn(
        "client_group", client_group_column(args.group_by)
    )
    if args.rollups_source == "landing":
        current = current.persist()  # computed from the landing zone: once for static rules and baselines
    return current


def own_baselines(spark: SparkSession, args: AnomalyArgs) -> DataFrame | None:
    """Each series' baseline learned from ``--history`` before the window (persisted), or None; with
    ``--baselines-cache``, read from there (a few hundred rows, not persisted) when a run already learned
    them for the same history, which is then not read."""
    if not args.baselines:
        return None
    common, interval = args.common, args.common.interval
    history = Interval(*args.history_span, interval.bucket_seconds)

    def learned() -> DataFrame | None:
        if args.history_root is not None:
            history_rows = history_table_rows(spark, args.history_root, history)
        else:
            history_rows = load_history(spark, common, args.rollups_source, history)
        if history_rows is None:
            return None
        grouped = history_rows.withColumn("client_group", client_group_column(args.group_by))
        return learn_baselines(grouped, args.settings)

    if args.baselines_cache is None:
        baselines = learned()
        return None if baselines is None else baselines.persist()
    learned_with = {
        "history": [history.start, history.end],
        "history_root": args.history_root,
        "group_by": args.group_by,
        "settings": asdict(args.settings),
    }
    return stored_baselines(spark, settings_folder(args.baselines_cache, learned_with), learned)


def all_candidates(current: DataFrame, baselines: DataFrame | None, args: AnomalyArgs) -> list[DataFrame]:
    """Static-rule candidates, then own-baseline and peer-baseline ones where they are on."""
    found = [static_candidates(current, args.rules)]
    if baselines is not None:
        found.append(baseline_candidates(current, baselines, args.baseline_for))
    if args.peers.kinds and args.baselines:
        found.append(peer_candidates(current, args.settings, args.peers, args.baseline_for))
    return [frame for frame in found if frame is not None]


def _anomalies(
    spark: SparkSession, candidates: list[DataFrame], max_gap_buckets: int, judged_from: datetime
) -> DataFrame:
    if not candidates:
        return spark.createDataFrame([], ANOMALY_SCHEMA)
    return sustained_breaches(reduce(DataFrame.unionByName, candidates), max_gap_buckets, judged_from)


def _summarise(spark: SparkSession, args: AnomalyArgs) -> RunSummary:
    interval, output = args.common.interval, args.common.output
    summary = RunSummary(APP_NAME, interval, notes={"rules": [r.name for r in args.rules]})
    for table in ("thresholds", "anomalies"):
        summary.tables[table] = summarise_written(spark, output, table, interval)
    summary.print()
    if summary.tables["anomalies"]["rows"]:
        _print_anomalies(spark, output, interval)
    return summary


def _print_anomalies(spark: SparkSession, output_root: str, interval: Interval) -> None:
    path = table_path(output_root, "anomalies")
    if not path_exists(spark, path):
        return
    rows = (
        spark.read.schema(ANOMALY_SCHEMA)
        .parquet(path)
        .where(hour_partition_filter(interval.start, interval.end))
        .orderBy(F.desc("severity"), F.desc("duration_seconds"))
        .limit(PRINTED_ANOMALIES)
        .collect()
    )
    for row in rows:
        print(
            f"KIP714_ANOMALY {row['severity']} {printable(row['rule_name'])} "
            f"client_id={printable(row['client_id'])} instance={row['client_instance_id']} "
            f"source={printable(row['client_source_address'])} "
            f"software={printable(row['client_software_name'])}/{printable(row['client_software_version'])} "
            f"{row['field']}={row['peak_value']:.6g} {row['comparison']} {row['threshold']:.6g} "
            f"for {row['duration_seconds']}s from {row['breach_start']:%Y-%m-%dT%H:%M:%SZ}",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(run_main(run, sys.argv[1:]))
