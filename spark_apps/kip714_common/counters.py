"""From reported values to increments: delta sums as they are, cumulative sums and histograms differenced.

A cumulative series is ordered by time per (record type, client instance, broker for broker records,
metric, labels). A **counter reset** is a point whose value (or histogram count) is below the previous
one, or whose ``start_time`` moved forward: the client or broker restarted. Its increment is then its
own value (everything counted since the restart), never a negative difference. The first point of a
series counts in full only when the series started inside the rows read (its ``start_time`` is after
the read window's start); otherwise its increment is unknown (null) and only later points count, which
is why the apps read a ``--counter-lookback`` before ``--start``.
"""

from __future__ import annotations

from kip714_common.histograms import exponential_as_explicit
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

HISTOGRAM_TYPES = ("histogram", "exponential_histogram")
SERIES_COLUMNS = ("record_type", "client_instance_id", "series_node", "metric_name", "attributes_key")
"""One time series. ``series_node`` is the broker for broker records and null for client records (a
client keeps its counters when it moves to another broker)."""


def increase_of(metric: str) -> Column:
    """Aggregate: the summed ``increase`` of one metric's rollup rows in a group (0 when it has none)."""
    return F.coalesce(F.sum(F.when(F.col("metric_name") == metric, F.col("increase"))), F.lit(0.0))


def _is_histogram() -> Column:
    return F.col("metric_type").isin(*HISTOGRAM_TYPES)


def _is_cumulative() -> Column:
    return (F.col("temporality") == "cumulative") & F.col("metric_type").isin("sum", *HISTOGRAM_TYPES)


def with_histogram_buckets(points: DataFrame) -> DataFrame:
    """Add ``hist_counts``/``hist_bounds``: explicit buckets for both histogram kinds, null otherwise."""
    exp_counts, exp_bounds = exponential_as_explicit()
    kind = F.col("metric_type")
    return points.withColumns(
        {
            "hist_counts": F.when(kind == "histogram", F.col("bucket_counts")).when(
                kind == "exponential_histogram", exp_counts
            ),
            "hist_bounds": F.when(kind == "histogram", F.col("explicit_bounds")).when(
                kind == "exponential_histogram", exp_bounds
            ),
        }
    )


def _own_elapsed_ns() -> Column:
    """Time a point covers by itself: since its start_time, else one push interval."""
    return F.when(F.col("start_ns") > 0, F.col("time_ns") - F.col("start_ns")).otherwise(
        F.col("push_interval_ms") * 1_000_000
    )


def with_increments(points: DataFrame, view_start_ns: int, any_cumulative: bool = True) -> DataFrame:
    """Add ``increment``, ``elapsed_ns``, ``is_reset``, ``inc_count``, ``inc_sum``, ``inc_bucket_counts``.

    ``any_cumulative=False`` (the caller knows no point is cumulative) leaves the ordered-series branch
    empty, so Spark plans no scan, shuffle or sort for it.
    """
    points = with_histogram_buckets(points).withColumn(
        "series_node", F.when(F.col("record_type") == "broker", F.col("broker_node_id"))
    )
    plain = _plain_increments(points.where(~_is_cumulative()))
    cumulative = points.where(_is_cumulative() if any_cumulative else F.lit(False))
    return plain.unionByName(_cumulative_increments(cumulative, view_start_ns))


def _plain_increments(points: DataFrame) -> DataFrame:
    """Delta sums and gauges: a sum's increment is its own value, over its own interval."""
    is_sum = F.col("metric_type") == "sum"
    # withColumns, not chains of withColumn: each call re-analyses the whole plan on the driver
    return points.withColumns(
        {
            "increment": F.when(is_sum, F.col("point_value")),
            "elapsed_ns": F.when(is_sum, _own_elapsed_ns()),
            "is_reset": F.lit(0),
            "inc_count": F.col("count"),
            "inc_sum": F.col("sum"),
            "inc_bucket_counts": F.col("hist_counts"),
        }
    )


def _with_previous(points: DataFrame) -> DataFrame:
    """Each cumulative point with its series' previous point (``_prev_*``; null for the first)."""
    series = Window.partitionBy(*SERIES_COLUMNS).orderBy("time_ns")
    level = F.when(_is_histogram(), F.col("count").cast("double")).otherwise(F.col("point_value"))
    previous = {
        "_prev_level": F.lag("_level").over(series),
        "_prev_value": F.lag("point_value").over(series),
        "_prev_count": F.lag("count").over(series),
        "_prev_sum": F.lag("sum").over(series),
        "_prev_counts": F.lag("hist_counts").over(series),
        "_prev_start": F.lag("start_ns").over(series),
        "_prev_time": F.lag("time_ns").over(series),
    }
    return points.withColumn("_level", level).withColumns(previous)


_PREVIOUS_COLUMNS = (
    "_level",
    "_prev_level",
    "_prev_value",
    "_prev_count",
    "_prev_sum",
    "_prev_counts",
    "_prev_start",
    "_prev_time",
)
"""The helper columns ``_with_previous`` adds, dropped by name (``frame.columns`` costs a plan analysis
round trip on Spark Connect)."""


def _cumulative_increments(points: DataFrame, view_start_ns: int) -> DataFrame:
    """Cumulative sums and histograms differenced along their series (the module docstring's rules)."""
    cumulative = _with_previous(points)
    is_sum = F.col("metric_type") == "sum"
    first = F.col("_prev_time").isNull()
    started_in_view = F.coalesce(F.col("start_ns") >= view_start_ns, F.lit(False))
    reset = ~first & (
        (F.col("_level") < F.col("_prev_level"))
        | F.coalesce(F.col("start_ns") > F.col("_prev_start"), F.lit(False))
    )
    whole = (first & started_in_view) | reset
    unknown = first & ~started_in_view

    def difference(current: str, previous: str) -> Column:
        return F.when(whole, F.col(current)).when(unknown, None).otherwise(F.col(current) - F.col(previous))

    counts_difference = (
        F.when(whole, F.col("hist_counts"))
        .when(unknown, None)
        .when(
            F.size("hist_counts") == F.size("_prev_counts"),
            F.zip_with("hist_counts", "_prev_counts", lambda now, before: now - before),
        )
    )
    return cumulative.withColumns(
        {
            "increment": F.when(is_sum, difference("point_value", "_prev_value")),
            "elapsed_ns": F.when(whole, _own_elapsed_ns())
            .when(unknown, None)
            .otherwise(F.col("time_ns") - F.col("_prev_time")),
            "is_reset": reset.cast("int"),
            "inc_count": F.when(_is_histogram(), difference("count", "_prev_count")),
            "inc_sum": F.when(_is_histogram(), difference("sum", "_prev_sum")),
            "inc_bucket_counts": F.when(_is_histogram(), counts_difference),
        }
    ).drop(*_PREVIOUS_COLUMNS)
