"""Report sections for delivery, convergence and capabilities (tables from ``analytics/tables.py``).

Every value goes through ``html.table`` (HTML-escaped cells): client ids, subscription names and
reasons are client- or user-controlled strings, shown as text, never markup. A section whose table is
missing says so in one line; the UI panels read the same frames through ``delivery_rows`` and
``convergence_rows``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

import pandas as pd

from airflow_provider_kip714.analytics.tables import read_table
from airflow_provider_kip714.report.html import records, table
from airflow_provider_kip714.storage.data_root import RunArea

SILENT_COLUMNS = (
    ("client_id", "client id"),
    ("client_instance_id", "instance"),
    ("client_software_name", "software"),
    ("client_software_version", "version"),
    ("broker_node_id", "broker"),
    ("unseen_instances", "unseen instances"),
    ("silent_since", "silent since"),
    ("last_push_time", "last push"),
    ("terminated", "terminating push"),
    ("reason", "why"),
)
DELIVERY_COLUMNS = (
    ("status", "status"),
    ("hour_start", "hour"),
    ("client_id", "client id"),
    ("client_instance_id", "instance"),
    ("client_software_name", "software"),
    ("expected_pushes", "expected"),
    ("landed_pushes", "landed"),
    ("max_gap_seconds", "longest gap (s)"),
    ("throttled_pushes", "throttled"),
    ("reason", "why"),
)
CONVERGENCE_WINDOW_COLUMNS = (
    ("subscription_name", "subscription"),
    ("subscribed_at", "created"),
    ("matched_clients", "matched"),
    ("converged_clients", "pushed under it"),
    ("p50_seconds", "50 % (s)"),
    ("p90_seconds", "90 % (s)"),
    ("p100_seconds", "100 % (s)"),
)
CONVERGENCE_CLIENT_COLUMNS = (
    ("subscription_name", "subscription"),
    ("client_id", "client id"),
    ("client_instance_id", "instance"),
    ("client_software_name", "software"),
    ("first_push_time", "first push under it"),
    ("delay_seconds", "delay (s)"),
)
NOT_PUSHED = "not pushed by this library"
MAX_CAPABILITY_ROWS = 60


def delivery_rows(delivery: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(silent instances and broker rows, one per instance with its earliest silence; other non-ok rows)."""
    if delivery.empty:
        return delivery, delivery
    silent = delivery[delivery["status"] == "silent"].copy()
    silent["_key"] = silent["client_instance_id"].fillna("broker-" + silent["broker_node_id"].astype(str))
    silent = silent.sort_values("silent_since").drop_duplicates("_key").drop(columns="_key")
    others = delivery[~delivery["status"].isin(("ok", "silent"))].sort_values(["status", "hour_start"])
    return silent, others


