"""Report sections for delivery, convergence and capabilities (tables from ``analytics/tables.py``).

Each answers first, as the findings do: cards (an instance-hour with gaps, a subscription and how fast
clients took it up, a library that does not push requested metrics), each with the chart that shows
it, then one chart across clients, then the whole table collapsed. Silent and throttled clients are
findings already: their cards are under Findings, and the delivery section counts them.

Every value goes through ``html.text`` or ``html.table`` (HTML-escaped): client ids, subscription names
and reasons are client- or user-controlled strings, shown as text, never markup. A section whose table
is missing says so in one line; the UI panels read the same frames through ``delivery_rows`` and
``convergence_rows``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, Final

import pandas as pd

from airflow_provider_kip714.analytics.tables import capabilities_of, read_table
from airflow_provider_kip714.clock import TimeSpan
from airflow_provider_kip714.findings.from_tables import number, rows
from airflow_provider_kip714.findings.model import ClientIdentity
from airflow_provider_kip714.report.cards import client_rows, section_card
from airflow_provider_kip714.report.charts import (
    DEFAULT_TOP,
    PALETTE,
    REST_COLOUR,
    REST_FILL,
    Band,
    Chart,
    Line,
    Palette,
    across_clients_chart,
    epoch,
    percentile_band,
    spans,
)
from airflow_provider_kip714.report.html import details, records, scroll_table, table, text
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.subscriptions.model import prefix_matches

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
MAX_SECTION_CARDS: Final = 12
"""Cards per section (with a chart each); the rest are rows of the section's collapsed table."""


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
    if prefixes:
        frame = frame[frame["metric_name"].map(lambda name: prefix_matches(name, prefixes))]
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


def clip_hours(frame: pd.DataFrame, span: TimeSpan | None, column: str = "hour_start") -> pd.DataFrame:
    """Hourly rows whose hour overlaps the span (rows without an hour are kept)."""
    if frame.empty or span is None or column not in frame.columns:
        return frame
    start, end = pd.Timestamp(span.start), pd.Timestamp(span.end)
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


@dataclass(frozen=True)
class FleetSections:
    """The delivery, convergence and capability sections: their HTML and the charts it places."""

    html: str
    charts: list[Chart] = field(default_factory=list)


def render_sections(
    area: RunArea,
    span: TimeSpan | None = None,
    request: Mapping[str, Any] | None = None,
    *,
    rollups: pd.DataFrame | None = None,
    palette: Palette | None = None,
    labels: Mapping[str, str] | None = None,
) -> FleetSections:
    """The three sections, each as cards (what is wrong, with whom, against what) then charts, with the
    full tables collapsed below. ``rollups`` (the report's, clipped to its clients) draws the delivery
    charts; ``palette`` keeps each client's colour from the rest of the report."""
    palette = palette if palette is not None else Palette()
    labels = labels or {}
    rollups = rollups if rollups is not None else pd.DataFrame()
    delivery_html, delivery_charts = _delivery_part(
        clip_hours(read_table(area, "delivery"), span), rollups, palette, labels
    )
    convergence_html, convergence_charts = _convergence_part(read_table(area, "convergence"))
    capability_html = _capabilities_part(capabilities_of(area), request or {})
    return FleetSections(
        "\n".join([*delivery_html, *convergence_html, *capability_html]),
        [*delivery_charts, *convergence_charts],
    )


def _count(value: object) -> str:
    """A count read through ``rows`` (a column with a null in it is float): ``3``, not ``3.0``."""
    count = number(value)
    return "?" if count is None else str(int(count))


def _seconds(value: object) -> str:
    seconds = number(value)
    return "?" if seconds is None else f"{seconds:.0f} s"


def _received_per_bucket(rollups: pd.DataFrame) -> pd.DataFrame:
    """bucket x instance: the series (metric and label set) each client's pushes filled in each bucket;
    0 where it sent nothing. What a gap or a silence looks like."""
    if rollups.empty or "client_instance_id" not in rollups.columns:
        return pd.DataFrame()
    counts = rollups.groupby(["bucket_start", "client_instance_id"]).size().unstack("client_instance_id")
    return counts.fillna(0.0).astype(float).sort_index()


