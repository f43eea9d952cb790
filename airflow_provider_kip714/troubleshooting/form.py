"""The ``kip714_troubleshoot`` Param form: what a user types in the UI, with its bounds.

The bounds are the validation's (``request.TroubleshootingRequest.from_params``), so the form refuses
what the validation would: a window longer than ``limits.MAX_WINDOW``, Kafka's interval range, the
rule fields and comparisons the anomalies app reads (``spark_apps/kip714_common/rules.py``).
A valid form then meets the guardrail (``guardrails.check_form_request``) in the DAG's
``validate_request``, before the subscription is created; its messages travel in the request under
``GUARDRAIL_KEY`` to the report.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Final

from airflow.sdk import Param

from airflow_provider_kip714.contract.selectors import SELECTORS
from airflow_provider_kip714.hooks.base import DEFAULT_CONN_ID
from airflow_provider_kip714.subscriptions.limits import MAX_WINDOW
from airflow_provider_kip714.subscriptions.model import MAX_INTERVAL_MS, MIN_INTERVAL_MS
from spark_apps.kip714_common.metric_names import KAFKA_PREFIX
from spark_apps.kip714_common.rules import COMPARISONS

GUARDRAIL_KEY: Final = "guardrail_warnings"
"""Where ``validate_request`` puts the guardrail's messages in the request the report shows."""
OPENED_BY_KEY: Final = "opened_by_finding"
"""The field ``kip714_auto_window`` fills with the finding (``Finding.as_extra()["finding"]``) that opened
the window; empty for a window opened by hand."""
DEFAULT_METRICS: Final = (KAFKA_PREFIX,)
BUCKETS: Final = ("1s", "5s", "10s", "15s", "30s", "1m", "5m")
THRESHOLD_FIELDS: Final = ("signal", "avg", "max", "min", "last", "p95", "p99", "rate_per_second")
"""Rollup columns a form threshold may watch (a subset of the anomalies app's ``RULE_FIELDS``)."""
MIN_WINDOW_S: Final = 10
MAX_WINDOW_S: Final = int(MAX_WINDOW.total_seconds())
MAX_CLIENTS: Final = 10000
BASELINE_BUCKETS: Final = (3, 10000)
"""The least and most rollup buckets a baseline may need (``baseline_min_buckets``)."""
SELECTOR_HELP: Final = (
    "Regex that must match the whole value (Java regex, as the broker applies it); empty = any."
)


def _bounded_integer(
    default: int, *, minimum: int, maximum: int, title: str, description: str, section: str
) -> Param:
    """An integer field with the validation's bounds, so the form refuses what it would."""
    return Param(
        default,
        type="integer",
        minimum=minimum,
        maximum=maximum,
        title=title,
        description=description,
        section=section,
    )


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
            DEFAULT_CONN_ID,
            type="string",
            minLength=1,
            title="Kafka connection",
            description="Airflow connection (librdkafka config in extra) of the cluster to troubleshoot.",
            section="Cluster",
        ),
        **selector_params,
        "match": Param(
            [],
            type="array",
            items={"type": "string"},
            title="More selectors",
            description="Extra selector=regex entries, e.g. client_id=orders-.* (ANDed with the above).",
            section="Which clients",
        ),
        "min_clients": _bounded_integer(
            1,
            minimum=1,
            maximum=MAX_CLIENTS,
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
        "interval_ms": _bounded_integer(
            5000,
            minimum=MIN_INTERVAL_MS,
            maximum=MAX_INTERVAL_MS,
            title="Push interval (ms)",
            description=f"How often clients push, {MIN_INTERVAL_MS}..{MAX_INTERVAL_MS} ms (Kafka's limits).",
            section="What to collect",
        ),
        "window_seconds": _bounded_integer(
            120,
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
        "baseline_min_buckets": _bounded_integer(
            6,
            minimum=BASELINE_BUCKETS[0],
            maximum=BASELINE_BUCKETS[1],
            title="Baseline: buckets needed",
            description="Learn a median + k*MAD baseline per metric and client once this many buckets exist.",
            section="Analysis",
        ),
        OPENED_BY_KEY: Param(
            None,
            type=["null", "object"],
            title="Opened by finding",
            description="Set by kip714_auto_window: the finding that opened this window. Leave empty.",
            section="Analysis",
        ),
        "baseline_for_seconds": _bounded_integer(
            30,
            minimum=0,
            maximum=MAX_WINDOW_S,
            title="Baseline: breach must last (s)",
            description="A baseline breach is an anomaly when it lasts longer than this.",
            section="Analysis",
        ),
    }


@functools.cache
def _form_defaults() -> tuple[tuple[str, Any], ...]:
    return tuple((name, param.value) for name, param in troubleshoot_params().items())


def form_defaults() -> dict[str, Any]:
    """Each field's default, as the form shows it: what a run's missing fields mean (a fresh copy)."""
    return copy.deepcopy(dict(_form_defaults()))
