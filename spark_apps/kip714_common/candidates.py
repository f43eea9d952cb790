"""Candidate rows: one per judged rollup row and rule that judges it, with the value seen and a verdict.

Every source of thresholds ends in the same ``CANDIDATE_COLUMNS``, so ``breaches.sustained_breaches``
turns them all into anomalies the same way: static rules (``--rules``), a series' own baseline (learned
from its history, ``baselines.learn_baselines``) and its peers' baseline (``baselines.peer_candidates``).
"""

from __future__ import annotations

from kip714_common.baselines import BASELINE_KEYS
from kip714_common.breaches import RULE_COLUMNS, breach_condition
from kip714_common.rules import StaticRule
from kip714_common.schemas import CLIENT_IDENTITY_COLUMNS
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

JUDGED_COLUMNS = (
    "metric_name",
    "attributes",
    "attributes_key",
    "bucket_start",
    "bucket_seconds",
    "signal",
    "resource_attributes",  # group_id of consumers, for peer baselines
)
"""Rollup columns every candidate needs besides the client's; rules add their ``field``."""
CANDIDATE_COLUMNS = (
    *RULE_COLUMNS,
    *CLIENT_IDENTITY_COLUMNS,
    "attributes",
    "attributes_key",
    "bucket_start",
    "bucket_seconds",
    "observed",
    "breached",
)


def judged_columns(rules: list[StaticRule]) -> list[str]:
    """Only the rollup columns candidates read: a rollup row is ~40 columns, maps among them."""
    return [
        *CLIENT_IDENTITY_COLUMNS,
        *JUDGED_COLUMNS,
        *sorted({rule.field for rule in rules} - set(JUDGED_COLUMNS)),
    ]


def static_candidates(current: DataFrame, rules: list[StaticRule]) -> DataFrame | None:
    """Candidate rows of every static rule, from one scan of the rollups (None without rules).

    A rollup row becomes one candidate per rule it matches: one scan instead of one per rule (the default
    rules over 1.67M rollup rows: the app in 1.55 s instead of 2.0 s).
    """
    if not rules:
        return None
    verdicts = [F.when(_rule_filter(rule), _static_verdict(rule)) for rule in rules]
    matched = (
        current.where(F.col("metric_name").isin(*sorted({rule.metric for rule in rules})))
        .withColumn("_rule", F.explode(F.array(*verdicts)))
        .where(F.col("_rule").isNotNull())
    )
    from_row = {
        "kind": F.lit("static"),
        "metric_name": F.col("metric_name"),
        "client_group": F.col("client_group"),
        "baseline_kind": F.lit(None).cast("string"),
        "peer_group": F.lit(None).cast("string"),
    }
    columns = [
        (from_row[name] if name in from_row else F.col(f"_rule.{name}")).alias(name)
        if name in RULE_COLUMNS or name in ("observed", "breached")
        else F.col(name)
        for name in CANDIDATE_COLUMNS
    ]
    return matched.select(*columns)


def _rule_filter(rule: StaticRule) -> Column:
    condition = F.col("metric_name") == rule.metric
    for selector, pattern in rule.match.items():
        condition = condition & F.coalesce(F.col(selector).rlike(f"^(?:{pattern})$"), F.lit(False))
    return condition


def _static_verdict(rule: StaticRule) -> Column:
    """The rule's columns, the value it reads and whether that value breaches it."""
    observed = F.col(rule.field).cast("double")
    return F.struct(
        F.lit(rule.name).alias("rule_name"),
        F.lit(rule.field).alias("field"),
        F.lit(rule.comparison).alias("comparison"),
        F.lit(rule.threshold).cast("double").alias("threshold"),
        F.lit(rule.critical_threshold).cast("double").alias("critical_threshold"),
        F.lit(rule.for_seconds).alias("min_duration_seconds"),
        F.lit(rule.description).alias("description"),
        observed.alias("observed"),
        F.coalesce(
            breach_condition(observed, F.lit(rule.comparison), F.lit(rule.threshold)), F.lit(False)
        ).alias("breached"),
    )


def baseline_candidates(current: DataFrame, baselines: DataFrame, min_duration: int) -> DataFrame:
    """Each judged row against its own series' learned baseline (``baseline_kind`` own)."""
    return current.join(F.broadcast(baselines), list(BASELINE_KEYS)).select(
        F.lit("baseline").alias("kind"),
        F.concat(F.lit("baseline:"), F.col("metric_name")).alias("rule_name"),
        F.col("metric_name"),
        F.lit("signal").alias("field"),
        F.col("client_group"),
        F.lit(">").alias("comparison"),
        F.col("threshold"),
        F.col("critical_threshold"),
        F.lit(min_duration).alias("min_duration_seconds"),
        F.concat(
            F.lit("above median + k x MAD of this series' "),
            F.col("history_buckets").cast("string"),
            F.lit(" buckets before the window"),
        ).alias("description"),
        F.lit("own").alias("baseline_kind"),
        F.lit(None).cast("string").alias("peer_group"),
        *CLIENT_IDENTITY_COLUMNS,
        "attributes",
        "attributes_key",
        "bucket_start",
        "bucket_seconds",
        F.col("signal").alias("observed"),
        F.coalesce(breach_condition(F.col("signal"), F.lit(">"), F.col("threshold")), F.lit(False)).alias(
            "breached"
        ),
    )
