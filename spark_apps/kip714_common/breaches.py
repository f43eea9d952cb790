"""Sustained-breach detection: consecutive breaching buckets of one series become one anomaly.

Input rows are (rule, series, bucket) candidates with ``observed`` and ``breached``. Breaching buckets
whose bucket index runs without a gap form one breach (the classic gaps-and-islands trick: index minus
row number is constant along a run). A breach is kept when it lasts *more than* its rule's
``min_duration_seconds``; duration counts whole buckets, so it is exact to the bucket size.
"""

from __future__ import annotations

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
)
SERIES_COLUMNS = (*CLIENT_IDENTITY_COLUMNS, "attributes_key")


def breach_condition(observed: Column, comparison: Column, threshold: Column) -> Column:
    """``observed <comparison> threshold`` for a comparison held in a column."""
    return (
        F.when(comparison == ">", observed > threshold)
        .when(comparison == ">=", observed >= threshold)
        .when(comparison == "<", observed < threshold)
        .when(comparison == "<=", observed <= threshold)
        .otherwise(F.lit(False))
    )


def sustained_breaches(candidates: DataFrame) -> DataFrame:
    """Anomalies (``ANOMALY_SCHEMA``) from candidate rows; see module docstring for the columns."""
    breaching = candidates.where(F.col("breached")).withColumn(
        "_bucket_index", F.floor(F.unix_seconds("bucket_start") / F.col("bucket_seconds"))
    )
    run = Window.partitionBy(*RULE_COLUMNS, *SERIES_COLUMNS).orderBy("_bucket_index")
    upward = F.col("comparison").startswith(">")
    islands = (
        breaching.withColumn("_island", F.col("_bucket_index") - F.row_number().over(run))
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
        .withColumn("duration_seconds", F.col("breached_buckets") * F.col("_bucket_seconds"))
        .where(F.col("duration_seconds") > F.col("min_duration_seconds"))
    )
    peak = F.when(upward, F.col("_highest")).otherwise(F.col("_lowest"))
    excess = F.when(upward, peak - F.col("threshold")).otherwise(F.col("threshold") - peak)
    critical = F.col("critical_threshold").isNotNull() & breach_condition(
        peak, F.col("comparison"), F.col("critical_threshold")
    )
    date, hour = date_hour_columns(F.col("breach_start"))
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
