"""The ``kip714_troubleshoot`` request: the form's values, validated before the cluster is touched.

The subscription part is checked by ``Subscription`` (Kafka's own rules; the broker judges regexes
when the window opens), the rest (thresholds, bucket, counts) here. Errors name the field and the rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from dataclasses import fields as dataclass_fields
from typing import Any

from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.contract.selectors import (
    SELECTORS,
    MatchSelector,
    control_characters_problem,
    parse_match,
)
from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.findings.model import EXTRA_KEY, Finding, FindingError
from airflow_provider_kip714.settings import CONN_ID_RULE, is_conn_id
from airflow_provider_kip714.subscriptions.model import (
    ALL_METRICS,
    MAX_INTERVAL_MS,
    MIN_INTERVAL_MS,
    Subscription,
    parse_metrics,
    prefix_problem,
)
from airflow_provider_kip714.troubleshooting.form import (
    BASELINE_BUCKETS,
    BUCKETS,
    MAX_CLIENTS,
    MAX_WINDOW_S,
    MIN_WINDOW_S,
    OPENED_BY_KEY,
    THRESHOLD_FIELDS,
    form_defaults,
)
from spark_apps.kip714_common.metric_names import KAFKA_PREFIX, clean_metric_name, normalise_metric_name
from spark_apps.kip714_common.rules import COMPARISONS


@dataclass(frozen=True)
class StaticThreshold:
    metric_prefix: str
    threshold: float
    field: str = "signal"
    comparison: str = ">"
    critical_threshold: float | None = None
    for_seconds: int = 0


@dataclass(frozen=True)
class TroubleshootingRequest:
    """A validated form: what the subscription, the sensor, the landing and the apps are given.

    Validated once, where it enters (``from_params``, the DAG's first task); later tasks get it back
    from XCom with ``from_xcom`` (the dict ``as_xcom`` wrote), typed and without judging the form again.
    """

    kafka_config_id: str
    selectors: tuple[MatchSelector, ...]
    metrics: tuple[str, ...]
    interval_ms: int
    window_seconds: int
    min_clients: int
    bucket: str
    thresholds: tuple[StaticThreshold, ...]
    use_default_rules: bool
    baseline_min_buckets: int
    baseline_for_seconds: int
    opened_by_finding: dict[str, Any] | None = None
    """The finding that opened this window (``Finding.as_extra()["finding"]``, checked), or None."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TroubleshootingRequest:
        """Validate every field; raises ``SubscriptionValidationError`` naming the field and the rule.

        Types are checked, not coerced: a value of the wrong type (a list where a regex belongs,
        ``'false'`` for a flag, a number for the metric list) is refused, never turned into text that
        means something else.
        """
        if not isinstance(params, Mapping):
            raise SubscriptionValidationError("params", "must be an object of the form's fields", params)
        defaults = form_defaults()
        unknown = sorted((key for key in params if key not in defaults), key=str)
        if unknown:  # a misspelt field would otherwise fall back to its default without a word
            raise SubscriptionValidationError(
                printable(unknown[0], _MAX_FIELD_NAME),
                f"is not a field of the form (its fields: {', '.join(defaults)})",
            )
        params = {**defaults, **params}  # a missing field means what the form shows, as in the UI
        for selector in SELECTORS:
            _optional_text(selector, params.get(selector))
        fields = [f"{s}={params[s]}" for s in SELECTORS if params.get(s) not in (None, "")]
        extra = _list_of_text("match", params.get("match"), "selector=regex strings")
        selectors = parse_match([*fields, *extra])
        match = tuple(selector.render() for selector in selectors)
        metrics = parse_metrics(_list_of_text("metrics", params.get("metrics"), "metric-name prefixes"))
        if not metrics:
            raise SubscriptionValidationError(
                "metrics", "must list at least one metric-name prefix (* = all); empty would collect nothing"
            )
        interval_ms = params["interval_ms"]
        if isinstance(interval_ms, bool) or not isinstance(interval_ms, int):  # "5000" is not coerced
            raise SubscriptionValidationError(
                "interval_ms",
                f"must be a whole number of milliseconds ({MIN_INTERVAL_MS}..{MAX_INTERVAL_MS})",
                interval_ms,
            )
        # Kafka's own rules (interval range, selectors, regexes, metrics), before any cluster call
        try:
            subscription = Subscription.from_spec(
                name="validation-only", metrics=metrics, interval_ms=interval_ms, match=match
            )
        except SubscriptionValidationError as err:  # named as the form names it
            field = "interval_ms" if err.field == "interval.ms" else err.field
            raise SubscriptionValidationError(field, err.rule, err.value) from None
        window_seconds = _whole("window_seconds", params.get("window_seconds"), MIN_WINDOW_S, MAX_WINDOW_S)
        bucket = params["bucket"]
        if bucket not in BUCKETS:
            raise SubscriptionValidationError("bucket", f"must be one of {', '.join(BUCKETS)}", bucket)
        kafka_config_id = params.get("kafka_config_id")
        if not isinstance(kafka_config_id, str) or not is_conn_id(kafka_config_id.strip()):
            raise SubscriptionValidationError(
                "kafka_config_id", f"must name an Airflow connection ({CONN_ID_RULE})", kafka_config_id
            )
        thresholds = params.get("thresholds")
        use_default_rules = params["use_default_rules"]
        if not isinstance(use_default_rules, bool):
            raise SubscriptionValidationError("use_default_rules", "must be true or false", use_default_rules)
        return cls(
            kafka_config_id=kafka_config_id.strip(),
            selectors=selectors,
            metrics=tuple(metrics),
            interval_ms=subscription.interval_ms,
            window_seconds=window_seconds,
            min_clients=_whole("min_clients", params["min_clients"], 1, MAX_CLIENTS),
            bucket=bucket,
            thresholds=collected_thresholds(
                parse_thresholds([] if thresholds is None else thresholds), metrics
            ),
            use_default_rules=use_default_rules,
            baseline_min_buckets=_whole(
                "baseline_min_buckets", params["baseline_min_buckets"], *BASELINE_BUCKETS
            ),
            baseline_for_seconds=_whole(
                "baseline_for_seconds", params["baseline_for_seconds"], 0, MAX_WINDOW_S
            ),
            opened_by_finding=_opened_by(params.get(OPENED_BY_KEY)),
        )

    @property
    def match(self) -> tuple[str, ...]:
        """The selectors as Kafka's ``match`` entries (``selector=regex``)."""
        return tuple(selector.render() for selector in self.selectors)

    def match_map(self) -> dict[str, str]:
        """Selector -> regex (what the report, the rules and the Spark apps filter clients by)."""
        return {selector.selector: selector.pattern for selector in self.selectors}

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``match`` as ``selector=regex`` strings, thresholds as objects (also the report's
        "Request" table)."""
        values = {f.name: getattr(self, f.name) for f in dataclass_fields(self) if f.name != "selectors"}
        return {
            **values,
            "match": list(self.match),
            "metrics": list(self.metrics),
            "thresholds": [asdict(threshold) for threshold in self.thresholds],
        }

    def as_xcom(self) -> dict[str, Any]:
        """What ``validate_request`` pushes; ``from_xcom`` reads it back. Selectors travel as
        ``[selector, regex]`` pairs, so reading them back is not parsing them again."""
        return {**self.as_dict(), "match": [[s.selector, s.pattern] for s in self.selectors]}

    @classmethod
    def from_xcom(cls, value: Mapping[str, Any]) -> TroubleshootingRequest:
        """The request ``as_xcom`` wrote, validated upstream: rebuilt as typed values, not re-judged.

        A value of another shape (a hand-edited XCom, an older version's) fails here naming the key."""
        try:
            return cls(
                kafka_config_id=str(value["kafka_config_id"]),
                selectors=tuple(MatchSelector(str(s), str(p)) for s, p in value["match"]),
                metrics=tuple(str(m) for m in value["metrics"]),
                interval_ms=int(value["interval_ms"]),
                window_seconds=int(value["window_seconds"]),
                min_clients=int(value["min_clients"]),
                bucket=str(value["bucket"]),
                thresholds=tuple(StaticThreshold(**t) for t in value["thresholds"]),
                use_default_rules=bool(value["use_default_rules"]),
                baseline_min_buckets=int(value["baseline_min_buckets"]),
                baseline_for_seconds=int(value["baseline_for_seconds"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise SubscriptionValidationError(
                "request", f"is not a validated troubleshooting request ({err})"
            ) from None


_MAX_FIELD_NAME = 80


def _opened_by(value: object) -> dict[str, Any] | None:
    """The opening finding as its JSON form, after ``Finding.from_extra`` accepted it (or None)."""
    if value is None:
        return None
    try:
        return Finding.from_extra({EXTRA_KEY: value}).as_extra()[EXTRA_KEY]
    except FindingError as err:
        rule = str(err).removeprefix(f"extra.{EXTRA_KEY}").lstrip(".:").strip()
        raise SubscriptionValidationError(OPENED_BY_KEY, rule or "must be a finding") from None


def _optional_text(field: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise SubscriptionValidationError(field, "must be a regex string (or empty)", value)
    # checked before the selector is built, which trims the ends (a trailing newline would vanish)
    if value is not None and (problem := control_characters_problem(value)) is not None:
        raise SubscriptionValidationError(field, problem, value)


def _list_of_text(field: str, value: object, what: str) -> list[str]:
    """A list of strings (``None`` is empty); anything else is refused, never turned into text."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
        raise SubscriptionValidationError(field, f"must be a list of {what}", value)
    return value


def _whole(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SubscriptionValidationError(field, f"must be a whole number in {low}..{high}", value)
    return value


def _number(field: str, value: object) -> float:
    """A finite number: NaN never breaches and infinity always does, so both are refused."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SubscriptionValidationError(field, "must be a number", value)
    try:
        number = float(value)
    except OverflowError:  # an int beyond a double's range
        number = math.inf
    if not math.isfinite(number):
        raise SubscriptionValidationError(field, "must be a finite number (not NaN or infinite)", value)
    return number


def parse_thresholds(raw: object) -> tuple[StaticThreshold, ...]:
    """The form's static thresholds: ``[{"metric_prefix", "threshold", "field", "comparison", ...}]``."""
    if not isinstance(raw, list):
        raise SubscriptionValidationError("thresholds", "must be a list of objects", raw)
    parsed = []
    for index, item in enumerate(raw):
        where = f"thresholds[{index}]"
        if not isinstance(item, dict):
            raise SubscriptionValidationError(where, "must be an object", item)
        unknown = sorted(set(item) - {f for f in StaticThreshold.__dataclass_fields__}, key=str)
        if unknown:
            raise SubscriptionValidationError(f"{where}.{unknown[0]}", "is not a threshold key")
        prefix = item.get("metric_prefix")
        if not isinstance(prefix, str) or not prefix.strip():
            raise SubscriptionValidationError(f"{where}.metric_prefix", "must be a non-empty prefix", prefix)
        if (problem := prefix_problem(prefix.strip())) is not None:
            raise SubscriptionValidationError(f"{where}.metric_prefix", problem, prefix)
        field = item.get("field", "signal")
        if field not in THRESHOLD_FIELDS:
            raise SubscriptionValidationError(
                f"{where}.field", f"must be one of {', '.join(THRESHOLD_FIELDS)}", field
            )
        comparison = item.get("comparison", ">")
        if comparison not in COMPARISONS:
            raise SubscriptionValidationError(
                f"{where}.comparison", f"must be one of {' '.join(COMPARISONS)}", comparison
            )
        threshold = _number(f"{where}.threshold", item.get("threshold"))
        critical = item.get("critical_threshold")
        if critical is not None:
            critical = _number(f"{where}.critical_threshold", critical)
            if (critical < threshold) if comparison.startswith(">") else (critical > threshold):
                raise SubscriptionValidationError(
                    f"{where}.critical_threshold",
                    f"must be at least as far as threshold in direction {comparison}",
                )
        for_seconds = _whole(f"{where}.for_seconds", item.get("for_seconds", 0), 0, MAX_WINDOW_S)
        parsed.append(StaticThreshold(prefix.strip(), threshold, field, comparison, critical, for_seconds))
    return tuple(parsed)


def _prefix_compatible(first: str, second: str) -> bool:
    return first.startswith(second) or second.startswith(first)


def collected_thresholds(
    thresholds: tuple[StaticThreshold, ...], metrics: list[str]
) -> tuple[StaticThreshold, ...]:
    """``thresholds``, after checking each could watch a metric the window collects.

    A threshold's prefix is matched against the rollups' names (lower case, ``-`` as ``.``, without
    ``org.apache.kafka.``; ``metric_names.normalise_metric_name``); the subscription collects the names that
    start with one of ``metrics``. A threshold on a metric the window does not collect never fires, which
    reads like "no anomaly" in the report, so it is refused here.
    """
    collected = [clean_metric_name(prefix) for prefix in metrics]
    if any(prefix in (ALL_METRICS, "") for prefix in collected):
        return thresholds
    for index, threshold in enumerate(thresholds):
        name = normalise_metric_name(threshold.metric_prefix, {})
        if not any(
            _prefix_compatible(prefix, KAFKA_PREFIX + name) or _prefix_compatible(prefix, name)
            for prefix in collected
        ):
            raise SubscriptionValidationError(
                f"thresholds[{index}].metric_prefix",
                f"must watch metrics the window collects (metrics: {', '.join(metrics)}); "
                "this threshold could never fire",
                threshold.metric_prefix,
            )
    return thresholds
