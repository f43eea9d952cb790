"""The ``kip714_troubleshoot`` request: its Param form, its validation, and the steps that need code.

Everything a user types in the form is checked here before the cluster is touched: the subscription
part by ``Subscription`` (Kafka's own rules), the rest (thresholds, bucket) by this module; errors
name the field and the rule. The DAG file only wires these steps to operators.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import pyarrow.compute as pc
import pyarrow.dataset as ds
from airflow.sdk import Param

from airflow_provider_kip714.contract.selectors import RULE_SELECTORS
from airflow_provider_kip714.exceptions import Kip714Error, SubscriptionValidationError
from airflow_provider_kip714.storage.data_root import Zone
from airflow_provider_kip714.subscriptions.model import (
    MAX_INTERVAL_MS,
    MIN_INTERVAL_MS,
    SELECTORS,
    Subscription,
    parse_match,
    parse_metrics,
)
from airflow_provider_kip714.subscriptions.window_name import parse_window_name

log = logging.getLogger(__name__)

KAFKA_PREFIX = "org.apache.kafka."
DEFAULT_METRICS = (KAFKA_PREFIX,)
BUCKETS = ("5s", "10s", "15s", "30s", "1m", "5m")
THRESHOLD_FIELDS = ("signal", "avg", "max", "min", "last", "p95", "p99", "rate_per_second")
"""Rollup columns a form threshold may watch (a subset of the anomalies app's ``RULE_FIELDS``)."""
COMPARISONS = (">", ">=", "<", "<=")
MIN_WINDOW_S = 10
MAX_WINDOW_S = 24 * 3600
RULE_NAME_LIMIT = 100
SELECTOR_HELP = "Regex that must match the whole value (Java regex, as the broker applies it); empty = any."


def troubleshoot_params() -> dict[str, Param]:
    """The Param form of ``kip714_troubleshoot``; the defaults work against ``kip714 local-kafka``."""
    selector_params = {
        selector: Param(
            None,
            type=["null", "string"],
            title=f"Match {selector}",
            description=f"KIP-714 selector {selector}. {SELECTOR_HELP}",
            section="Which clients",
        )
        for selector in SELECTORS
    }
    return {
        "kafka_config_id": Param(
            "kafka_default",
            type="string",
            minLength=1,
            title="Kafka connection",
            description="Airflow connection (librdkafka config in extra) of the cluster to troubleshoot.",
            section="Cluster",
        ),
        **selector_params,
        "extra_match": Param(
            [],
            type="array",
            items={"type": "string"},
            title="More selectors",
            description="Extra selector=regex entries, e.g. client_id=orders-.* (ANDed with the above).",
            section="Which clients",
        ),
        "min_clients": Param(
            1,
            type="integer",
            minimum=1,
            maximum=10000,
            title="Clients to wait for",
            description="The window's analysis starts once this many matching clients pushed.",
            section="Which clients",
        ),
        "metrics": Param(
            list(DEFAULT_METRICS),
            type="array",
            items={"type": "string", "minLength": 1},
            minItems=1,
            title="Metric prefixes",
            description="Metric-name prefixes to collect, e.g. org.apache.kafka.consumer. ; * = all.",
            section="What to collect",
        ),
        "interval_ms": Param(
            5000,
            type="integer",
            minimum=MIN_INTERVAL_MS,
            maximum=MAX_INTERVAL_MS,
            title="Push interval (ms)",
            description=f"How often clients push, {MIN_INTERVAL_MS}..{MAX_INTERVAL_MS} ms (Kafka's limits).",
            section="What to collect",
        ),
        "window_seconds": Param(
            120,
            type="integer",
            minimum=MIN_WINDOW_S,
            maximum=MAX_WINDOW_S,
            title="Window length (s)",
            description="How long the subscription lives; it is deleted afterwards on every path.",
            section="What to collect",
        ),
        "bucket": Param(
            "10s",
            type="string",
            enum=list(BUCKETS),
            title="Time bucket",
            description="Rollup bucket of the plots and anomaly detection.",
            section="Analysis",
        ),
        "thresholds": Param(
            [],
            type="array",
            title="Static thresholds",
            description=(
                'Per metric prefix, e.g. [{"metric_prefix": "org.apache.kafka.consumer.fetch.manager.'
                'fetch.latency", "field": "max", "comparison": ">", "threshold": 500, "for_seconds": 0}].'
            ),
            items={
                "type": "object",
                "required": ["metric_prefix", "threshold"],
                "additionalProperties": False,
                "properties": {
                    "metric_prefix": {"type": "string", "minLength": 1},
                    "field": {"type": "string", "enum": list(THRESHOLD_FIELDS)},
                    "comparison": {"type": "string", "enum": list(COMPARISONS)},
                    "threshold": {"type": "number"},
                    "critical_threshold": {"type": ["number", "null"]},
                    "for_seconds": {"type": "integer", "minimum": 0},
                },
            },
            section="Analysis",
        ),
        "use_default_rules": Param(
            True,
            type="boolean",
            title="Apply the default rules",
            description="Also apply spark_apps/rules/default_rules.json (KIP-714's example rules).",
            section="Analysis",
        ),
        "baseline_min_buckets": Param(
            6,
            type="integer",
            minimum=3,
            maximum=10000,
            title="Baseline: buckets needed",
            description="Learn a median + k*MAD baseline per metric and client once this many buckets exist.",
            section="Analysis",
        ),
        "baseline_for_seconds": Param(
            30,
            type="integer",
            minimum=0,
            maximum=MAX_WINDOW_S,
            title="Baseline: breach must last (s)",
            description="A baseline breach is an anomaly when it lasts longer than this.",
            section="Analysis",
        ),
    }


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
    """A validated form: what the subscription, the sensor, the landing and the apps are given."""

    kafka_config_id: str
    match: tuple[str, ...]
    metrics: tuple[str, ...]
    interval_ms: int
    window_seconds: int
    min_clients: int
    bucket: str
    thresholds: tuple[StaticThreshold, ...]
    use_default_rules: bool
    baseline_min_buckets: int
    baseline_for_seconds: int

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TroubleshootingRequest:
        """Validate every field; raises ``SubscriptionValidationError`` naming the field and the rule."""
        selectors = [f"{s}={params[s]}" for s in SELECTORS if params.get(s) not in (None, "")]
        extra = params.get("extra_match") or []
        if not isinstance(extra, list) or not all(isinstance(e, str) for e in extra):
            raise SubscriptionValidationError(
                "extra_match", "must be a list of selector=regex strings", extra
            )
        match = tuple(selector.render() for selector in parse_match([*selectors, *extra]))
        metrics = parse_metrics(params.get("metrics"))
        if not metrics:
            raise SubscriptionValidationError(
                "metrics", "must list at least one metric-name prefix (* = all); empty would collect nothing"
            )
        # Kafka's own rules (interval range, selectors, regexes, metrics), before any cluster call
        subscription = Subscription.from_spec(
            name="validation-only", metrics=metrics, interval_ms=params.get("interval_ms"), match=match
        )
        window_seconds = _whole("window_seconds", params.get("window_seconds"), MIN_WINDOW_S, MAX_WINDOW_S)
        bucket = params.get("bucket", "10s")
        if bucket not in BUCKETS:
            raise SubscriptionValidationError("bucket", f"must be one of {', '.join(BUCKETS)}", bucket)
        kafka_config_id = params.get("kafka_config_id")
        if not isinstance(kafka_config_id, str) or not kafka_config_id.strip():
            raise SubscriptionValidationError(
                "kafka_config_id", "must name an Airflow connection", kafka_config_id
            )
        return cls(
            kafka_config_id=kafka_config_id.strip(),
            match=match,
            metrics=tuple(metrics),
            interval_ms=subscription.interval_ms,
            window_seconds=window_seconds,
            min_clients=_whole("min_clients", params.get("min_clients", 1), 1, 10000),
            bucket=bucket,
            thresholds=parse_thresholds(params.get("thresholds") or []),
            use_default_rules=bool(params.get("use_default_rules", True)),
            baseline_min_buckets=_whole(
                "baseline_min_buckets", params.get("baseline_min_buckets", 6), 3, 10000
            ),
            baseline_for_seconds=_whole(
                "baseline_for_seconds", params.get("baseline_for_seconds", 30), 0, MAX_WINDOW_S
            ),
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def selectors(self) -> dict[str, str]:
        """Selector -> regex (what the report and the rules filter clients by)."""
        return {entry.partition("=")[0]: entry.partition("=")[2] for entry in self.match}


def _whole(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SubscriptionValidationError(field, f"must be a whole number in {low}..{high}", value)
    return value


def _number(field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SubscriptionValidationError(field, "must be a number", value)
    return float(value)


def parse_thresholds(raw: object) -> tuple[StaticThreshold, ...]:
    """The form's static thresholds: ``[{"metric_prefix", "threshold", "field", "comparison", ...}]``."""
    if not isinstance(raw, list):
        raise SubscriptionValidationError("thresholds", "must be a list of objects", raw)
    parsed = []
    for index, item in enumerate(raw):
        where = f"thresholds[{index}]"
        if not isinstance(item, dict):
            raise SubscriptionValidationError(where, "must be an object", item)
        unknown = sorted(set(item) - {f for f in StaticThreshold.__dataclass_fields__})
        if unknown:
            raise SubscriptionValidationError(f"{where}.{unknown[0]}", "is not a threshold key")
        prefix = item.get("metric_prefix")
        if not isinstance(prefix, str) or not prefix.strip():
            raise SubscriptionValidationError(f"{where}.metric_prefix", "must be a non-empty prefix", prefix)
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


# ---- steps ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowBounds:
    start: datetime
    end: datetime

    @classmethod
    def of_subscription(cls, name: str, window_seconds: int) -> WindowBounds:
        """The window is in the subscription's name (its expiry) and the requested length."""
        end = parse_window_name(name).expires_at
        return cls(end - timedelta(seconds=window_seconds), end)


LANDING_SINCE_MARGIN_S: Final = 60


def landing_grace_seconds(interval_ms: int) -> float:
    """How long to keep landing after the window ends: the clients' last pushes are one interval late."""
    return min(60.0, max(5.0, 2 * interval_ms / 1000))


def normalise_metric_prefix(prefix: str) -> str:
    """The rollups' metric naming (``spark_apps/kip714_common/names.py`` steps 1-2) applied to a prefix."""
    cleaned = prefix.strip().lower().replace("-", ".")
    return cleaned[len(KAFKA_PREFIX) :] if cleaned.startswith(KAFKA_PREFIX) else cleaned


def rolled_up_metric_names(zone: Zone) -> list[str]:
    """Distinct client metric names in the zone's rollups (empty when none were written)."""
    folder = zone.table("rollups")
    if not folder.is_dir() or not any(folder.rglob("*.parquet")):
        return []
    table = ds.dataset(folder, format="parquet", partitioning="hive").to_table(
        columns=["metric_name"], filter=pc.field("record_type") == "client"
    )
    return sorted(v for v in pc.unique(table["metric_name"]).to_pylist() if v)


def window_rules(
    request: TroubleshootingRequest, metric_names: Sequence[str], default_rules: Path | None
) -> dict[str, Any]:
    """The rules document for the anomalies app: default rules plus one rule per threshold x metric."""
    rules: list[dict[str, Any]] = []
    if request.use_default_rules and default_rules is not None:
        rules.extend(json.loads(default_rules.read_text())["rules"])
    match = {k: v for k, v in request.selectors().items() if k in RULE_SELECTORS}
    for index, threshold in enumerate(request.thresholds):
        prefix = normalise_metric_prefix(threshold.metric_prefix)
        for metric in metric_names:
            if not metric.startswith(prefix):
                continue
            rule: dict[str, Any] = {
                "name": f"threshold{index}-{metric}"[:RULE_NAME_LIMIT],
                "description": f"form threshold on {threshold.metric_prefix}",
                "metric": metric,
                "field": threshold.field,
                "comparison": threshold.comparison,
                "threshold": threshold.threshold,
                "for_seconds": threshold.for_seconds,
                "match": match,
            }
            if threshold.critical_threshold is not None:
                rule["critical_threshold"] = threshold.critical_threshold
            rules.append(rule)
    return {"rules": rules}


def write_window_rules(
    zone: Zone, request: TroubleshootingRequest, default_rules: Path | None
) -> tuple[Path, int]:
    """Write ``<zone>/rules.json`` for this window; returns its path and how many rules it holds."""
    document = window_rules(request, rolled_up_metric_names(zone), default_rules)
    path = zone.root / "rules.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))
    return path, len(document["rules"])


def land_window(request: TroubleshootingRequest, zone: Zone, bounds: WindowBounds) -> dict[str, Any]:
    """Land the telemetry topic into the zone while the window lasts (plus a grace), exactly once."""
    from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook

    grace = landing_grace_seconds(request.interval_ms)
    stop_at = bounds.end + timedelta(seconds=grace)
    remaining = (stop_at - datetime.now(UTC)).total_seconds()
    log.info(
        "Landing telemetry into %s until %s (window end + %.0f s grace, %.0f s from now)",
        zone.landing,
        stop_at.isoformat(),
        grace,
        remaining,
    )
    hook = TelemetryTopicHook(kafka_config_id=request.kafka_config_id)
    # Only the window matters: start at its first records, not at the topic's earliest retained
    # offset (days of other telemetry on a long-retention topic). The margin covers clock skew
    # between this worker and the brokers that stamp the records.
    since = bounds.start - timedelta(seconds=LANDING_SINCE_MARGIN_S)
    # Up to the first records at or after stop_at in every partition (offsets_for_times), however
    # late this task starts: never a fixed follow time that lands part of the window.
    result = hook.land(zone.landing, since=since, until=stop_at)
    log.info(
        "Landed %d record(s), %d data point(s), %d quarantined in %.1f s",
        result.records,
        result.points,
        result.quarantined,
        result.elapsed_s,
    )
    return {
        **result.as_dict(),
        "start": bounds.start.isoformat(),
        "end": stop_at.isoformat(),
        "landing": str(zone.landing),
        "analytics": str(zone.analytics),
        "zone": str(zone.root),
    }


def check_subscription_gone(kafka_config_id: str, name: str) -> list[str]:
    """Fail when ``name`` still exists; returns the cluster's remaining window subscriptions (for the log)."""
    from airflow_provider_kip714.hooks.client_metrics import ClientMetricsHook

    with ClientMetricsHook(kafka_config_id=kafka_config_id) as hook:
        names = hook.list()
    if name in names:
        raise Kip714Error(f"subscription {name} is still on the cluster after the window was closed")
    return sorted(n for n in names if n.startswith("kip714-"))
