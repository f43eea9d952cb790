"""Checks before a window opens: will the matched libraries push anything, and will it fit?

Two failures are silent on the wire. A subscription whose prefixes match no metric a library has gets
nothing from that library (and asking librdkafka for a metric it lacks has crashed clients, librdkafka
#4833). A push larger than the broker's ``telemetry.max.bytes`` *after decompression* is refused with
INVALID_RECORD (Kafka >= 4.3.1), and the Java client then switches telemetry off until it restarts.

Both checks read the ``capabilities`` tables (what each library and version pushed before, written by
``spark_apps/capabilities.py``): live mode's, the scheduled area's and the troubleshooting runs' (the
newest ``CAPABILITY_RUNS`` on a local data root), each table's newest week (``capabilities_of``), the
latest row per library version and metric over all of them. Without any such table there is nothing to
judge by and no warning is given.
Only the ``client_software_name``/``client_software_version`` selectors narrow the libraries; other
selectors (client id, address) cannot be judged from capabilities, so every known library counts.

The payload estimate is the OTLP protobuf size of one push holding the matched metrics: per metric its
name and framing, per data point a fixed size (times, value, one short label). Calibrated against real
pushes (tests/integration/test_capabilities_real_clients.py); a guide, not a promise.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from airflow_provider_kip714.analytics.tables import capabilities_of
from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.contract.selectors import compile_pattern
from airflow_provider_kip714.exceptions import ClusterUnreachableError
from airflow_provider_kip714.storage.data_root import (
    RunArea,
    data_root,
    is_local,
    live_area,
    scheduled_area,
    troubleshoot_areas,
)
from airflow_provider_kip714.subscriptions.model import prefix_matches

log = logging.getLogger(__name__)

DEFAULT_TELEMETRY_MAX_BYTES = 1024 * 1024
"""Kafka's default ``telemetry.max.bytes`` (1 MiB)."""
RESOURCE_BYTES = 120
"""Resource and scope framing of one push (the Java client sends a few resource attributes)."""
METRIC_FRAMING_BYTES = 10
POINT_BYTES = 48
"""One data point: start and end time (fixed64), value (double), one short label, framing."""
NEAR_LIMIT = 0.8
"""Warn from this share of ``telemetry.max.bytes`` up: pushes grow with partitions and nodes."""


@dataclass(frozen=True)
class Capability:
    """One metric a library version pushed (a ``capabilities`` row, latest per library and metric)."""

    software_name: str
    software_version: str
    metric_name: str
    points_per_push: float = 1.0
    instances: int = 0


@dataclass(frozen=True)
class GuardrailWarning:
    """One finding, worded for the person opening the window; ``kind`` is stable for programs."""

    kind: str  # no_matching_metric | payload_too_large | payload_near_limit
    library: str
    message: str


def load_capabilities(area: RunArea) -> list[Capability]:
    """The zone's ``capabilities`` rows, the latest per library version and metric (empty: none)."""
    return load_capabilities_of([area])


CAPABILITY_RUNS: Final = 50
"""How many troubleshooting runs, newest first, the guardrail reads capabilities from on a local data root
(a deployment with auto-windows gains runs every hour). On an object store every run is read: its folders
have no time, so which runs are the newest is unknown without a request per run."""


def visible_areas() -> list[RunArea]:
    """The areas whose capabilities the guardrail reads: live mode's (the freshest), the scheduled one,
    then the troubleshooting runs (the newest ``CAPABILITY_RUNS`` on a local data root). A deployment
    that has run only troubleshooting windows has capabilities there and none in the scheduled area."""
    runs = troubleshoot_areas()
    if is_local(data_root()):  # only a local disk lists runs newest first
        runs = runs[:CAPABILITY_RUNS]
    return [live_area(), scheduled_area(), *runs]