def _delivery_part(
    delivery: pd.DataFrame, rollups: pd.DataFrame, palette: Palette, labels: Mapping[str, str]
) -> tuple[list[str], list[Chart]]:
    parts = ["<h2 id='delivery'>Delivery</h2>"]
    if delivery.empty:
        parts.append("<p class='muted'>No delivery table for this run (delivery.py did not run).</p>")
        return parts, []
    silent, others = delivery_rows(delivery)
    gaps = others[others["status"] == "gaps"]
    throttled = others[others["status"] == "throttled"]
    ok = int((delivery["status"] == "ok").sum())
    parts.append(
        f"<p>{len(gaps)} instance-hour(s) with gaps, {len(silent)} silent and {len(throttled)} throttled "
        f"(their cards are under Findings), {ok} ok.</p>"
    )
    wide = _received_per_bucket(rollups)
    charts: list[Chart] = []
    cards_html = []
    for index, row in enumerate(rows(gaps.head(MAX_SECTION_CARDS))):
        instance = str(row.get("client_instance_id") or "")
        chart = _gap_chart(f"delivery-{index}", wide, instance, labels, palette)
        if chart is not None:
            charts.append(chart)
        interval = row.get("push_interval_seconds")
        cards_html.append(
            section_card(
                "warning",
                "gaps in its pushes",
                [
                    *client_rows(ClientIdentity.from_row(row)),
                    # the reason names the gap judged and its own cadence (a window may have changed it)
                    ("what", str(row["reason"]) if row.get("reason") is not None else
                     f"the longest gap {_seconds(row.get('max_gap_seconds'))} against a "
                     f"{_seconds(interval)} push interval"),
                    ("hour", str(row.get("hour_start"))),
                    ("how bad", f"{row.get('landed_pushes')} of {row.get('expected_pushes')} expected pushes "
                     "landed"),
                    ("against", "the pushes its interval promises"),
                ],
                chart.chart_id if chart is not None else None,
                kind="delivery_gaps",
                client=instance,
            )
        )  # fmt: skip
    if cards_html:
        parts.append("<div class='cards'>" + "".join(cards_html) + "</div>")
    if len(gaps) > MAX_SECTION_CARDS:
        parts.append(f"<p class='muted'>{len(gaps) - MAX_SECTION_CARDS} more with gaps: the table below.</p>")
    if not wide.empty:
        flagged = {str(i) for i in pd.concat([gaps, silent])["client_instance_id"].dropna()}
        title = "series received per bucket"
        chart = across_clients_chart(
            "delivery-all", title, wide, labels, palette, flagged, "series", DEFAULT_TOP
        )
        chart.note += " A client's line at zero is a bucket it sent nothing in."
        charts.append(chart)
        parts.append(chart.placeholder())
    if not silent.empty:
        parts.append(details(f"The {len(silent)} silent client(s)", table(records(silent), SILENT_COLUMNS)))
    if not others.empty:
        parts.append(
            details(
                f"Every other instance-hour that was not ok ({len(others)})",
                table(records(others), DELIVERY_COLUMNS, row_class="status"),
            )
        )
    return parts, charts


def _gap_chart(
    chart_id: str, wide: pd.DataFrame, instance: str, labels: Mapping[str, str], palette: Palette
) -> Chart | None:
    if wide.empty or instance not in wide.columns:
        return None
    chart = Chart(chart_id, "series received per bucket", "series", [epoch(t) for t in wide.index])
    label, colour = labels.get(instance, instance), palette.colour(instance)
    chart.lines.append(Line(label, list(wide[instance]), colour, 2.6, client=instance))
    others = wide.drop(columns=[instance])
    if not others.empty:
        high = len(chart.lines)
        median, low, top = percentile_band(others)
        chart.lines.append(Line("others: 90th pct", list(top), REST_COLOUR, 0.8))
        chart.lines.append(Line("others: 10th pct", list(low), REST_COLOUR, 0.8))
        chart.lines.append(Line("others: median", list(median), REST_COLOUR, 1.2, (4, 3)))
        chart.bands.append(Band(high, high + 1, REST_FILL))
    gaps = wide.index[wide[instance] == 0]
    width = pd.Series(wide.index).diff().median() if len(wide.index) > 1 else pd.Timedelta(0)
    chart.shade = spans(list(gaps), [t + width for t in gaps]) if pd.notna(width) else []
    chart.note = "Shaded: buckets it sent nothing in."
    return chart


