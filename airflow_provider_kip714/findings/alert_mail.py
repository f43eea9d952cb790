"""One finding's mail, or the digest of a kind's findings past the hourly limit: what a notifier sends.

Everything a client controls passes ``printable`` (control characters such as CR/LF become visible
escapes, so no header can be forged) with a length cap, and HTML escaping in the body; a link is kept
only if it is an http(s) URL.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from airflow_provider_kip714.contract.client_text import printable, safe_link
from airflow_provider_kip714.findings.alert_settings import AlertSettings
from airflow_provider_kip714.findings.model import Finding, Transition

TEXT_LIMIT: Final = 300
"""Characters kept of one client-controlled value in a mail."""
SUBJECT_LIMIT: Final = 200
HOUR: Final = timedelta(hours=1)


@dataclass(frozen=True)
class AlertMail:
    """One message: a finding on its own, or the digest of a kind's findings past the hourly limit."""

    subject: str
    text: str
    html: str
    message_id: str
    kind: str
    findings: tuple[Finding, ...]
    digest: bool = False


def _t(value: object, limit: int = TEXT_LIMIT) -> str:
    """Client text for a mail: control characters escaped, cut to ``limit``."""
    return printable("" if value is None else value, limit)


def _h(value: object, limit: int = TEXT_LIMIT) -> str:
    return html.escape(_t(value, limit), quote=True)


def _headline(finding: Finding) -> str:
    state = " resolved" if finding.transition is Transition.RESOLVED else ""
    return f"{finding.severity.value.upper()} {finding.kind.value}{state}"


def _rows(finding: Finding) -> list[tuple[str, object]]:
    client = finding.client
    how_bad = None
    if finding.observed is not None:
        how_bad = f"{finding.observed:g}"
        if finding.expected is not None:
            how_bad += f" against {finding.expected:g} ({finding.against or 'expected'})"
    rows: list[tuple[str, object]] = [
        ("Severity", finding.severity.value),
        ("Finding", f"{finding.kind.value} ({finding.transition.value})"),
        ("What", finding.summary),
        ("Client id", client.client_id),
        ("Client instance", client.client_instance_id),
        ("Software", " ".join(v for v in (client.client_software_name, client.client_software_version) if v)),
        ("Principal", client.principal),
        ("Source address", client.client_source_address),
        ("Broker", finding.broker_node_id),
        ("Metric", finding.metric_name),
        ("Observed", how_bad),
        ("Peer group", finding.peer_group),
        ("Since", finding.since.isoformat()),
        ("Ended", finding.ended.isoformat() if finding.ended else None),
        ("Finding id", finding.finding_id),
    ]
    return [(name, value) for name, value in rows if value not in (None, "")]


def _link(finding: Finding, settings: AlertSettings) -> str | None:
    return safe_link(finding.link) or safe_link(settings.ui_url)


def compose_mail(finding: Finding, settings: AlertSettings) -> AlertMail:
    """One finding's mail: the subject names severity, kind and who; the body everything else."""
    subject = _t(f"[kip714] {_headline(finding)}: {_t(finding.subject, 120)}: {_t(finding.summary, 120)}")
    subject = _t(subject, SUBJECT_LIMIT)
    link = _link(finding, settings)
    text_rows = [f"{name}: {_t(value)}" for name, value in _rows(finding)]
    text = "\n".join([subject, "", *text_rows, *([f"UI: {link}"] if link else [])])
    table = "".join(f"<tr><th align='left'>{_h(n)}</th><td>{_h(v)}</td></tr>" for n, v in _rows(finding))
    body = (
        f"<p><b>{_h(_headline(finding))}</b>: {_h(finding.subject)}</p>"
        f"<p>{_h(finding.summary)}</p><table>{table}</table>"
        + (f"<p><a href='{html.escape(link, quote=True)}'>Open in the kip714 UI</a></p>" if link else "")
    )
    return AlertMail(
        subject=subject,
        text=text,
        html=body,
        message_id=f"<{finding.finding_id}.{finding.transition.value}@kip714>",
        kind=finding.kind.value,
        findings=(finding,),
    )


def compose_digest(
    kind: str, hour: datetime, findings: Sequence[Finding], settings: AlertSettings
) -> AlertMail:
    """The one digest of ``kind``'s findings past the limit in ``hour``: a line and a row per finding."""
    span = f"{hour:%Y-%m-%d %H:00}-{hour + HOUR:%H:00} UTC"
    subject = _t(
        f"[kip714] digest: {len(findings)} more {kind} finding(s) in {span} "
        f"(limit {settings.max_mails_per_kind_per_hour} mails per kind and hour)",
        SUBJECT_LIMIT,
    )
    lines = [
        f"- {_headline(f)}: {_t(f.subject, 120)}: {_t(f.summary, 160)} (since {f.since.isoformat()}, "
        f"{f.finding_id})"
        for f in findings
    ]
    link = safe_link(settings.ui_url)
    text = "\n".join([subject, "", *lines, *([f"UI: {link}"] if link else [])])
    rows = "".join(
        f"<tr><td>{_h(_headline(f))}</td><td>{_h(f.subject)}</td><td>{_h(f.summary)}</td>"
        f"<td>{_h(f.since.isoformat())}</td><td>{_link_html(_link(f, settings))}</td></tr>"
        for f in findings
    )
    body = (
        f"<p>{_h(subject, SUBJECT_LIMIT)}</p><table><tr><th>Finding</th><th>Who</th><th>What</th>"
        f"<th>Since</th><th></th></tr>{rows}</table>"
    )
    return AlertMail(
        subject=subject,
        text=text,
        html=body,
        message_id=f"<digest.{kind}.{hour:%Y%m%dT%H}@kip714>",
        kind=kind,
        findings=tuple(findings),
        digest=True,
    )


def _link_html(link: str | None) -> str:
    return f"<a href='{html.escape(link, quote=True)}'>open</a>" if link else ""
