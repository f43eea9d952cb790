"""The rollup: bucket x client instance x metric x labels -> count/min/max/avg/sum/last, rates, percentiles.

Shared by the rollups app (which writes it), the anomalies app (which can compute it on the fly) and the
broker-metrics app (which rolls broker records up first, then per broker). In one pipeline run over a
small input, the rollups and broker-metrics steps share one computed rollup (``run_rollup``).

``signal`` is the one number per row that baselines and anomaly detection watch: ``avg`` for gauges,
``rate_per_second`` for sums, ``p99`` for histograms and summaries.
"""

from __future__ import annotations

from datetime import datetime

from kip714_common.cli import CommonArgs, Interval
from kip714_common.counters import HISTOGRAM_TYPES, with_increments
from kip714_common.histograms import merged_counts_expression, percentiles_expression
from kip714_common.landing import LandedPoints, epoch_nanos, read_run_datapoints, run_read_key
from kip714_common.run_shares import persisted, shared
from kip714_common.schemas import CLIENT_IDENTITY_COLUMNS, ROLLUP_SCHEMA
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

PERCENTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
GROUP_COLUMNS = (
    "bucket_start",
    "record_type",
    *CLIENT_IDENTITY_COLUMNS,
    "series_node",
    "series_id",
)
"""A rollup row: bucket x client instance (with its broker-added labels) x broker x series, where
``series_id`` stands for metric name, type, temporality and normalised labels (``series.series_table``)."""
DESCRIPTIVE_KEYS = (
    "listener",
    "cluster_id",
    "metric_unit",
    "_resource_keys",
    "_resource_values",
)
"""Constant along a series in practice; grouping by them keeps aggregation buffers fixed-width."""


def bucket_start_column(bucket_seconds: int) -> Column:
    return F.timestamp_seconds(F.floor(F.col("time_ns") / (bucket_seconds * 1_000_000_000)) * bucket_seconds)


def date_hour_columns(timestamp: Column) -> tuple[Column, Column]:
    """The output partition of a row: its bucket's UTC date and hour."""
    return F.date_format(timestamp, "yyyy-MM-dd"), F.hour(timestamp)


def _timestamp_of_nanos(nanos: Column) -> Column:
    """The same conversion as ``landing.normalise``'s ``ts`` (monotonic, so min/max commute with it)."""
    return F.timestamp_micros(F.floor(nanos / 1000))


def _summary_quantile(quantile: float) -> Column:
    return F.expr(f"get(filter(last.quantiles, q -> abs(q.quantile - {quantile}) < 1e-9), 0).value")


