"""Spark app: delivery health, pushes expected against pushes landed per client instance and hour.

    spark-submit --py-files kip714_common.zip spark_apps/delivery.py \\
        --input <landing root> --output <analytics root> \\
        --start 2026-01-31T13:00:00Z --end 2026-01-31T14:00:00Z

Writes ``<output>/delivery/`` (``DELIVERY_SCHEMA``): one row per client instance and hour (status ``ok``,
``silent``, ``gaps`` or ``throttled``, with the broker's throttles, plugin errors, unknown-subscription
requests and drops as the reason), plus one row per broker and hour whose ``instance.count`` exceeded the
instances that pushed to it (``unseen_instances``: clients whose pushes were all refused, or that no
subscription matched). Prints ``KIP714_SUMMARY`` and one ``KIP714_SILENT`` line per silent instance. Rules
in ``kip714_common.delivery``. Run it over a whole troubleshooting window: a client whose subscription
was deleted before ``--end`` stops pushing without a terminating push, which reads as silent.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime

from kip714_common.broker_metric_names import BrokerMetric
from kip714_common.caching import cached
from kip714_common.cli import Interval, common_flags_step, make_interval, run_main
from kip714_common.delivery import (
    HOUR,
    broker_client_counters,
    broker_hours,
    ended_in_hour,
    instance_hours,
    landed_pushes,
    per_instance,
    per_push_hour,
    reason_column,
)
from kip714_common.landing import LandedPoints, read_run_datapoints
from kip714_common.outputs import RunSummary, printable, summarise_written, write_table
from kip714_common.rollup import date_hour_columns, rollup_points
from kip714_common.schemas import DELIVERY_SCHEMA, conform
from kip714_common.session import app_session
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

APP_NAME = "kip714-delivery"
PRINTED_SILENT = 20
build_parser, check_args = common_flags_step("KIP-714 delivery health: expected against landed pushes.")


def _status() -> Column:
    hour_end = F.col("hour_start") + F.expr("INTERVAL 1 HOUR")
    return (
        F.when(F.col("silent_since").isNotNull() & (hour_end > F.col("silent_since")), F.lit("silent"))
        .when(F.col("throttled_pushes") > 0, F.lit("throttled"))
        .when(F.coalesce(F.col("_gap_missed"), F.lit(False)), F.lit("gaps"))
        .otherwise(F.lit("ok"))
    )


def _shaped(frame: DataFrame, columns: dict[str, Column]) -> DataFrame:
    date, hour = date_hour_columns(F.col("hour_start"))
    columns = {"date": date, "hour": hour, **columns}
    return conform(frame, DELIVERY_SCHEMA, columns)


def instance_rows(
    pushes: DataFrame, rolled: DataFrame, interval: Interval, horizon_micros: int | None = None
) -> DataFrame:
    """``DELIVERY_SCHEMA`` rows of every instance that pushed, hour by hour."""
    instances = per_instance(pushes, interval, horizon_micros)
    rows = instance_hours(instances, per_push_hour(pushes, instances), interval)
    counters = broker_client_counters(rolled)
    by_key = (rows["client_instance_id"] == counters["instance_key"]) | (
        rows["client_instance_id_hex"] == counters["instance_key"]
    )
    with_counters = rows.join(counters, (rows["hour_start"] == counters["hour_start"]) & by_key, "left").drop(
        counters["hour_start"]
    )
    joined = with_counters.join(broker_hours(rolled), ["cluster_id", "broker_node_id", "hour_start"], "left")
    filled = joined.withColumns(
        {
            name: F.coalesce(F.col(name), F.lit(0.0))
            for name in (
                "throttled_pushes",
                "plugin_errors",
                "unknown_subscription_requests",
                "plugin_dropped",
            )
        }
    ).withColumn("status", _status())
    return _shaped(
        filled,
        {
            "push_interval_seconds": F.col("interval_seconds"),
            "silent_since": F.when(F.col("status") == "silent", F.col("silent_since")),
            "unseen_instances": F.lit(None),
            "reason": F.when((F.col("status") != "ok") | ended_in_hour(), reason_column()),
        },
    )


def unseen_rows(points: DataFrame, pushes: DataFrame, interval: Interval) -> DataFrame:
    """Per broker and hour: instances the broker's gauge counted beyond those that pushed to it."""
    pushing = (
        pushes.withColumn("hour_start", F.date_trunc("hour", "push_time"))
        .groupBy(
            F.col("who.cluster_id").alias("cluster_id"),
            F.col("who.broker_node_id").alias("broker_node_id"),
            "hour_start",
        )
        .agg(F.count_distinct("client_instance_id").alias("pushing"))
    )
    gauge = points.where(
        (F.col("record_type") == "broker") & (F.col("metric_name") == BrokerMetric.INSTANCE_COUNT)
    )
    start, end = F.lit(interval.start).cast("timestamp"), F.lit(interval.end).cast("timestamp")
    counted = (
        gauge.where((F.col("ts") >= start) & (F.col("ts") < end))
        .withColumn("hour_start", F.date_trunc("hour", "ts"))
        .join(pushing, ["cluster_id", "broker_node_id", "hour_start"], "left")
        .withColumn("pushing", F.coalesce(F.col("pushing"), F.lit(0)))
        .groupBy("cluster_id", "broker_node_id", "hour_start", "pushing")
        .agg(
            F.max("point_value").alias("known"),
            F.min(F.when(F.col("point_value") > F.col("pushing"), F.col("ts"))).alias("silent_since"),
        )
        .where(F.col("known") > F.col("pushing"))
    )
    unseen = (F.col("known") - F.col("pushing")).cast("int")
    reason = F.concat(
        F.lit("broker "),
        F.col("broker_node_id").cast("string"),
        F.lit(" knew "),
        F.col("known").cast("long").cast("string"),
        F.lit(" client-metrics instances, "),
        F.col("pushing").cast("string"),
        F.lit(" pushed to it: refused first pushes (e.g. too large) or no subscription matched them"),
    )
    nothing = {name: F.lit(None) for name in DELIVERY_SCHEMA.fieldNames() if name not in ("date", "hour")}
    return _shaped(
        counted,
        {
            **nothing,
            "hour_start": F.col("hour_start"),
            "cluster_id": F.col("cluster_id"),
            "broker_node_id": F.col("broker_node_id"),
            "expected_pushes": F.lit(None),
            "landed_pushes": F.lit(0),
            "terminated": F.lit(False),
            "status": F.lit("silent"),
            "silent_since": F.col("silent_since"),
            "unseen_instances": unseen,
            "reason": reason,
        },
    )


