"""The troubleshooting window's steps that need code: its bounds, landing it, checking it is gone.

Names, one meaning each: ``window_seconds`` is the requested length; ``subscription`` is the
``CreateClientMetricsSubscriptionOperator``'s XCom (``{"name", "start", "end", "kafka_config_id"}``);
``WindowBounds`` (variables ``bounds``) is when that subscription existed, read from that XCom, never
recomputed from the name and the length. The landing's own span (``landing_since``, ``landing_stop``)
is wider than the window and is never called the window.
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
    def of_xcom(cls, subscription: Mapping[str, Any]) -> WindowBounds:
        """The bounds the create operator returned (``{"name", "start", "end", ...}``)."""
        try:
            start = datetime.fromisoformat(str(subscription["start"]))
            end = datetime.fromisoformat(str(subscription["end"]))
        except (KeyError, TypeError, ValueError) as err:
            raise Kip714Error(f"open_subscription: no window bounds in its result {subscription!r}") from err
        if start.tzinfo is None or end.tzinfo is None or not start < end:
            raise Kip714Error(
                f"open_subscription: window bounds must be aware and ordered ({subscription!r})"
            )
        return cls(start.astimezone(UTC), end.astimezone(UTC))


LANDING_SINCE_MARGIN_S: Final = 60

SENSOR_RETRIES: Final = 2
"""Retries of ``wait_for_pushes``, the one task of ``kip714_troubleshoot`` that may retry.

Airflow 3.3.2's scheduler can fail a deferred task whose trigger fires seconds after the deferral
(apache/airflow #67287: the trigger's resume puts it back to ``queued`` before the scheduler handles the
executor's "success" of the deferring process; fixed on main after 3.3.2, and the ``running`` variant,
#72716, is still open). The sensor creates and deletes nothing: a retry waits again for the same
subscription from the same ``since`` (first scanning what already arrived, without deferring), and the
window is neither opened twice nor left behind (``close_subscription`` is a teardown of
``open_subscription``). A sensor timeout (``AirflowSensorTimeout``) is never retried."""
SENSOR_RETRY_DELAY: Final = timedelta(seconds=5)


def landing_grace_seconds(interval_ms: int) -> float:
    """How long to keep landing after the window ends: the clients' last pushes are one interval late."""
    return min(60.0, max(5.0, 2 * interval_ms / 1000))


def land_window(request: TroubleshootingRequest, area: RunArea, bounds: WindowBounds) -> dict[str, Any]:
    """Land the telemetry topic into the run's area while the window lasts (plus a grace), exactly once.

    The landing spans ``[landing_since, landing_stop)``: the window widened by a margin before (clock
    skew) and a grace after (late pushes). It lands the whole topic in that span, every client's
    records; the analysis keeps the run's own (``write_run_selection``). The XCom keeps the window's
    bounds and the landing's span apart: ``window_start``/``window_end`` are what the analysis and the
    report cover.
    """
    from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook

    grace = landing_grace_seconds(request.interval_ms)
    landing_stop = bounds.end + timedelta(seconds=grace)
    remaining = (landing_stop - datetime.now(UTC)).total_seconds()
    log.info(
        "Landing telemetry into %s until %s (window end + %.0f s grace, %.0f s from now)",
        area.landing,
        landing_stop.isoformat(),
        grace,
        remaining,
    )
    hook = TelemetryTopicHook(kafka_config_id=request.kafka_config_id)
    # Only the window matters: start at its first records, not at the topic's earliest retained
    # offset (days of other telemetry on a long-retention topic). The margin covers clock skew
    # between this worker and the brokers that stamp the records.
    landing_since = bounds.start - timedelta(seconds=LANDING_SINCE_MARGIN_S)
    # Up to the first records at or after landing_stop in every partition (offsets_for_times), however
    # late this task starts: never a fixed follow time that lands part of the window.
    result = hook.land(area.landing, since=landing_since, until=landing_stop)
    log.info(
        "Landed %d record(s), %d data point(s), %d quarantined in %.1f s",
        result.records,
        result.points,
        result.quarantined,
        result.elapsed_s,
    )
    return {
        **result.as_dict(),
        "window_start": bounds.start.isoformat(),
        "window_end": bounds.end.isoformat(),
        "landing_since": landing_since.isoformat(),
        "landing_stop": landing_stop.isoformat(),
        "landing": str(area.landing),
        "analytics": str(area.analytics),
        "area": str(area.root),
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
RUN_SELECTION_FILE: Final = "selection.json"


def convergence_windows_path(area: RunArea) -> Path:
    return area.root / CONVERGENCE_WINDOWS_FILE


def write_convergence_windows(
    area: RunArea, subscription: Mapping[str, Any], metrics: Sequence[str], match: Mapping[str, str]
) -> Path:
    """Write ``<area>/convergence-windows.json``: this window's subscription, when it was created, what it
    asks for and whom it matches. The DAG writes it once, as soon as the subscription exists (the UI
    follows the open window from it, ``read_convergence_windows``); the convergence step reads it
    (``--windows`` of spark_apps/convergence.py)."""
    bounds = WindowBounds.of_xcom(subscription)
    entry = {
        "name": str(subscription["name"]),
        "subscribed_at": bounds.start.isoformat(),
        "metrics": list(metrics),
        "match": dict(match),
    }
    path = convergence_windows_path(area)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([entry], indent=2) + "\n")
    return path


def write_run_selection(area: RunArea, request: TroubleshootingRequest, bounds: WindowBounds) -> Path:
    """Write ``<area>/selection.json`` (``--selection`` of the Spark apps): the run's clients and from when.

    The landing holds every client that pushed while the window was open, and a margin before it; the
    analysis keeps the clients the request's selectors match, from the window's start on (a push
    before it was made under another subscription, and would read as a gap). Broker records stay,
    their per-client series only for those clients (``spark_apps/kip714_common/selectors.py``).
    """
    path = area.root / RUN_SELECTION_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"match": request.match_map(), "since": bounds.start.isoformat()}, indent=2))
    return path


def read_convergence_windows(area: RunArea) -> list[ConvergenceWindow]:
    """The windows ``write_convergence_windows`` recorded in ``area`` (none when absent or unreadable).

    The file is the provider's own, but a page must not fail on a damaged one: entries that do not
    have the written shape are skipped and logged.
    """
    path = convergence_windows_path(area)
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