def convergence_rows(convergence: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per window with its 50/90/100 % times, the per-client rows by delay)."""
    if convergence.empty:
        return convergence, convergence
    windows = convergence.drop_duplicates("subscription_name").sort_values("subscribed_at")
    clients = convergence.sort_values(["subscription_name", "delay_seconds"], na_position="last")
    return windows, clients


def capability_matrix(
    capabilities: pd.DataFrame, prefixes: Sequence[str]
) -> tuple[list[dict[str, Any]], list]:
    """Rows metric x library: ``pushed by N`` or ``not pushed by this library`` (never a silent zero)."""
    if capabilities.empty:
        return [], []
    frame = capabilities.copy()
    frame["library"] = frame["client_software_name"] + " " + frame["client_software_version"]
    if prefixes and not any(p in ("*", "") for p in prefixes):
        frame = frame[frame["metric_name"].map(lambda name: any(name.startswith(p) for p in prefixes))]
    libraries = sorted(
        set(capabilities["client_software_name"] + " " + capabilities["client_software_version"])
    )
    latest = frame.sort_values("last_seen").drop_duplicates(["library", "metric_name"], keep="last")
    rows: list[dict[str, Any]] = []
    for metric, part in sorted(latest.groupby("metric_name"), key=lambda item: item[0])[:MAX_CAPABILITY_ROWS]:
        pushed = dict(zip(part["library"], part["instances"], strict=True))
        row: dict[str, Any] = {"metric_name": metric}
        for library in libraries:
            row[library] = f"pushed by {int(pushed[library])}" if library in pushed else NOT_PUSHED
        rows.append(row)
    return rows, [("metric_name", "metric"), *((library, library) for library in libraries)]


def clip_hours(
    frame: pd.DataFrame, window: tuple[datetime, datetime] | None, column: str = "hour_start"
) -> pd.DataFrame:
    """Hourly rows whose hour overlaps the window (rows without an hour are kept)."""
    if frame.empty or window is None or column not in frame.columns:
        return frame
    start, end = (pd.Timestamp(moment).tz_convert("UTC") for moment in window)
    times = frame[column]
    return frame[times.isna() | ((times >= start.floor("h")) & (times < end))]


def broker_rows(broker_metrics: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per broker over the window: pushes, throttles, plugin errors and their ratios."""
    rows: list[dict[str, Any]] = []
    if broker_metrics.empty:
        return rows
    for (cluster, node), part in broker_metrics.groupby(["cluster_id", "broker_node_id"], dropna=False):
        exported = float(part["pushes_exported"].fillna(0).sum())
        throttled = float(part["throttled_pushes"].fillna(0).sum())
        errors = float(part["plugin_errors"].fillna(0).sum())
        attempts = exported + errors + throttled
        rows.append(
            {
                "cluster_id": cluster,
                "broker_node_id": node,
                "buckets": len(part),
                "instance_count_max": part["instance_count_max"].max(),
                "pushes_exported": exported,
                "throttled_pushes": throttled,
                "throttle_ratio": throttled / attempts if attempts else None,
                "unknown_subscription_requests": float(part["unknown_subscription_requests"].fillna(0).sum()),
                "plugin_errors": errors,
                "plugin_error_ratio": errors / (exported + errors) if exported + errors else None,
                "export_time_avg_ms": part["export_time_avg_ms"].mean(),
                "export_time_max_ms": part["export_time_max_ms"].max(),
                "export_time_p99_ms": part["export_time_p99_ms"].max()
                if "export_time_p99_ms" in part
                else None,
                "counter_resets": int(part["counter_resets"].fillna(0).sum())
                if "counter_resets" in part
                else 0,
                "plugin_failing": bool(part["plugin_failing"].fillna(False).any()),
            }
        )
    return rows


def render_sections(
    area: RunArea, window: tuple[datetime, datetime] | None = None, request: Mapping[str, Any] | None = None
) -> str:
    """The HTML of the three sections, for the report page."""
    delivery = clip_hours(read_table(area, "delivery"), window)
    silent, others = delivery_rows(delivery)
    parts = ["<h2>Delivery</h2>"]
    if delivery.empty:
        parts.append("<p class='muted'>No delivery table for this run (delivery.py did not run).</p>")
    else:
        ok = int((delivery["status"] == "ok").sum())
        parts.append(
            f"<p>{len(silent)} silent, {len(others)} other finding(s), {ok} instance-hour(s) ok.</p>"
        )
        if not silent.empty:
            parts.append("<h3>Silent clients</h3>" + table(records(silent), SILENT_COLUMNS))
        if not others.empty:
            parts.append(table(records(others), DELIVERY_COLUMNS, row_class="status"))

    windows, clients = convergence_rows(read_table(area, "convergence"))
    parts.append("<h2>Subscription convergence</h2>")
    if windows.empty:
        parts.append("<p class='muted'>No convergence table for this run.</p>")
    else:
        parts.append(table(records(windows), CONVERGENCE_WINDOW_COLUMNS))
        parts.append(table(records(clients), CONVERGENCE_CLIENT_COLUMNS))

    prefixes = list((request or {}).get("metrics") or [])
    rows, columns = capability_matrix(read_table(area, "capabilities"), prefixes)
    parts.append("<h2>Capabilities per client library</h2>")
    warned = [str(m) for m in (request or {}).get("guardrail_warnings") or []]  # troubleshooting.form
    if warned:
        items = "".join(f"<li>{escape(message)}</li>" for message in warned)
        parts.append(f"<div class='guardrail'><p>Guardrail when the window opened:</p><ul>{items}</ul></div>")
    if not rows:
        parts.append("<p class='muted'>No capabilities table for this run.</p>")
    else:
        shown = ", ".join(prefixes) if prefixes else "all metrics"
        parts.append(f"<p class='muted'>Requested: {escape(shown)}. '{NOT_PUSHED}' is not a zero.</p>")
        parts.append(table(rows, columns))
    return "\n".join(parts)
