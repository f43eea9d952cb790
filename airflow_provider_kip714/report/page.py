"""The report's HTML: one self-contained page (inline CSS) that links its PNGs by relative path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from html import escape
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from airflow_provider_kip714.report.builder import ClientSection

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222;max-width:1400px}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.8rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.25rem .45rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}.critical{background:#fde0dc}.warning{background:#fff4d6}
.who{font-size:.85rem;margin:.3rem 0 .6rem}.who span{margin-right:1.2rem}
.plots{display:flex;flex-wrap:wrap;gap:.5rem}.plots figure{margin:0}
.plots figcaption{font-size:.75rem}.flag{color:#b00;font-weight:bold}.muted{color:#777}
"""

ANOMALY_COLUMNS = (
    ("severity", "severity"),
    ("rule_name", "rule"),
    ("metric_name", "metric"),
    ("attributes_key", "labels"),
    ("client_id", "client id"),
    ("client_instance_id", "instance"),
    ("client_source_address", "source address"),
    ("client_software_name", "software"),
    ("client_software_version", "version"),
    ("principal", "principal"),
    ("field", "field"),
    ("peak_value", "peak"),
    ("comparison", "cmp"),
    ("threshold", "threshold"),
    ("excess_ratio", "excess ratio"),
    ("breach_start", "from"),
    ("duration_seconds", "for (s)"),
    ("baseline_kind", "baseline"),
    ("peer_group", "peer group"),
)
BROKER_COLUMNS = (
    ("broker_node_id", "broker"),
    ("cluster_id", "cluster"),
    ("buckets", "buckets"),
    ("instance_count_max", "client instances (max)"),
    ("pushes_exported", "pushes exported"),
    ("throttled_pushes", "throttled"),
    ("throttle_ratio", "throttle ratio"),
    ("unknown_subscription_requests", "unknown subscription"),
    ("plugin_errors", "plugin errors"),
    ("plugin_error_ratio", "error ratio"),
    ("export_time_avg_ms", "export ms avg"),
    ("export_time_max_ms", "export ms max"),
    ("export_time_p99_ms", "export ms p99"),
    ("counter_resets", "counter resets"),
    ("plugin_failing", "plugin failing"),
)
THROTTLED_CLIENT_COLUMNS = (
    ("broker_node_id", "broker"),
    ("client_id", "client id"),
    ("client_instance_id", "instance"),
    ("client_source_address", "source address"),
    ("client_software_name", "software"),
    ("client_software_version", "version"),
    ("throttle_ratio", "throttle ratio"),
    ("bucket_start", "bucket"),
)
WHO_FIELDS = (
    ("client_id", "client id"),
    ("client_instance_id", "instance"),
    ("client_source_address", "source"),
    ("client_software_name", "software"),
    ("client_software_version", "version"),
    ("principal", "principal"),
)


