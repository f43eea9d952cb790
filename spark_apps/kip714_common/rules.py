"""Static threshold rules, read from a JSON file (``spark_apps/rules/default_rules.json`` is the example).

    {"rules": [{"name": "producer-record-queue-time", "metric": "producer.record.queue.time.max",
                "field": "max", "comparison": ">", "threshold": 5000, "critical_threshold": 15000,
                "for_seconds": 180, "match": {"client_id": "orders-.*"}}]}

``metric`` is normalised like landed names (so ``org.apache.kafka.producer.record.queue.time.max`` works
too); ``field`` is a rollup column; a breach must last *more than* ``for_seconds``; ``match`` holds
whole-value regexes on the broker-added labels (all must match).

This module is the rules file's one schema: the troubleshooting DAG writes its file with ``rule_entry``
and checks it with ``parse_rules``, the loader the anomalies app runs. Imports inside the package are
relative so the provider can import it as ``spark_apps.kip714_common.rules`` (pure Python until a rule
is parsed; ``names`` needs pyspark).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .errors import SparkAppInputError
from .metric_names import normalise_metric_name
from .selectors import RULE_SELECTORS, regex_problem

RULE_FIELDS = (
    "count",
    "min",
    "max",
    "avg",
    "sum",
    "last",
    "increase",
    "rate_per_second",
    "histogram_count",
    "histogram_sum",
    "p50",
    "p95",
    "p99",
    "signal",
)
COMPARISONS = (">", ">=", "<", "<=")
RULE_NAME_MAX_LENGTH = 100
MAX_FOR_SECONDS = 30 * 86_400
"""A breach this long is judged with as much data before each run (``anomalies.breach_context``)."""
RULE_NAME_PATTERN = re.compile(rf"[A-Za-z0-9_.-]{{1,{RULE_NAME_MAX_LENGTH}}}")
RULE_KEYS = {
    "name",
    "description",
    "metric",
    "field",
    "comparison",
    "threshold",
    "critical_threshold",
    "for_seconds",
    "match",
}


@dataclass(frozen=True)
class StaticRule:
    name: str
    metric: str
    field: str
    comparison: str
    threshold: float
    for_seconds: int
    critical_threshold: float | None = None
    match: Mapping[str, str] = field(default_factory=dict)
    description: str = ""


def rule_entry(
    name: str,
    metric: str,
    field: str,
    comparison: str,
    threshold: float,
    for_seconds: int,
    match: Mapping[str, str],
    critical_threshold: float | None = None,
    description: str = "",
) -> dict[str, object]:
    """One rule as the file holds it (what ``parse_rule`` reads back)."""
    entry: dict[str, object] = {
        "name": name,
        "description": description,
        "metric": metric,
        "field": field,
        "comparison": comparison,
        "threshold": threshold,
        "for_seconds": for_seconds,
        "match": dict(match),
    }
    if critical_threshold is not None:
        entry["critical_threshold"] = critical_threshold
    return entry


def _number(where: str, value: object, *, required: bool) -> float | None:
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SparkAppInputError(where, "must be a number", value)
    if not math.isfinite(value):
        raise SparkAppInputError(where, "must be a finite number (not NaN or infinite)", value)
    return float(value)


def _critical_threshold(
    where: str, raw: Mapping[str, object], threshold: float | None, comparison: str
) -> float | None:
    """The optional ``critical_threshold``: no nearer than ``threshold`` in the rule's direction."""
    critical = _number(f"{where}.critical_threshold", raw.get("critical_threshold"), required=False)
    if critical is not None and threshold is not None:
        beyond = critical >= threshold if comparison.startswith(">") else critical <= threshold
        if not beyond:
            raise SparkAppInputError(
                f"{where}.critical_threshold",
                f"must be at least as far as threshold in direction {comparison}",
            )
    return critical