def delivery_frame(
    points: LandedPoints, interval: Interval, read_start: datetime, selected: bool = False
) -> DataFrame:
    """Every delivery row of ``interval`` from points read over ``[read_start, interval.end)``.

    ``selected``: the points are a troubleshooting run's clients only (``--selection``). The broker's
    instance count covers every client, so comparing it with the selected clients' pushes would
    report the other clients as unseen: no ``unseen_instances`` rows then."""
    pushes = cached(landed_pushes(points.frame))
    hourly = make_interval(interval.start, interval.end, HOUR)
    rolled = rollup_points(points.where(F.col("record_type") == "broker"), hourly, read_start)
    # the newest landed record (broker records arrive every few seconds): what "now" is for this data
    horizon = points.frame.agg(F.max(F.unix_micros("record_timestamp"))).first()[0]
    rows = instance_rows(pushes, rolled, interval, horizon)
    if selected:
        return rows
    return rows.unionByName(unseen_rows(points.frame, pushes, interval))


def run(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> RunSummary:
    """Parse ``argv``, compute delivery health, write it; returns (and prints) the summary."""
    common = check_args(argv)
    spark = app_session(spark, APP_NAME)
    interval = common.interval
    points = read_run_datapoints(spark, common)
    frame = delivery_frame(points, interval, common.read_start, common.selection is not None).persist()
    write_table(frame, common.output, "delivery", interval)
    silent = (
        frame.where(F.col("status") == "silent")
        .groupBy("client_instance_id", "client_id", "client_software_name", "broker_node_id")
        .agg(F.min("silent_since").alias("since"), F.max("unseen_instances").alias("unseen"))
        .orderBy("since")
        .limit(PRINTED_SILENT)
        .collect()
    )
    frame.unpersist()
    summary = RunSummary(APP_NAME, interval, notes={"silent": len(silent)})
    summary.tables["delivery"] = summarise_written(spark, common.output, "delivery", interval)
    summary.print()
    for row in silent:
        who = (
            f"instance={row['client_instance_id']} client_id={printable(row['client_id'])} "
            f"software={printable(row['client_software_name'])}"
            if row["client_instance_id"]
            else f"broker={row['broker_node_id']} unseen_instances={row['unseen']}"
        )
        print(f"KIP714_SILENT {who} since={row['since']:%Y-%m-%dT%H:%M:%SZ}", flush=True)
    return summary


if __name__ == "__main__":
    sys.exit(run_main(run, sys.argv[1:]))