def load_capabilities_of(areas: Sequence[RunArea]) -> list[Capability]:
    """The ``capabilities`` rows of several areas, the latest per library version and metric over all.

    An area that cannot be read is skipped (logged): the others still judge the window.
    """
    frames = []
    for area in areas:
        try:
            frame = capabilities_of(area)
        except Exception as err:  # advice only: one unreadable run must not hide the others
            log.info("guardrail: capabilities of %s not read (%s)", area.root, err)
            continue
        if not frame.empty:
            frames.append(frame)
    if not frames:
        return []
    merged = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    latest = merged.sort_values("last_seen", kind="stable").drop_duplicates(
        ["client_software_name", "client_software_version", "metric_name"], keep="last"
    )
    return [
        Capability(
            str(row.client_software_name),
            str(row.client_software_version),
            str(row.metric_name),
            float(row.points_per_push or 1.0),
            int(row.instances or 0),
        )
        for row in latest.itertuples()
    ]


def _selected(library: tuple[str, str], selectors: Mapping[str, str]) -> bool:
    """Whether a library passes the software selectors (whole-value regex, as the broker applies them)."""
    for selector, value in zip(("client_software_name", "client_software_version"), library, strict=True):
        pattern = selectors.get(selector)
        if not pattern:
            continue
        try:
            if compile_pattern(pattern).fullmatch(value) is None:
                return False
        except ValueError:  # a regex only the broker's engine takes: cannot judge here, so keep the library
            continue
    return True


def estimate_push_bytes(metrics: Iterable[Capability]) -> int:
    """Estimated decompressed OTLP size of one push carrying ``metrics``."""
    total = RESOURCE_BYTES
    for metric in metrics:
        points = max(1.0, metric.points_per_push)
        total += len(metric.metric_name) + METRIC_FRAMING_BYTES + round(points * POINT_BYTES)
    return total


def check_window(
    capabilities: Sequence[Capability],
    metrics: Sequence[str],
    selectors: Mapping[str, str],
    telemetry_max_bytes: int | None = None,
) -> list[GuardrailWarning]:
    """Warnings for a window asking ``metrics`` prefixes from the clients ``selectors`` match."""
    if not metrics:  # a blocking subscription asks for nothing on purpose
        return []
    limit = telemetry_max_bytes or DEFAULT_TELEMETRY_MAX_BYTES
    by_library: dict[tuple[str, str], list[Capability]] = {}
    for capability in capabilities:
        by_library.setdefault((capability.software_name, capability.software_version), []).append(capability)
    warnings: list[GuardrailWarning] = []
    for library, pushed in sorted(by_library.items()):
        if not _selected(library, selectors):
            continue
        label = printable(f"{library[0]} {library[1]}")  # the clients' own words: data in a log line
        wanted = [metric for metric in pushed if prefix_matches(metric.metric_name, metrics)]
        if not wanted:
            examples = ", ".join(printable(name) for name in sorted(m.metric_name for m in pushed)[:3])
            warnings.append(
                GuardrailWarning(
                    "no_matching_metric",
                    label,
                    f"{label} pushes none of {','.join(metrics)} ({len(pushed)} metrics known, e.g. "
                    f"{examples}): the window gets nothing from it",
                )
            )
            continue
        size = estimate_push_bytes(wanted)
        if size > limit:
            kind, outcome = "payload_too_large", "the broker refuses it and Java clients stop pushing"
        elif size > NEAR_LIMIT * limit:
            kind, outcome = "payload_near_limit", "close to the limit; more partitions or nodes push it over"
        else:
            continue
        warnings.append(
            GuardrailWarning(
                kind,
                label,
                f"{label}: one push of {len(wanted)} metrics is about {size} bytes decompressed against "
                f"telemetry.max.bytes={limit}: {outcome}",
            )
        )
    return warnings


def check_window_in_zone(
    area: RunArea | Sequence[RunArea],
    metrics: Sequence[str],
    selectors: Mapping[str, str],
    telemetry_max_bytes: int | None = None,
) -> list[GuardrailWarning]:
    """``check_window`` against one area's capabilities, or several areas' merged; logs each warning."""
    areas = [area] if isinstance(area, RunArea) else list(area)
    warnings = check_window(load_capabilities_of(areas), metrics, selectors, telemetry_max_bytes)
    for warning in warnings:
        log.warning("guardrail: %s", warning.message)
    return warnings