def _convergence_part(convergence: pd.DataFrame) -> tuple[list[str], list[Chart]]:
    parts = ["<h2 id='convergence'>Subscription convergence</h2>"]
    windows, clients = convergence_rows(convergence)
    if windows.empty:
        parts.append("<p class='muted'>No convergence table for this run.</p>")
        return parts, []
    charts: list[Chart] = []
    cards_html = []
    for index, row in enumerate(rows(windows.head(MAX_SECTION_CARDS))):
        name = row.get("subscription_name")
        mine = clients[clients["subscription_name"] == name]
        matched, converged = row.get("matched_clients"), row.get("converged_clients")
        short = matched is not None and converged is not None and int(converged) < int(matched)
        chart = _convergence_chart(f"convergence-{index}", row, mine)
        if chart is not None:
            charts.append(chart)
        cards_html.append(
            section_card(
                "warning" if short else "info",
                f"subscription {text(name, 160)}",
                [
                    ("created", str(row.get("subscribed_at"))),
                    ("what", f"{_count(converged)} of {_count(matched)} matched client(s) pushed under it"
                     + (": the others kept their old subscription or never pushed" if short else "")),
                    ("how long", f"half after {_seconds(row.get('p50_seconds'))}, 90 % after "
                     f"{_seconds(row.get('p90_seconds'))}, all after {_seconds(row.get('p100_seconds'))}"),
                    ("against", "the subscription's creation; a client takes up to one push interval"),
                ],
                chart.chart_id if chart is not None else None,
                kind="convergence",
            )
        )  # fmt: skip
    parts.append("<div class='cards'>" + "".join(cards_html) + "</div>")
    parts.append(details(f"Per client ({len(clients)})", table(records(clients), CONVERGENCE_CLIENT_COLUMNS)))
    return parts, charts


def _convergence_chart(chart_id: str, window: Mapping[str, Any], clients: pd.DataFrame) -> Chart | None:
    """Clients pushing under the subscription over time: a step up at each client's first push."""
    created = window.get("subscribed_at")
    if created is None or clients.empty:
        return None
    firsts = sorted(clients["first_push_time"].dropna())
    times = [created, *firsts]
    chart = Chart(chart_id, "clients pushing under the subscription", "clients", [epoch(t) for t in times])
    chart.lines.append(Line("pushed under it", [float(n) for n in range(len(times))], PALETTE[0], 2.4))
    matched = window.get("matched_clients")
    if matched is not None:
        chart.lines.append(Line("matched", [float(matched)] * len(times), REST_COLOUR, 1.2, (6, 3)))  # type: ignore[arg-type]
    if firsts:
        chart.shade = spans([created], [firsts[-1]])
    chart.note = "Shaded: from the subscription's creation to the last client's first push under it."
    return chart


def _capabilities_part(capabilities: pd.DataFrame, request: Mapping[str, Any]) -> list[str]:
    prefixes = list(request.get("metrics") or [])
    rows, columns = capability_matrix(capabilities, prefixes)
    parts = ["<h2 id='capabilities'>Capabilities per client library</h2>"]
    warned = [str(m) for m in request.get("guardrail_warnings") or []]  # troubleshooting.form
    if warned:
        items = "".join(f"<li>{escape(message)}</li>" for message in warned)
        parts.append(f"<div class='guardrail'><p>Guardrail when the window opened:</p><ul>{items}</ul></div>")
    if not rows:
        parts.append("<p class='muted'>No capabilities table for this run.</p>")
        return parts
    requested = bool(prefixes) and not any(p in ("*", "") for p in prefixes)
    cards_html = []
    for library, _ in columns[1:] if requested else []:
        missing = [str(row["metric_name"]) for row in rows if row[library] == NOT_PUSHED]
        if missing:
            cards_html.append(
                section_card(
                    "warning",
                    f"{text(library, 160)} does not push {len(missing)} requested metric(s)",
                    [
                        ("library", library),
                        ("not pushed", ", ".join(missing[:12]) + (" ..." if len(missing) > 12 else "")),
                        ("against", f"the {len(rows)} requested metric(s) another library pushes"),
                        ("so", "its charts have no line for them: not a zero"),
                    ],
                    kind="capability",
                )
            )
    if cards_html:
        parts.append("<div class='cards'>" + "".join(cards_html) + "</div>")
    shown = ", ".join(prefixes) if prefixes else "all metrics"
    parts.append(f"<p class='muted'>Requested: {escape(shown)}. '{NOT_PUSHED}' is not a zero.</p>")
    parts.append(_matrix(rows, columns))
    return parts


def _matrix(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """The metric x library matrix, each cell coloured by whether the library pushes the metric."""
    head = "".join(f"<th>{text(label, 160)}</th>" for _, label in columns)
    body = []
    for row in rows:
        cells = [f"<td>{text(row[columns[0][0]], 300)}</td>"]
        for key, _ in columns[1:]:
            state = "absent" if row[key] == NOT_PUSHED else "pushed"
            cells.append(f"<td class='{state}'>{text(row[key])}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return scroll_table(head, "".join(body))
