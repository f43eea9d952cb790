"""Learned thresholds: per metric and client group, median + k x MAD over the history, with a floor.

Why median/MAD: client metrics are heavy-tailed (latency spikes, bursts), and the history may already
contain the incident being looked for. Median and the median absolute deviation ignore up to half the
points being outliers, where mean/stddev (or an EWMA) get dragged towards the anomaly and hide it.
``scale = 1.4826 x MAD`` equals the standard deviation for normal noise, so ``k`` reads as "sigmas".

The floor: a flat series has MAD = 0 and would flag any wobble. The scale used is therefore at least
``max(relative_floor x |median|, absolute_floor)``: by default a value must exceed the median by k x 10 %
of the median (and by k x ``absolute_floor`` when the median is 0) before it can breach.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

NORMAL_CONSISTENCY = 1.4826
APPROX_ACCURACY = 1_000
"""percentile_approx relative error 1/1000: ample for thresholds, small per-group digests."""


@dataclass(frozen=True)
class BaselineSettings:
    k: float = 4.0
    relative_floor: float = 0.1
    absolute_floor: float = 1.0
    min_history_buckets: int = 10
    critical_factor: float = 2.0
    """Critical threshold = median + critical_factor x k x scale."""


def client_group_column(group_by: tuple[str, ...]) -> Column:
    """``software|client_id`` (by default): the client group a baseline is learned for."""
    return F.concat_ws("|", *[F.coalesce(F.col(name), F.lit("")) for name in group_by])


def learn_baselines(history: DataFrame, settings: BaselineSettings) -> DataFrame:
    """Per (metric_name, client_group): median, mad, scale, threshold, critical_threshold, history_buckets."""
    keys = ("metric_name", "client_group")
    medians = history.groupBy(*keys).agg(
        F.percentile_approx("signal", 0.5, APPROX_ACCURACY).alias("median"),
        F.count(F.lit(1)).alias("history_buckets"),
        F.min("bucket_start").alias("history_start"),
    )
    deviations = (
        history.join(medians, list(keys))
        .groupBy(*keys)
        .agg(F.percentile_approx(F.abs(F.col("signal") - F.col("median")), 0.5, APPROX_ACCURACY).alias("mad"))
    )
    floor = F.greatest(F.abs(F.col("median")) * settings.relative_floor, F.lit(settings.absolute_floor))
    scale = F.greatest(F.col("mad") * NORMAL_CONSISTENCY, floor)
    return (
        medians.join(deviations, list(keys))
        .where(F.col("history_buckets") >= settings.min_history_buckets)
        .withColumn("scale", scale)
        .withColumn("threshold", F.col("median") + settings.k * F.col("scale"))
        .withColumn(
            "critical_threshold", F.col("median") + settings.critical_factor * settings.k * F.col("scale")
        )
    )
