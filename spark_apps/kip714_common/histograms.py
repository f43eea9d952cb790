"""Histogram arithmetic as Spark SQL expressions (no Python UDFs, so executors need no Python libraries).

Percentiles are estimated from explicit buckets the way Prometheus' ``histogram_quantile`` does: find the
bucket holding the q-th observation and interpolate linearly inside it. The first bucket starts at the
point's ``min`` (or 0), the overflow bucket ends at its ``max`` (or its lower bound). Exponential
histograms are first turned into explicit ones: the zero bucket becomes ``(-inf, 0]`` and positive bucket
``i`` ends at ``base^(offset+i+1)`` with ``base = 2^(2^-scale)``; negative buckets are ignored (client
metrics are durations, sizes and counts, never negative).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F


def percentiles_expression(
    counts: str, bounds: str, low: str, high: str, quantiles: Mapping[str, float]
) -> Column:
    """A struct of estimated quantiles (``quantiles``: field name -> quantile) of the explicit histogram in
    columns ``counts``/``bounds``; null when it has no buckets, each field null when it counts nothing.

    One walk over the buckets for every quantile, the total counted once before it: Spark evaluates
    higher-order functions interpreted, element by element, with no common subexpressions, so a walk per
    quantile recounted the total at every bucket. The percentiles and the merged buckets they read are
    about 40 % of a histogram rollup's CPU; the one walk cut a histogram rollup's CPU by about a sixth
    (docs/benchmarks.md, session 25). Read the struct from a column of its own, so the walk runs once per
    row, not once per field read.
    """
    names = list(quantiles)
    if not names:
        raise ValueError("quantiles: give at least one (field name -> quantile)")
    total = f"aggregate({counts}, 0D, (acc, c) -> acc + coalesce(c, 0))"
    count = f"{counts}[i]"
    lower = f"if(i = 0, least(coalesce({low}, 0D), coalesce(get({bounds}, 0), 0D)), get({bounds}, i - 1))"
    last_bound = f"get({bounds}, i - 1)"
    upper = (
        f"if(i >= size({bounds}), greatest(coalesce({high}, {last_bound}), {last_bound}), get({bounds}, i))"
    )

    def found(k: int, quantile: float) -> str:
        """The k-th quantile once the walk reaches the bucket holding its target, interpolated inside it."""
        target, result = f"({quantile} * acc.total)", f"acc.r{k}"
        return (
            f"if({result} IS NULL AND {count} > 0 AND acc.seen + {count} >= {target}, "
            f"{lower} + ({upper} - {lower}) * (({target} - acc.seen) / {count}), {result})"
        )

    start = ", ".join(f"'r{k}', CAST(NULL AS DOUBLE)" for k in range(len(names)))
    step = ", ".join(f"'r{k}', {found(k, quantiles[name])}" for k, name in enumerate(names))
    finish = ", ".join(
        f"'{name}', if(acc.total = 0, CAST(NULL AS DOUBLE), acc.r{k})" for k, name in enumerate(names)
    )
    return F.expr(
        f"CASE WHEN {counts} IS NULL OR size({counts}) = 0 THEN NULL ELSE "
        f"aggregate(sequence(0, size({counts}) - 1), "
        f"named_struct('seen', 0D, 'total', {total}, {start}), "
        f"(acc, i) -> named_struct('seen', acc.seen + coalesce({count}, 0), 'total', acc.total, {step}), "
        f"acc -> named_struct({finish})) END"
    )


def percentile_expression(counts: str, bounds: str, low: str, high: str, quantile: float) -> Column:
    """The estimated ``quantile`` of the explicit histogram in columns ``counts``/``bounds``."""
    return percentiles_expression(counts, bounds, low, high, {"q": quantile}).getField("q")


def merged_counts_expression(counts_list: str) -> Column:
    """Element-wise sum of an array of equally long bucket-count arrays (``collect_list`` output)."""
    return F.expr(
        f"CASE WHEN size({counts_list}) = 0 THEN NULL ELSE aggregate({counts_list}, "
        f"transform({counts_list}[0], c -> 0L), "
        f"(acc, x) -> zip_with(acc, x, (a, b) -> coalesce(a, 0L) + coalesce(b, 0L))) END"
    )


def exponential_as_explicit() -> tuple[Column, Column]:
    """(bucket_counts, explicit_bounds) of an exponential histogram row, in explicit form."""
    positive = "coalesce(exp_positive_bucket_counts, CAST(array() AS array<bigint>))"
    base = "pow(2D, pow(2D, -coalesce(exp_scale, 0)))"
    offset = "coalesce(exp_positive_offset, 0)"
    counts = F.expr(f"concat(array(coalesce(exp_zero_count, 0L)), {positive})")
    bounds = F.expr(
        f"CASE WHEN size({positive}) = 0 THEN CAST(array() AS array<double>) "
        f"WHEN size({positive}) = 1 THEN array(0D) "
        f"ELSE concat(array(0D), "
        f"transform(sequence(1, size({positive}) - 1), j -> pow({base}, {offset} + j))) END"
    )
    return counts, bounds
