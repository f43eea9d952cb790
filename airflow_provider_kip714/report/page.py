"""The report's HTML: one self-contained page (style, chart library and chart data inline).

Order answers first: the headline (which DAG, when, which clients), the finding cards, then one chart
per metric across clients, broker health, delivery, convergence and capabilities; the request that
started the run is a collapsed block at the end of the headline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Any

from airflow_provider_kip714.clock import TimeSpan
from airflow_provider_kip714.report import cards
from airflow_provider_kip714.report.charts import Chart
from airflow_provider_kip714.report.findings import Card
from airflow_provider_kip714.report.fleet_health import FleetSections
from airflow_provider_kip714.report.html import (
    DATA_ID,
    STYLE,
    details,
    inline_chart_code,
    json_block,
    scroll_table,
    table,
    text,
)
from airflow_provider_kip714.report.opened_by import OpenedBy
from airflow_provider_kip714.troubleshooting.form import OPENED_BY_KEY

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
_SHOWN_ELSEWHERE = frozenset({"guardrail_warnings", OPENED_BY_KEY})
"""Request keys with a section of their own (``fleet_health``: the guardrail warnings; the finding that
opened the window, as its card), not repeated as raw values."""


@dataclass(frozen=True)
class Headline:
    title: str
    generated_at: datetime
    span: TimeSpan | None
    clients: int
    request: Mapping[str, Any]


@dataclass(frozen=True)
class Body:
    """What the page shows below the headline; the HTML parts are escaped by their builders."""

    cards: Sequence[Card]
    overflow: Sequence[Card]
    metric_charts: Sequence[Chart]
    quiet_metrics: Sequence[str]
    charts_skipped: int
    broker_rows: Sequence[Mapping[str, Any]]
    broker_chart: Chart | None
    fleet: FleetSections
    palette: Mapping[str, str]
    clients: Mapping[str, Mapping[str, str]]
    """Instance -> identity columns, for the clients table (the legend of every chart)."""
    opened_by: OpenedBy | None = None
    """The finding that opened the window (``report/opened_by.py``); None for a window opened by hand."""


def _json_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "(none)"
    return str(value)


def _request_block(request: Mapping[str, Any]) -> str:
    if not request:
        return ""
    rows = "".join(
        f"<tr><th>{escape(str(key))}</th><td>{text(_json_text(value), 2000)}</td></tr>"
        for key, value in request.items()
        if key not in _SHOWN_ELSEWHERE
    )
    return details("The request", f"<table>{rows}</table>") if rows else ""


def _headline(head: Headline, findings: int) -> list[str]:
    window = (
        f"{head.span.start:%Y-%m-%d %H:%M:%S} to {head.span.end:%Y-%m-%d %H:%M:%S} UTC"
        if head.span
        else "all landed data"
    )
    return [
        f"<h1>{text(head.title, 300)}</h1>",
        f"<p class='muted'>Window {escape(window)} · {head.clients} client(s) · {findings} finding(s) · "
        f"generated {head.generated_at:%Y-%m-%d %H:%M:%S} UTC</p>",
        _request_block(head.request),
    ]


def _opened_by_part(opened: OpenedBy | None) -> list[str]:
    """A window a finding opened (``kip714_auto_window``) begins with that finding, as live mode saw it."""
    if opened is None:
        return []
    if opened.card is None:
        return [
            "<p class='muted'>This window was opened by a finding the report cannot read: "
            f"{text(opened.problem or '')}</p>"
        ]
    chart = opened.card.chart
    note = (
        "as live mode saw it when it opened the window, against the same peers or baseline"
        if chart is not None
        else "live mode's rows of it were not kept, so it has no chart here"
    )
    return [
        "<h2 id='opened-by'>Opened by this finding</h2>",
        "<p class='muted'>Live mode found this and opened the window, at high resolution, for the client it "
        f"names; the chart shows the finding {note}. The findings of the window follow.</p>",
        f"<div class='cards'>{cards.card(opened.card.finding, chart.chart_id if chart else None)}</div>",
    ]


def _findings_part(body: Body) -> list[str]:
    parts = ["<h2 id='findings'>Findings</h2>"]
    if not body.cards:
        parts.append(
            "<p class='muted'>No finding: no threshold breached for longer than its rule allows, no silent, "
            "throttled or failing client or plugin in this window.</p>"
        )
        return parts
    parts.append("<div class='cards'>")
    parts.extend(cards.card(c.finding, c.chart.chart_id if c.chart else None, c.details) for c in body.cards)
    parts.append("</div>")
    if body.overflow:
        parts.append(f"<h3>{len(body.overflow)} more finding(s)</h3>")
        parts.append(cards.overflow_table([c.finding for c in body.overflow]))
    return parts


def _metrics_part(body: Body) -> list[str]:
    parts = ["<h2 id='metrics'>Metrics across clients</h2>"]
    if not body.metric_charts and not body.quiet_metrics:
        parts.append("<p class='muted'>No client telemetry in this window.</p>")
    parts.extend(chart.placeholder() for chart in body.metric_charts)
    if body.charts_skipped:
        parts.append(f"<p class='muted'>{body.charts_skipped} metric chart(s) skipped (chart budget).</p>")
    if body.quiet_metrics:
        names = ", ".join(text(name, 160) for name in body.quiet_metrics)
        parts.append(
            f"<p class='muted quiet'>Zero for every client in the window "
            f"({len(body.quiet_metrics)}): {names}.</p>"
        )
    return parts


CLIENT_COLUMNS = (
    ("client_id", "client id"),
    ("client_instance_id", "instance"),
    ("client_software_name", "software"),
    ("client_software_version", "version"),
    ("principal", "principal"),
    ("client_source_address", "source address"),
)


def _clients_part(body: Body) -> list[str]:
    """Every client of the report with its colour: collapsed, it is the legend of all the charts."""
    if not body.clients:
        return []
    head = "<th></th>" + "".join(f"<th>{escape(label)}</th>" for _, label in CLIENT_COLUMNS)
    rows = []
    ordered = sorted(
        body.clients.items(), key=lambda item: (item[0] not in body.palette, item[1].get("client_id", ""))
    )
    for instance, identity in ordered:
        colour = body.palette.get(instance)
        swatch = f"<span style='color:{escape(colour)}'>&#9632;</span>" if colour else ""
        cells = "".join(f"<td>{text(identity.get(key) or '', 300)}</td>" for key, _ in CLIENT_COLUMNS)
        rows.append(f"<tr><td>{swatch}</td>{cells}</tr>")
    table_html = scroll_table(head, "".join(rows))
    return [details(f"The {len(body.clients)} client(s) and their colours", table_html)]


def _broker_part(body: Body) -> list[str]:
    parts = ["<h2 id='brokers'>Broker health</h2>"]
    if not body.broker_rows:
        parts.append("<p class='muted'>No broker metric records in this window.</p>")
        return parts
    if body.broker_chart is not None:
        parts.append(body.broker_chart.placeholder())
    parts.append(details("Per broker, over the window", table(body.broker_rows, BROKER_COLUMNS)))
    return parts


def render_page(head: Headline, body: Body) -> str:
    opened = [body.opened_by.card.chart] if body.opened_by and body.opened_by.card else []
    charts = [c for c in opened if c] + [c.chart for c in body.cards if c.chart] + list(body.metric_charts)
    if body.broker_chart is not None:
        charts.append(body.broker_chart)
    charts.extend(body.fleet.charts)
    data = {"charts": [chart.as_json() for chart in charts], "palette": dict(body.palette)}
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{text(head.title, 300)}</title><style>{STYLE}</style></head><body>",
        *_headline(head, len(body.cards) + len(body.overflow)),
        *_opened_by_part(body.opened_by),
        *_findings_part(body),
        *_metrics_part(body),
        *_clients_part(body),
        *_broker_part(body),
        body.fleet.html,
        json_block(DATA_ID, data),
        inline_chart_code(),
        "</body></html>",
    ]
    return "\n".join(parts)
