"""The thresholds table: one row per learned baseline and per static rule the run judged by.

The report shows it next to the anomalies, so a reader sees what "normal" was for each series: the
baseline's median, scale and threshold, or the rule's threshold and the clients it matches.
"""

from __future__ import annotations

from functools import reduce

from kip714_common.baselines import BaselineSettings
from kip714_common.cli import Interval
from kip714_common.identity import static_client_group
from kip714_common.rollup import date_hour_columns
from kip714_common.rules import StaticRule
from kip714_common.schemas import THRESHOLD_SCHEMA, conform
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

STATIC_RULE_SCHEMA = StructType(THRESHOLD_SCHEMA.fields[:9])
"""The threshold columns a static rule fills (kind .. min_duration_seconds)."""


def thresholds_frame(
    spark: SparkSession,
    baselines: DataFrame | None,
    rules: list[StaticRule],
    interval: Interval,
    settings: BaselineSettings,
    min_duration: int,
) -> DataFrame:
    """``THRESHOLD_SCHEMA`` rows of the baselines (when learned) and the rules, dated ``interval.start``."""
    date, hour = date_hour_columns(F.lit(interval.start).cast("timestamp"))
    common = {
        "interval_start": F.lit(interval.start).cast("timestamp"),
        "interval_end": F.lit(interval.end).cast("timestamp"),
        "date": date,
        "hour": hour,
    }
    frames: list[DataFrame] = []
    if baselines is not None:
        frames.append(_baseline_thresholds(baselines, common, settings, min_duration))
    if rules:
        frames.append(_static_thresholds(spark, rules, common))
    return reduce(DataFrame.unionByName, frames) if frames else spark.createDataFrame([], THRESHOLD_SCHEMA)


def _baseline_thresholds(
    baselines: DataFrame, common: dict[str, Column], settings: BaselineSettings, min_duration: int
) -> DataFrame:
    columns = {
        "kind": F.lit("baseline"),
        "rule_name": F.concat(F.lit("baseline:"), F.col("metric_name")),
        "field": F.lit("signal"),
        "comparison": F.lit(">"),
        "min_duration_seconds": F.lit(min_duration),
        "k": F.lit(settings.k),
        **common,
    }
    return conform(baselines, THRESHOLD_SCHEMA, columns)


def _static_thresholds(spark: SparkSession, rules: list[StaticRule], common: dict[str, Column]) -> DataFrame:
    rows = [
        {
            "kind": "static",
            "rule_name": r.name,
            "metric_name": r.metric,
            "field": r.field,
            "client_group": static_client_group(r.match),
            "comparison": r.comparison,
            "threshold": r.threshold,
            "critical_threshold": r.critical_threshold,
            "min_duration_seconds": r.for_seconds,
        }
        for r in rules
    ]
    static = spark.createDataFrame(rows, STATIC_RULE_SCHEMA)
    return static.select(
        *[
            _static_column(f.name, common, static.columns).cast(f.dataType).alias(f.name)
            for f in THRESHOLD_SCHEMA.fields
        ]
    )


def _static_column(name: str, common: dict[str, Column], present: list[str]) -> Column:
    if name in common:
        return common[name]
    return F.col(name) if name in present else F.lit(None)
