"""Finding cards as HTML, for the report and the UI page: who, what, since when, how bad, against what.

Every value is client-controlled or derived from it and goes through ``html.text`` (control characters
shown as escapes, cut, HTML-escaped). A card's chart is a placeholder the bundled renderer fills.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Final

from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind
from airflow_provider_kip714.report.html import table, text

KIND_WORDS: Final = {
    FindingKind.ANOMALY: "anomaly",
    FindingKind.SILENT_CLIENT: "silent client",
    FindingKind.THROTTLED_CLIENT: "throttled client",
    FindingKind.PLUGIN_ERRORS: "plugin errors",
}
AGAINST_WORDS: Final = {
    "peers": "its peers' median and spread",
    "own": "its own baseline",
    "threshold": "a threshold",
    "expected_pushes": "the pushes its interval promises",
    "ratio": "the broker's pushes in the same buckets",
}
OVERFLOW_COLUMNS: Final = (
    ("severity", "severity"),
    ("kind", "what"),
    ("client_id", "client id"),
    ("client_instance_id", "instance"),
    ("metric_name", "metric"),
    ("since", "since (UTC)"),
    ("summary", "how bad"),
)


def who(finding: Finding) -> list[tuple[str, str]]:
    """(label, text) pairs naming the client, or the broker for a broker finding."""
    client = finding.client
    if client.client_instance_id is None and client.client_id is None:
        return [("broker", str(finding.broker_node_id if finding.broker_node_id is not None else "?"))]
    return client_rows(client)


def client_rows(client: ClientIdentity) -> list[tuple[str, str]]:
    """(label, text) pairs naming a client: id, instance, software, principal, source address."""
    software = " ".join(str(v) for v in (client.client_software_name, client.client_software_version) if v)
    rows = [
        ("client id", str(client.client_id or "?")),
        ("instance", str(client.client_instance_id or "?")),
        ("software", software or "?"),
        ("principal", str(client.principal or "?")),
    ]
    return [*rows, ("source", client.client_source_address)] if client.client_source_address else rows


def since_text(finding: Finding, now: datetime | None = None) -> str:
    start = f"{finding.since:%Y-%m-%d %H:%M:%S} UTC"
    if finding.ended is not None:
        return f"{start} to {finding.ended:%H:%M:%S}"
    if now is not None:
        return f"{start} ({age_text(now, finding.since)}, still open)"
    return start


def age_text(now: datetime, then: datetime) -> str:
    """``23 s ago``, ``4 min ago``, ``1.5 h ago``."""
    seconds = max(int((now - then).total_seconds()), 0)
    return (
        f"{seconds} s ago"
        if seconds < 120
        else f"{seconds // 60} min ago"
        if seconds < 7200
        else f"{seconds / 3600:.1f} h ago"
    )


def how_bad(finding: Finding) -> str:
    if finding.observed is None:
        return finding.summary
    if finding.against == "expected_pushes" and finding.expected:
        return f"{finding.observed:.0f} of {finding.expected:.0f} expected pushes landed"
    if finding.expected is not None and finding.against in ("threshold", "own"):
        return f"{finding.observed:.4g} against {finding.expected:.4g}"
    return f"{finding.observed:.4g}"


def against(finding: Finding) -> str:
    words = AGAINST_WORDS.get(finding.against or "", finding.against or "")
    return f"{words} ({finding.peer_group})" if finding.peer_group else words


def card(
    finding: Finding, chart_id: str | None, extra: Sequence[tuple[str, str]] = (), now: datetime | None = None
) -> str:
    """One card; ``chart_id`` places the chart (None: no chart for this one)."""
    severity = finding.severity.value
    head = KIND_WORDS.get(finding.kind, finding.kind.value)
    subject = text(finding.metric_name) if finding.metric_name else ""
    rows = [
        *who(finding),
        ("what", finding.summary),
        ("since", since_text(finding, now)),
        ("how bad", how_bad(finding)),
        ("against", against(finding)),
        *extra,
    ]
    return section_card(
        severity,
        f"{escape(head)} {subject}",
        rows,
        chart_id,
        kind=finding.kind.value,
        client=finding.client.client_instance_id or "",
    )


def section_card(
    severity: str,
    head_html: str,
    rows: Sequence[tuple[str, str]],
    chart_id: str | None = None,
    *,
    kind: str,
    client: str = "",
) -> str:
    """A card of the report: a head, (label, text) rows and its chart's placeholder. Findings and the
    delivery, convergence and capability sections all use it. ``head_html`` is escaped by the caller;
    every row value is text (client-controlled), escaped here."""
    cells = "".join(f"<dt>{escape(label)}</dt><dd>{text(value)}</dd>" for label, value in rows)
    chart = f'<div class="chart" data-chart="{escape(chart_id)}"></div>' if chart_id else ""
    return (
        f'<article class="card {escape(severity)}" data-kind="{escape(kind)}" data-client="{text(client)}">'
        f'<h3><span class="sev">{escape(severity)}</span>{head_html}</h3>'
        f"<dl>{cells}</dl>{chart}</article>"
    )


def overflow_table(findings: Sequence[Finding]) -> str:
    """Findings past the card budget, one row each."""
    rows = [
        {
            "severity": f.severity.value,
            "kind": KIND_WORDS.get(f.kind, f.kind.value),
            "client_id": f.client.client_id
            or (f"broker {f.broker_node_id}" if f.broker_node_id is not None else ""),
            "client_instance_id": f.client.client_instance_id,
            "metric_name": f.metric_name,
            "since": f.since,
            "summary": f.summary,
        }
        for f in findings
    ]
    return table(rows, OVERFLOW_COLUMNS, row_class="severity")
