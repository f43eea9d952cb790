"""The troubleshooting window's steps that need code: its bounds, landing it, checking it is gone.

The bounds come from ``CreateClientMetricsSubscriptionOperator``'s XCom (name, start, end), never
recomputed from the name and the requested length.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from airflow_provider_kip714.analytics.convergence_live import ConvergenceWindow
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.troubleshooting.request import TroubleshootingRequest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WindowBounds:
    """When the window's subscription existed: from its creation to its expiry (aware UTC)."""

    start: datetime
    end: datetime

    @classmethod
    def of_xcom(cls, window: Mapping[str, Any]) -> WindowBounds:
        """The bounds the create operator returned (``{"name", "start", "end", ...}``)."""
        try:
            start = datetime.fromisoformat(str(window["start"]))
            end = datetime.fromisoformat(str(window["end"]))
        except (KeyError, TypeError, ValueError) as err:
            raise Kip714Error(f"open_subscription: no window bounds in its result {window!r}") from err
        if start.tzinfo is None or end.tzinfo is None or not start < end:
            raise Kip714Error(f"open_subscription: window bounds must be aware and ordered ({window!r})")
        return cls(start.astimezone(UTC), end.astimezone(UTC))


LANDING_SINCE_MARGIN_S: Final = 60


def landing_grace_seconds(interval_ms: int) -> float:
    """How long to keep landing after the window ends: the clients' last pushes are one interval late."""
    return min(60.0, max(5.0, 2 * interval_ms / 1000))


def land_window(request: TroubleshootingRequest, zone: RunArea, bounds: WindowBounds) -> dict[str, Any]:
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


CONVERGENCE_WINDOWS_FILE: Final = "convergence-windows.json"


def write_convergence_windows(
    zone: RunArea, window: Mapping[str, Any], metrics: Sequence[str], match: Mapping[str, str]
) -> Path:
    """Write ``<zone>/convergence-windows.json``: this window's subscription, when it was created, what it
    asks for and whom it matches. The DAG writes it as soon as the subscription exists (the UI follows the
    open window from it, ``read_convergence_windows``) and the convergence step reads it (``--windows``
    of spark_apps/convergence.py)."""
    bounds = WindowBounds.of_xcom(window)
    entry = {
        "name": str(window["name"]),
        "subscribed_at": bounds.start.isoformat(),
        "metrics": list(metrics),
        "match": dict(match),
    }
    path = zone.root / CONVERGENCE_WINDOWS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([entry], indent=2) + "\n")
    return path


def read_convergence_windows(zone: RunArea) -> list[ConvergenceWindow]:
    """The windows ``write_convergence_windows`` recorded in ``zone`` (none when absent or unreadable).

    The file is the provider's own, but a page must not fail on a damaged one: entries that do not
    have the written shape are skipped and logged.
    """
    path = zone.root / CONVERGENCE_WINDOWS_FILE
    try:
        entries = json.loads(path.read_text()) if path.exists() else []
    except (OSError, ValueError) as err:
        log.warning("cannot read %s (%s)", path, err)
        return []
    windows = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            subscribed_at = datetime.fromisoformat(str(entry["subscribed_at"]))
            if subscribed_at.tzinfo is None:
                raise ValueError("subscribed_at has no time zone")
            metrics, match = entry.get("metrics") or ["*"], entry.get("match") or {}
            if not all(isinstance(m, str) for m in metrics) or not isinstance(match, dict):
                raise ValueError("metrics must be strings and match an object")
            windows.append(
                ConvergenceWindow(
                    str(entry["name"]),
                    subscribed_at.astimezone(UTC),
                    tuple(metrics),
                    {str(k): str(v) for k, v in match.items()},
                )
            )
        except (KeyError, TypeError, ValueError) as err:
            log.warning("skipping a window entry of %s (%s)", path, err)
    return windows