def _match(where: str, raw: Mapping[str, object]) -> dict[str, str]:
    """The optional ``match``: selector -> non-empty regex (``regex_problem`` finding nothing wrong)."""
    match = raw.get("match", {})
    if not isinstance(match, dict):
        raise SparkAppInputError(f"{where}.match", "must be an object of selector -> regex", match)
    for selector, pattern in match.items():
        if selector not in RULE_SELECTORS:
            raise SparkAppInputError(
                f"{where}.match.{selector}", f"is not a selector (allowed: {', '.join(RULE_SELECTORS)})"
            )
        problem = regex_problem(pattern) if isinstance(pattern, str) and pattern else "must be non-empty"
        if problem is not None:  # the rest of Java's regex syntax is Spark's (rlike) to judge
            raise SparkAppInputError(
                f"{where}.match.{selector}", f"must be a valid regex ({problem})", pattern
            )
    return dict(match)


def parse_rule(index: int, raw: object, metric_aliases: Mapping[str, str] | None = None) -> StaticRule:
    where = f"rules[{index}]"
    if not isinstance(raw, dict):
        raise SparkAppInputError(where, "must be a JSON object", raw)
    unknown = sorted(set(raw) - RULE_KEYS)
    if unknown:
        raise SparkAppInputError(f"{where}.{unknown[0]}", f"is not a rule key (allowed: {sorted(RULE_KEYS)})")
    name = raw.get("name")
    if not isinstance(name, str) or not RULE_NAME_PATTERN.fullmatch(name):
        raise SparkAppInputError(
            f"{where}.name", f"must be 1-{RULE_NAME_MAX_LENGTH} characters of letters, digits, _ . -", name
        )
    metric = raw.get("metric")
    if not isinstance(metric, str) or not metric.strip():
        raise SparkAppInputError(f"{where}.metric", "must be a non-empty metric name", metric)
    rule_field = raw.get("field", "signal")
    if rule_field not in RULE_FIELDS:
        raise SparkAppInputError(f"{where}.field", f"must be one of {', '.join(RULE_FIELDS)}", rule_field)
    comparison = raw.get("comparison", ">")
    if comparison not in COMPARISONS:
        raise SparkAppInputError(f"{where}.comparison", f"must be one of {' '.join(COMPARISONS)}", comparison)
    threshold = _number(f"{where}.threshold", raw.get("threshold"), required=True)
    critical = _critical_threshold(where, raw, threshold, comparison)
    for_seconds = raw.get("for_seconds", 0)
    if isinstance(for_seconds, bool) or not isinstance(for_seconds, int) or for_seconds < 0:
        raise SparkAppInputError(
            f"{where}.for_seconds", "must be a whole number of seconds >= 0", for_seconds
        )
    if for_seconds > MAX_FOR_SECONDS:
        raise SparkAppInputError(
            f"{where}.for_seconds", f"must be at most {MAX_FOR_SECONDS} seconds (30 days)", for_seconds
        )
    match = _match(where, raw)
    description = raw.get("description", "")
    return StaticRule(
        name=name,
        metric=normalise_metric_name(metric, {**(metric_aliases or {})}),
        field=rule_field,
        comparison=comparison,
        threshold=float(threshold),  # type: ignore[arg-type]
        for_seconds=for_seconds,
        critical_threshold=critical,
        match=match,
        description=str(description),
    )


def parse_rules(document: object, metric_aliases: Mapping[str, str] | None = None) -> list[StaticRule]:
    if not isinstance(document, dict) or not isinstance(document.get("rules"), list):
        raise SparkAppInputError("rules", 'the file must hold {"rules": [...]}')
    rules = [parse_rule(i, raw, metric_aliases) for i, raw in enumerate(document["rules"])]
    names = [rule.name for rule in rules]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SparkAppInputError("rules[].name", "must be unique", duplicates[0])
    return rules


def load_rules(path: str | None, metric_aliases: Mapping[str, str] | None = None) -> list[StaticRule]:
    """Rules from a local JSON file (``--rules``); none when ``path`` is None."""
    if path is None:
        return []
    try:
        document = json.loads(Path(path).read_text())
    except OSError as err:
        raise SparkAppInputError("--rules", f"must be a readable file ({err.strerror})", path) from err
    except json.JSONDecodeError as err:
        raise SparkAppInputError(
            "--rules", f"must be valid JSON ({err.msg} at line {err.lineno})", path
        ) from err
    return parse_rules(document, metric_aliases)