def broker_telemetry_max_bytes(admin_client: Any) -> int | None:
    """The smallest ``telemetry.max.bytes`` over the cluster's brokers (kafka-python admin), or None."""
    from kafka.admin import ConfigResource, ConfigResourceType

    try:
        cluster = admin_client.describe_cluster()
        brokers = [str(b.get("broker_id", b.get("node_id"))) for b in cluster["brokers"]]
        resources = [ConfigResource(ConfigResourceType.BROKER, node) for node in brokers]
        described = admin_client.describe_configs(resources, config_filter="all")
    except Exception as err:  # the check is advice: never block a window because it could not run
        log.info("guardrail: could not read telemetry.max.bytes (%s)", err)
        return None
    values = [
        int(entries["telemetry.max.bytes"]["value"])
        for entries in _broker_entries(described)
        if entries.get("telemetry.max.bytes", {}).get("value") not in (None, "")
    ]
    return min(values) if values else None


def _broker_entries(described: Any) -> list[dict[str, Any]]:
    """Config entries per broker from kafka-python's ``describe_configs`` answer (dict by resource type)."""
    if isinstance(described, Mapping):
        by_name = described.get("broker") or {}
        return [entries for entries in by_name.values() if isinstance(entries, Mapping)]
    return []


def check_subscription(
    subscription: Any, area: RunArea | None = None, admin: Any = None
) -> list[GuardrailWarning]:
    """The guardrail for a ``Subscription`` about to be created (CLI, operators).

    Reads capabilities from ``area`` (by default every area it can see: ``visible_areas``) and
    ``telemetry.max.bytes`` from the cluster when a ``ClientMetricsAdmin`` is given. Any failure is
    logged and yields no warning: the check is advice, and a window must open even when the analytics
    cannot be read. Only an unreachable cluster is raised (``ClusterUnreachableError``): the window
    cannot open either, and the caller would otherwise wait out the same bootstrap timeout a second time.
    """
    try:
        selectors = {m.selector: m.pattern for m in subscription.match}
        limit = broker_telemetry_max_bytes(admin.client) if admin is not None else None
        areas = [area] if area is not None else visible_areas()
        return check_window_in_zone(areas, list(subscription.metrics), selectors, limit)
    except ClusterUnreachableError:
        raise
    except Exception as err:  # advice only; see docstring
        log.info("guardrail: not checked (%s)", err)
        return []


def check_form_request(
    metrics: Sequence[str], match: Sequence[str], kafka_config_id: str, area: RunArea | None = None
) -> list[GuardrailWarning]:
    """The guardrail of ``kip714_troubleshoot``'s form, run when a run starts, before its subscription.

    Capabilities from ``area`` (by default every area it can see), ``telemetry.max.bytes`` from the
    cluster of ``kafka_config_id``; every warning is logged at WARNING. Advice only: when the cluster
    or the analytics cannot be read the form still opens its window (logged, no warning).
    """
    from airflow_provider_kip714.hooks.client_metrics import ClientMetricsHook
    from airflow_provider_kip714.subscriptions.model import Subscription

    subscription = Subscription.from_spec(name="guardrail-only", metrics=list(metrics), match=list(match))
    try:
        with ClientMetricsHook(kafka_config_id=kafka_config_id) as hook:
            return check_subscription(subscription, area, admin=hook.admin)
    except Exception as err:  # advice only; see docstring
        log.info("guardrail: cannot reach %s (%s); judging by capabilities alone", kafka_config_id, err)
        return check_subscription(subscription, area)


def as_records(warnings: Sequence[GuardrailWarning]) -> list[dict[str, str]]:
    """Warnings as XCom/report records: ``kind``, ``library``, ``message``."""
    return [{"kind": w.kind, "library": w.library, "message": w.message} for w in warnings]
