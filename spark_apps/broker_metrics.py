"""Spark app: KIP-714 broker health per broker and window, from the plugin's ``kip714.type=broker`` records.

    spark-submit --py-files kip714_common.zip spark_apps/broker_metrics.py \\
        --input <landing root> --output <analytics root> \\
        --start 2026-01-31T13:00:00Z --end 2026-01-31T14:00:00Z --bucket 5m

Per broker and bucket: client instance count, pushes exported, throttled pushes and throttle ratio,
unknown-subscription requests, plugin errors and error ratio, plugin drops, export time avg/max/p99.
The broker's counters are cumulative; a broker restart resets them, which the shared counter logic turns
into "counted since the restart" instead of a negative step. Ratios:

* ``throttle_ratio = throttled / (exported + plugin errors + throttled)``: the share of push attempts
  that reached the throttle check and were refused (Kafka counts an export only when the plugin succeeded).
* ``plugin_error_ratio = plugin errors / (exported + plugin errors)``.

Writes ``<output>/broker_metrics/`` (flags ``plugin_failing``) and ``<output>/broker_client_metrics/``
(per broker x client instance, flags ``high_throttle_ratio``, with the client's id, address and software
taken from its own pushes in the interval).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kip714_common.broker_metric_names import BrokerMetric
from kip714_common.caching import cached
from kip714_common.cli import CommonArgs, base_parser, parse_common, run_main
from kip714_common.counters import increase_of
from kip714_common.errors import SparkAppInputError
from kip714_common.histograms import merged_counts_expression, percentile_expression
from kip714_common.outputs import RunSummary, summarise_written, write_table
from kip714_common.rollup import run_rollup
from kip714_common.schemas import (
    BROKER_CLIENT_SCHEMA,
    BROKER_METRICS_SCHEMA,
    CLIENT_IDENTITY_COLUMNS,
    conform,
)
from kip714_common.session import app_session
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

APP_NAME = "kip714-broker-metrics"
WINDOW_COLUMNS = ("bucket_start", "bucket_end", "bucket_seconds", "cluster_id", "broker_node_id")


def build_parser():  # type: ignore[no-untyped-def]
    parser = base_parser("KIP-714 broker health per broker and window.")
    parser.add_argument("--throttle-ratio", type=float, default=0.5, help="flag clients at or above (0.5)")
    parser.add_argument(
        "--min-throttled", type=float, default=1.0, help="...with at least this many throttles"
    )
    parser.add_argument(
        "--plugin-error-ratio",
        type=float,
        default=0.1,
        help="flag brokers whose error ratio in a bucket exceeds this (0.1; any error is still counted)",
    )
    return parser


def _ratio(part: Column, whole: Column) -> Column:
    return part / F.when(whole > 0, whole)


def _top_bucket_bound() -> Column:
    """Upper bound of the highest bucket with a count in the window (its lower bound for the overflow one)."""
    top = "aggregate(sequence(0, size(merged_counts) - 1), -1, (k, i) -> if(merged_counts[i] > 0, i, k))"
    return F.expr(
        f"CASE WHEN merged_counts IS NULL OR size(merged_counts) = 0 OR {top} < 0 THEN NULL "
        f"ELSE coalesce(get(merged_bounds, {top}), get(merged_bounds, size(merged_bounds) - 1)) END"
    )


def _export_time_max() -> Column:
    """The export-time histogram's own maximum: its ``max`` field, else its top non-empty bucket.

    Not the rollup's ``max``: that is the maximum of the points' ``value``, which for a histogram is
    its mean (sum / count); 0.5 ms reported where exports took up to 4 ms.
    """
    is_time = F.col("metric_name") == BrokerMetric.PLUGIN_EXPORT_TIME
    return F.max(F.when(is_time, F.coalesce(F.col("histogram_max"), _top_bucket_bound())))


def _export_time(prefix_columns: dict[str, Column]) -> dict[str, Column]:
    is_time = F.col("metric_name") == BrokerMetric.PLUGIN_EXPORT_TIME
    return {
        **prefix_columns,
        "_time_sum": F.sum(F.when(is_time, F.col("histogram_sum"))),
        "_time_count": F.sum(F.when(is_time, F.col("histogram_count"))),
        "export_time_max_ms": _export_time_max(),
        "_time_min": F.min(F.when(is_time, F.col("min"))),
        "_time_counts": F.collect_list(F.when(is_time, F.col("merged_counts"))),
        "_time_bounds": F.first(F.when(is_time, F.col("merged_bounds")), ignorenulls=True),
    }


def client_identities(points: DataFrame) -> DataFrame:
    """Latest broker-added labels per client instance, keyed by both id forms (``instance_key``)."""
    latest = (
        points.where(F.col("record_type") == "client")
        .groupBy("client_instance_id")
        .agg(F.max_by(F.struct(*CLIENT_IDENTITY_COLUMNS[1:]), "time_ns").alias("who"))
        .select("client_instance_id", "who.*")
    )
    by_text = latest.withColumn("instance_key", F.col("client_instance_id"))
    by_hex = latest.withColumn("instance_key", F.col("client_instance_id_hex"))
    return by_text.unionByName(by_hex).where(F.col("instance_key").isNotNull())


def per_client(rolled: DataFrame, identities: DataFrame, settings) -> DataFrame:  # type: ignore[no-untyped-def]
    instance = F.col("attributes")["client_instance_id"]
    aggregated = (
        rolled.where(instance.isNotNull())
        .withColumn("instance_key", instance)
        .groupBy(*WINDOW_COLUMNS, "instance_key")
        .agg(
            increase_of(BrokerMetric.PLUGIN_EXPORTS).alias("pushes_exported"),
            increase_of(BrokerMetric.THROTTLES).alias("throttled_pushes"),
            increase_of(BrokerMetric.PLUGIN_ERRORS).alias("plugin_errors"),
            F.sum(
                F.when(F.col("metric_name") == BrokerMetric.PLUGIN_EXPORT_TIME, F.col("histogram_sum"))
            ).alias("_sum"),
            F.sum(
                F.when(F.col("metric_name") == BrokerMetric.PLUGIN_EXPORT_TIME, F.col("histogram_count"))
            ).alias("_count"),
            _export_time_max().alias("export_time_max_ms"),
        )
    )
    attempts = F.col("pushes_exported") + F.col("plugin_errors") + F.col("throttled_pushes")
    joined = aggregated.join(F.broadcast(identities), "instance_key", "left").withColumn(
        "client_instance_id", F.coalesce(F.col("client_instance_id"), F.col("instance_key"))
    )
    ratio = _ratio(F.col("throttled_pushes"), attempts)
    columns = {
        "throttle_ratio": ratio,
        "export_time_avg_ms": _ratio(F.col("_sum"), F.col("_count")),
        "high_throttle_ratio": F.coalesce(
            (ratio >= settings.throttle_ratio) & (F.col("throttled_pushes") >= settings.min_throttled),
            F.lit(False),
        ),
        "date": F.date_format("bucket_start", "yyyy-MM-dd"),
        "hour": F.hour("bucket_start"),
    }
    return conform(joined, BROKER_CLIENT_SCHEMA, columns)


def per_broker(rolled: DataFrame, clients: DataFrame, settings) -> DataFrame:  # type: ignore[no-untyped-def]
    is_count = F.col("metric_name") == BrokerMetric.INSTANCE_COUNT
    aggregated = rolled.groupBy(*WINDOW_COLUMNS).agg(
        *[
            column.alias(name)
            for name, column in _export_time(
                {
                    "instance_count": F.max_by(
                        F.when(is_count, F.col("last")), F.when(is_count, F.col("last_time"))
                    ),
                    "instance_count_max": F.max(F.when(is_count, F.col("max"))),
                    "pushes_exported": increase_of(BrokerMetric.PLUGIN_EXPORTS),
                    "throttled_pushes": increase_of(BrokerMetric.THROTTLES),
                    "unknown_subscription_requests": increase_of(BrokerMetric.UNKNOWN_SUBSCRIPTION_REQUESTS),
                    "plugin_errors": increase_of(BrokerMetric.PLUGIN_ERRORS),
                    "plugin_dropped": increase_of(BrokerMetric.PLUGIN_DROPS),
                    "counter_resets": F.sum("counter_resets"),
                }
            ).items()
        ]
    )
    flagged = clients.groupBy("bucket_start", "broker_node_id").agg(
        F.sum(F.col("high_throttle_ratio").cast("int")).alias("throttled_clients")
    )
    merged = merged_counts_expression("_time_counts")
    error_ratio = _ratio(F.col("plugin_errors"), F.col("pushes_exported") + F.col("plugin_errors"))
    columns = {
        "throttle_ratio": _ratio(
            F.col("throttled_pushes"),
            F.col("pushes_exported") + F.col("plugin_errors") + F.col("throttled_pushes"),
        ),
        "plugin_error_ratio": error_ratio,
        "export_time_avg_ms": _ratio(F.col("_time_sum"), F.col("_time_count")),
        "export_time_p99_ms": percentile_expression(
            "_merged", "_time_bounds", "_time_min", "export_time_max_ms", 0.99
        ),
        "plugin_failing": (
            (F.col("plugin_errors") > 0) & (F.coalesce(error_ratio, F.lit(1.0)) > settings.plugin_error_ratio)
        )
        | (F.col("plugin_dropped") > 0),
        "throttled_clients": F.coalesce(F.col("throttled_clients"), F.lit(0)),
        "date": F.date_format("bucket_start", "yyyy-MM-dd"),
        "hour": F.hour("bucket_start"),
    }
    joined = aggregated.withColumn("_merged", merged).join(
        flagged, ["bucket_start", "broker_node_id"], "left"
    )
    return conform(joined, BROKER_METRICS_SCHEMA, columns)


def check_args(argv: Sequence[str] | None) -> tuple[argparse.Namespace, CommonArgs]:
    """Validate the flags (before Spark starts): the first bad one raises ``SparkAppInputError``."""
    namespace, common = parse_common(build_parser(), argv)
    if not 0 <= namespace.throttle_ratio <= 1:
        raise SparkAppInputError("--throttle-ratio", "must be between 0 and 1", namespace.throttle_ratio)
    if not 0 <= namespace.plugin_error_ratio < 1:
        raise SparkAppInputError("--plugin-error-ratio", "must be in [0, 1)", namespace.plugin_error_ratio)
    return namespace, common


def run(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> RunSummary:
    """Parse ``argv``, compute broker health for the interval, write both tables; returns the summary."""
    namespace, common = check_args(argv)
    spark = app_session(spark, APP_NAME)

    interval = common.interval
    points, rollup = run_rollup(spark, common)
    # both read twice, so cached until the run's end (``caching.run_caches`` releases them even when a
    # write fails); the broker rows of a rollup the run already cached (a small input's) are read from it
    broker_rows = rollup.where(F.col("record_type") == "broker")
    rolled = broker_rows if rollup.is_cached else cached(broker_rows)
    clients = cached(per_client(rolled, client_identities(points.frame), namespace))
    write_table(clients, common.output, "broker_client_metrics", interval)
    write_table(per_broker(rolled, clients, namespace), common.output, "broker_metrics", interval)
    rolled.unpersist()
    clients.unpersist()

    summary = RunSummary(APP_NAME, interval)
    for table in ("broker_metrics", "broker_client_metrics"):
        summary.tables[table] = summarise_written(spark, common.output, table, interval)
    summary.print()
    return summary


if __name__ == "__main__":
    sys.exit(run_main(run, sys.argv[1:]))