def _cell(value: Any) -> str:
    if value is None or (not isinstance(value, list | dict | str) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, pd.Timestamp | datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]], row_class: str = "") -> str:
    head = "".join(f"<th>{escape(label)}</th>" for _, label in columns)
    body = []
    for row in rows:
        css = escape(str(row.get(row_class, ""))) if row_class else ""
        cells = "".join(f"<td>{escape(_cell(row.get(key)))}</td>" for key, _ in columns)
        body.append(f'<tr class="{css}">{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [] if frame.empty else frame.to_dict("records")


_SHOWN_ELSEWHERE = frozenset({"guardrail_warnings"})
"""Request keys with a section of their own (``fleet_health``: the guardrail warnings), not repeated."""


def _request_block(request: Mapping[str, Any]) -> str:
    if not request:
        return ""
    rows = "".join(
        f"<tr><th>{escape(str(key))}</th><td>{escape(_json_text(value))}</td></tr>"
        for key, value in request.items()
        if key not in _SHOWN_ELSEWHERE
    )
    return f"<h2>Request</h2><table>{rows}</table>"


def _json_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "(none)"
    return str(value)


def _who(identity: Mapping[str, str]) -> str:
    parts = "".join(
        f"<span><b>{escape(label)}:</b> {escape(identity.get(key) or '?')}</span>"
        for key, label in WHO_FIELDS
    )
    return f'<div class="who">{parts}</div>'


def render_page(
    *,
    title: str,
    generated_at: datetime,
    window: tuple[datetime, datetime] | None,
    request: Mapping[str, Any],
    anomalies: pd.DataFrame,
    sections: Sequence[ClientSection],
    plots_skipped: int,
    brokers: Sequence[Mapping[str, Any]],
    broker_images: Sequence[str],
    throttled_clients: pd.DataFrame,
    extra_sections: str = "",
) -> str:
    """The page; ``extra_sections`` is HTML built by this package's section renderers (already escaped)."""
    window_text = (
        f"{window[0]:%Y-%m-%d %H:%M:%S} to {window[1]:%Y-%m-%d %H:%M:%S} UTC" if window else "all landed data"
    )
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>Window: {escape(window_text)} · generated {generated_at:%Y-%m-%d %H:%M:%S} UTC · "
        f"{len(sections)} client(s) · {len(anomalies)} anomaly(ies) · {len(brokers)} broker(s)</p>",
        _request_block(request),
        *_anomaly_part(anomalies),
        *_client_part(sections, plots_skipped),
        *_broker_part(brokers, broker_images, throttled_clients),
        extra_sections,
        "</body></html>",
    ]
    return "\n".join(parts)


def _anomaly_part(anomalies: pd.DataFrame) -> list[str]:
    """The anomalies, critical first, the longest first within a severity."""
    if anomalies.empty:
        return [
            "<h2>Anomalies</h2>",
            "<p class='muted'>No threshold was breached for longer than its rule allows.</p>",
        ]
    ordered = anomalies.assign(
        _rank=anomalies["severity"].map({"critical": 0, "warning": 1}).fillna(2)
    ).sort_values(["_rank", "duration_seconds"], ascending=[True, False])
    return ["<h2>Anomalies</h2>", _table(_records(ordered), ANOMALY_COLUMNS, row_class="severity")]


def _client_part(sections: Sequence[ClientSection], plots_skipped: int) -> list[str]:
    """One heading, identity and plot grid per client."""
    parts = ["<h2>Clients</h2>"]
    if not sections:
        parts.append("<p class='muted'>No client telemetry in this window.</p>")
    if plots_skipped:
        parts.append(f"<p class='muted'>{plots_skipped} metric plot(s) skipped (plot budget).</p>")
    for section in sections:
        parts.append(f"<h3>{escape(section.identity.get('client_id') or '(no client id)')}</h3>")
        parts.append(_who(section.identity))
        parts.append(f"<p class='muted'>{section.metrics} metric(s)</p><div class='plots'>")
        for plot in section.plots:
            flag = " <span class='flag'>anomaly</span>" if plot.anomalous else ""
            parts.append(
                f"<figure><img src='{escape(plot.image)}' alt='{escape(plot.metric_name)}'>"
                f"<figcaption>{escape(plot.metric_name)}{flag}</figcaption></figure>"
            )
        parts.append("</div>")
    return parts


def _broker_part(
    brokers: Sequence[Mapping[str, Any]], broker_images: Sequence[str], throttled_clients: pd.DataFrame
) -> list[str]:
    """Broker health: the table, failing plugins, the plots, then the clients throttled most."""
    parts = ["<h2>Broker health</h2>"]
    if not brokers:
        parts.append("<p class='muted'>No broker metric records in this window.</p>")
    else:
        parts.append(_table(brokers, BROKER_COLUMNS))
        failing = [str(b["broker_node_id"]) for b in brokers if b.get("plugin_failing")]
        if failing:
            parts.append(f"<p class='flag'>Plugin failing on broker(s): {escape(', '.join(failing))}</p>")
        parts.append("<div class='plots'>")
        parts.extend(
            f"<figure><img src='{escape(image)}' alt='broker health'></figure>" for image in broker_images
        )
        parts.append("</div>")
    if not throttled_clients.empty:
        parts.append("<h3>Clients with a high throttle ratio</h3>")
        parts.append(_table(_records(throttled_clients), THROTTLED_CLIENT_COLUMNS))
    return parts