def rollup_points(
    points: LandedPoints, interval: Interval, read_start: datetime, keep_buckets: bool = False
) -> DataFrame:
    """Roll normalised points read over ``[read_start, end)`` up into ``ROLLUP_SCHEMA`` rows of ``interval``.

    ``read_start`` is ``--start`` minus the counter lookback: cumulative series need the point before.

    With ``keep_buckets`` the merged histogram buckets stay as ``merged_counts``/``merged_bounds`` (and the
    points' own maximum as ``histogram_max``) so a caller can merge again across labels (the
    broker-metrics app does, per broker).
    """
    any_cumulative = points.has_any(("sum", *HISTOGRAM_TYPES), "cumulative")
    increments = with_increments(points.frame, epoch_nanos(read_start), any_cumulative).where(
        F.col("time_ns") >= epoch_nanos(interval.start)
    )
    bucket = interval.bucket_seconds
    complex_types = (*HISTOGRAM_TYPES, "summary")
    is_complex = F.col("metric_type").isin(*complex_types)
    prepared = increments.withColumns(
        {
            "bucket_start": bucket_start_column(bucket),
            # the map as its key and value arrays: groupable, and views of the map (no array built per point)
            "_resource_keys": F.coalesce(F.map_keys("resource_attributes"), F.array().cast("array<string>")),
            "_resource_values": F.coalesce(
                F.map_values("resource_attributes"), F.array().cast("array<string>")
            ),
        }
    )
    keys = (*GROUP_COLUMNS, *DESCRIPTIVE_KEYS)
    # Fixed-width aggregation buffers only, so Spark keeps a hash aggregate for the bulk of the rows
    # (gauges and sums); histograms and summaries need list/struct buffers and take the slower path.
    scalar_aggregates = [
        F.count(F.lit(1)).alias("count"),
        F.min("point_value").alias("_min_value"),
        F.max("point_value").alias("_max_value"),
        F.avg("point_value").alias("_avg_value"),
        F.sum("point_value").alias("_sum_value"),
        F.max_by("point_value", "time_ns").alias("_last_value"),
        F.max_by("broker_node_id", "time_ns").alias("_broker_node_id"),
        F.min("time_ns").alias("_first_ns"),  # converted once per rollup row, not per point
        F.max("time_ns").alias("_last_ns"),
        F.sum("increment").alias("increase"),
        F.sum(F.when(F.col("increment").isNotNull(), F.col("elapsed_ns"))).alias("_elapsed_ns"),
        F.sum("is_reset").cast("int").alias("counter_resets"),
    ]
    scalars = prepared.where(~is_complex).groupBy(*keys).agg(*scalar_aggregates)
    complex_rows = (
        # an empty branch when no point is complex: the optimiser then drops it, scan included
        prepared.where(is_complex if points.has_any(complex_types) else F.lit(False))
        .groupBy(*keys)
        .agg(
            *scalar_aggregates,
            F.min("min").alias("_min_observed"),
            F.max("max").alias("_max_observed"),
            F.sum("inc_count").alias("_histogram_count"),
            F.sum("inc_sum").alias("_histogram_sum"),
            F.collect_list("inc_bucket_counts").alias("_counts_list"),
            F.max_by(F.struct("count", "sum", "quantiles", "hist_bounds"), "time_ns").alias("last"),
        )
        .withColumns(
            {
                "merged_counts": merged_counts_expression("_counts_list"),
                "merged_bounds": F.col("last.hist_bounds"),
            }
        )
    )
    # the series' strings, once per rollup row instead of once per point
    aggregated = scalars.unionByName(complex_rows, allowMissingColumns=True).join(
        F.broadcast(points.series), "series_id"
    )
    kind = F.col("metric_type")
    histogram_count = F.when(kind == "summary", F.col("last.count")).otherwise(F.col("_histogram_count"))
    histogram_sum = F.when(kind == "summary", F.col("last.sum")).otherwise(F.col("_histogram_sum"))
    elapsed_seconds = F.col("_elapsed_ns") / 1e9
    rate = F.when(
        kind == "sum",
        F.when(elapsed_seconds > 0, F.col("increase") / elapsed_seconds).otherwise(
            F.col("increase") / bucket
        ),
    )
    # one column, so the buckets are walked once per row for p50, p95, p99 and the signal
    aggregated = aggregated.withColumn(
        "_bucket_percentiles",
        percentiles_expression(
            "merged_counts", "merged_bounds", "_min_observed", "_max_observed", PERCENTILES
        ),
    )
    percentiles = {
        name: F.when(kind == "summary", _summary_quantile(quantile)).otherwise(
            F.col("_bucket_percentiles").getField(name)
        )
        for name, quantile in PERCENTILES.items()
    }
    histogram_avg = histogram_sum / F.when(histogram_count > 0, histogram_count)
    date, hour = date_hour_columns(F.col("bucket_start"))
    columns: dict[str, Column] = {
        "bucket_start": F.col("bucket_start"),
        "bucket_end": F.col("bucket_start") + F.make_interval(secs=F.lit(bucket)),
        "bucket_seconds": F.lit(bucket),
        "record_type": F.col("record_type"),
        **{name: F.col(name) for name in CLIENT_IDENTITY_COLUMNS},
        "listener": F.col("listener"),
        "broker_node_id": F.col("_broker_node_id"),
        "cluster_id": F.col("cluster_id"),
        "resource_attributes": F.map_from_arrays("_resource_keys", "_resource_values"),
        "metric_name": F.col("metric_name"),
        "source_metric_name": F.col("source_metric_name"),
        "metric_type": kind,
        "temporality": F.col("temporality"),
        "metric_unit": F.col("metric_unit"),
        "attributes": F.col("attributes"),
        "attributes_key": F.col("attributes_key"),
        "count": F.col("count"),
        "min": F.coalesce(F.col("_min_value"), F.col("_min_observed")),
        "max": F.coalesce(F.col("_max_value"), F.col("_max_observed")),
        "avg": F.coalesce(F.col("_avg_value"), histogram_avg),
        "sum": F.coalesce(F.col("_sum_value"), histogram_sum),
        "last": F.coalesce(
            F.col("_last_value"),
            F.col("last.sum") / F.when(F.col("last.count") > 0, F.col("last.count")),
        ),
        "first_time": _timestamp_of_nanos(F.col("_first_ns")),
        "last_time": _timestamp_of_nanos(F.col("_last_ns")),
        "increase": F.col("increase"),
        "rate_per_second": rate,
        "counter_resets": F.col("counter_resets"),
        "histogram_count": histogram_count,
        "histogram_sum": histogram_sum,
        **percentiles,
        "signal": F.when(kind == "gauge", F.col("_avg_value"))
        .when(kind == "sum", rate)
        .otherwise(percentiles["p99"]),
        "date": date,
        "hour": hour,
    }
    selected = [columns[field.name].cast(field.dataType).alias(field.name) for field in ROLLUP_SCHEMA.fields]
    if keep_buckets:
        # histogram_max: the points' own ``max`` field (the rollup's ``max`` is of their mean ``value``)
        kept = (F.col("merged_counts"), F.col("merged_bounds"), F.col("_max_observed").alias("histogram_max"))
        selected += kept
    return aggregated.select(*selected)


def run_rollup(spark: SparkSession, common: CommonArgs) -> tuple[LandedPoints, DataFrame]:
    """The run's points (``read_run_datapoints``) and their rollup over the run's interval, merged
    histogram buckets kept (``keep_buckets``).

    In a pipeline run over a small input the rollups step (which writes it) and the broker-metrics step
    (which rolls its broker rows up per broker) share one computed and cached rollup instead of rolling
    the brokers' per-instance counters and histograms, the dearest points to roll up, twice
    (``run_shares``; keyed by the read it is built from). A run of the rollups step without
    the broker-metrics step caches it for one reader: a small input's cost, and every DAG runs both.
    """
    points = read_run_datapoints(spark, common)
    rolled = shared(
        ("rollup", *run_read_key(common), common.interval),
        lambda: persisted(rollup_points(points, common.interval, common.read_start, keep_buckets=True)),
    )
    return points, rolled
