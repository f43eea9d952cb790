"""Sustained-breach detection: consecutive breaching buckets of one series become one anomaly.

Input rows are (rule, series, bucket) candidates with ``observed`` and ``breached``. Breaching buckets
of one series form one breach while the gap between two of them is at most ``max_gap_buckets``
non-breaching (or missing) buckets (gaps and islands: a new island starts where the gap is wider). A
breach is kept when its breaching buckets add up to *more than* its rule's ``min_duration_seconds``
(bridged gaps do not count, so scattered one-bucket blips never add up to a sustained breach by
bridging); ``duration_seconds`` runs from the first breaching bucket's start to the last one's end.

A breach is judged with the buckets before the run's start that could belong to it (``breach_context``
in ``anomalies.py``): a queue time above its limit from 13:58 to 14:02 breaks a "more than 180 s" rule
although neither hourly run holds 180 s of it. The run that sees it qualify reports it, with its true
start; a breach that qualified in the earlier run too is reported again, extended (readers keep one,
``analytics.tables.read_table``).

Why tolerate a gap: bursty problems dip between bursts. A producer throttled by a quota reports
``produce.throttle.time.max`` of 5 s, then 1 s, then 0.5 s in the next push while still being throttled;
with one-bucket gaps never bridged, a throttling that lasts the whole window never counts as "more than
2 minutes". One bucket is the default: shorter than any ``for`` worth setting, and a real recovery
(two quiet buckets) still ends the breach.
"""

from __future__ import annotations

from datetime import datetime

from kip714_common.rollup import date_hour_columns
from kip714_common.schemas import ANOMALY_SCHEMA, CLIENT_IDENTITY_COLUMNS
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

RULE_COLUMNS = (
    "kind",
    "rule_name",
    "metric_name",
    "field",
    "client_group",
    "comparison",
    "threshold",
    "critical_threshold",
    "min_duration_seconds",
    "description",
    "baseline_kind",  # own | peers (null for a static rule)
    "peer_group",  # the peers' group for a peer baseline, e.g. group_id=orders
)
SERIES_COLUMNS = (*CLIENT_IDENTITY_COLUMNS, "attributes_key")
DEFAULT_MAX_GAP_BUCKETS = 1


def is_finite(value: Column) -> Column:
    """True for a number that is neither null, NaN nor infinite.

    The Java client reports NaN for a ``max``/``avg`` with no samples (an idle node), and Spark orders
    NaN above every number: unguarded, it would breach every ``>`` threshold.
    """
    return value.isNotNull() & ~F.isnan(value) & (F.abs(value) != F.lit(float("inf")))


def breach_condition(observed: Column, comparison: Column, threshold: Column) -> Column:
    """``observed <comparison> threshold`` for a comparison held in a column; never true for NaN/inf."""
    return F.when(~is_finite(observed), F.lit(False)).otherwise(
        F.when(comparison == ">", observed > threshold)
        .when(comparison == ">=", observed >= threshold)
        .when(comparison == "<", observed < threshold)
        .when(comparison == "<=", observed <= threshold)
        .otherwise(F.lit(False))
    )


def sustained_breaches(
    candidates: DataFrame,
    max_gap_buckets: int = DEFAULT_MAX_GAP_BUCKETS,
    judged_from: datetime | None = None,
) -> DataFrame:
    """Anomalies (``ANOMALY_SCHEMA``) from candidate rows; see module docstring for the columns.

    ``judged_from``: the run's start when the candidates also cover buckets before it (the breach
    context): a breach is kept only if it reaches into the run, and is filed under the run's hours.
    """
    breaching = candidates.where(F.col("breached")).withColumn(
        "_bucket_index", F.floor(F.unix_seconds("bucket_start") / F.col("bucket_seconds"))
    )
    run = Window.partitionBy(*RULE_COLUMNS, *SERIES_COLUMNS).orderBy("_bucket_index")
    upward = F.col("comparison").startswith(">")
    step = F.col("_bucket_index") - F.lag("_bucket_index").over(run)
    starts_island = F.coalesce(step > max_gap_buckets + 1, F.lit(True)).cast("int")
    islands = (
        breaching.withColumn("_starts_island", starts_island)
        .withColumn("_island", F.sum("_starts_island").over(run))
        .groupBy(*RULE_COLUMNS, *SERIES_COLUMNS, "_island")
        .agg(
            F.min("bucket_start").alias("breach_start"),
            F.max(F.col("bucket_start") + F.make_interval(secs=F.col("bucket_seconds"))).alias("breach_end"),
            F.count(F.lit(1)).alias("breached_buckets"),
            F.max("bucket_seconds").alias("_bucket_seconds"),
            F.max("observed").alias("_highest"),
            F.min("observed").alias("_lowest"),
            F.avg("observed").alias("mean_value"),
            F.max_by("attributes", "bucket_start").alias("attributes"),
        )
        .withColumn("duration_seconds", F.unix_seconds("breach_end") - F.unix_seconds("breach_start"))
        .where(F.col("breached_buckets") * F.col("_bucket_seconds") > F.col("min_duration_seconds"))
    )
    filed_at = F.col("breach_start")
    if judged_from is not None:
        islands = islands.where(F.col("breach_end") > F.lit(judged_from))
        filed_at = F.greatest(filed_at, F.lit(judged_from))
    peak = F.when(upward, F.col("_highest")).otherwise(F.col("_lowest"))
    excess = F.when(upward, peak - F.col("threshold")).otherwise(F.col("threshold") - peak)
    critical = F.col("critical_threshold").isNotNull() & breach_condition(
        peak, F.col("comparison"), F.col("critical_threshold")
    )
    date, hour = date_hour_columns(filed_at)
    columns: dict[str, Column] = {
        **{name: F.col(name) for name in (*RULE_COLUMNS, *SERIES_COLUMNS)},
        "severity": F.when(critical, "critical").otherwise("warning"),
        "attributes": F.col("attributes"),
        "peak_value": peak,
        "mean_value": F.col("mean_value"),
        "excess": excess,
        "excess_ratio": peak / F.when(F.col("threshold") != 0, F.col("threshold")),
        "breach_start": F.col("breach_start"),
        "breach_end": F.col("breach_end"),
        "duration_seconds": F.col("duration_seconds"),
        "breached_buckets": F.col("breached_buckets"),
        "date": date,
        "hour": hour,
    }
    return islands.select(*[columns[f.name].cast(f.dataType).alias(f.name) for f in ANOMALY_SCHEMA.fields])
