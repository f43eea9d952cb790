"""Findings to people: the mails (or any Airflow notifier's messages) the ``kip714_alerts`` DAG sends.

The DAG is scheduled on the ``kip714_findings`` asset. Each run takes the findings of its triggering
events (``findings_of_events``), records them as *pending* in the alert ledger on the data root
(``<root>/live/alerts_sent.json``, ``store.AlertLedger``) and only then sends them (``deliver``): a run
that dies, or a notifier that fails, leaves them pending and a later run sends exactly those. A
finding already sent, or already pending, is not taken again (the ledger remembers sent ones for
``SENT_RETENTION``).

**Rate limit.** At most ``max_mails_per_kind_per_hour`` mails per finding kind and clock hour (UTC, the
hour the DAG received the finding); the findings past that wait for one digest per kind and hour,
sent by the first run after that hour ends (the DAG also runs every ten minutes for that reason).

**Any notifier.** A mail is an ``AlertMail``; a channel turns it into an Airflow ``BaseNotifier`` and
calls it with the task's context plus ``kip714_alert`` (the ``AlertMail``). The notifier's templated
fields refer to it (``"{{ kip714_alert.subject }}"``): Jinja inserts a value without evaluating it
again, so a client id such as ``{{ conf }}`` stays text. The e-mail channel is the SMTP provider's
``SmtpNotifier`` on an Airflow SMTP connection.

**Client text is data.** Everything a client controls passes ``printable`` (control characters such as
CR/LF become visible escapes, so no header can be forged) with a length cap, and HTML escaping in the
body; a link is kept only if it is an http(s) URL.
"""

from __future__ import annotations

import html
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import urlsplit

from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.findings.events import findings_of_events
from airflow_provider_kip714.findings.model import Finding, Transition
from airflow_provider_kip714.findings.store import (
    ALERTS_SENT_FILE,
    AlertLedger,
    LiveStore,
    PendingAlert,
    SentAlert,
)
from airflow_provider_kip714.settings import variable_settings

if TYPE_CHECKING:
    from airflow.sdk.bases.notifier import BaseNotifier

log = logging.getLogger(__name__)

ALERTS_VARIABLE: Final = "kip714_alerts"
"""The Airflow Variable (JSON) holding ``AlertSettings``."""
CONTEXT_KEY: Final = "kip714_alert"
"""The context key under which a notifier's templates find the ``AlertMail``."""
RECONCILE_WINDOW: Final = timedelta(hours=1)
"""How far back each run also reads the findings asset's events (an event no run was triggered by)."""
SENT_RETENTION: Final = timedelta(days=7)
"""How long a sent transition is remembered (an event re-delivered within it is not mailed again)."""
TEXT_LIMIT: Final = 300
"""Characters kept of one client-controlled value in a mail."""
SUBJECT_LIMIT: Final = 200
HOUR: Final = timedelta(hours=1)


class AlertConfigError(Kip714Error, ValueError):
    """The alert settings or channel are unusable; the message is one line naming what to fix."""


class AlertDeliveryError(Kip714Error, RuntimeError):
    """A notifier failed; the message says why and how many findings wait for the next run."""


@dataclass(frozen=True)
class AlertSettings:
    """The ``kip714_alerts`` Variable: where mails go and how many per kind and hour."""

    to: tuple[str, ...] = ()
    smtp_conn_id: str = "smtp_default"
    from_email: str | None = None
    max_mails_per_kind_per_hour: int = 5
    notify_resolved: bool = True
    ui_url: str | None = None
    """The findings page, linked from a mail when the finding carries no link of its own."""

    @classmethod
    def from_json(cls, body: object) -> AlertSettings:
        """Parse the Variable's value (a JSON object or its text); ``AlertConfigError`` names the field."""
        body = variable_settings(body, ALERTS_VARIABLE, cls.__dataclass_fields__, AlertConfigError)
        if body is None:
            return cls()
        to = body.get("to", [])
        if isinstance(to, str):
            to = [part.strip() for part in to.replace(";", ",").split(",") if part.strip()]
        if not isinstance(to, list) or not all(isinstance(a, str) and _address_ok(a) for a in to):
            raise AlertConfigError(f"{ALERTS_VARIABLE}.to: must be a list of e-mail addresses")
        limit = body.get("max_mails_per_kind_per_hour", 5)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= 1000:
            raise AlertConfigError(
                f"{ALERTS_VARIABLE}.max_mails_per_kind_per_hour: must be a whole number 0..1000"
            )
        conn_id = body.get("smtp_conn_id", "smtp_default")
        if not isinstance(conn_id, str) or not conn_id.strip():
            raise AlertConfigError(f"{ALERTS_VARIABLE}.smtp_conn_id: must name an Airflow connection")
        from_email = body.get("from_email")
        if from_email is not None and not (isinstance(from_email, str) and _address_ok(from_email)):
            raise AlertConfigError(f"{ALERTS_VARIABLE}.from_email: must be an e-mail address")
        resolved = body.get("notify_resolved", True)
        if not isinstance(resolved, bool):
            raise AlertConfigError(f"{ALERTS_VARIABLE}.notify_resolved: must be true or false")
        ui_url = body.get("ui_url")
        if ui_url is not None and safe_link(ui_url) is None:
            raise AlertConfigError(f"{ALERTS_VARIABLE}.ui_url: must be an http(s) URL")
        return cls(tuple(to), conn_id.strip(), from_email, limit, resolved, ui_url)


def _address_ok(address: str) -> bool:
    """One plain address: an ``@``, no spaces, no control characters (it goes into a header)."""
    return "@" in address and address.isprintable() and not any(c in address for c in ' ,;<>"')


def safe_link(url: object) -> str | None:
    """``url`` if it is an http(s) URL without control characters, else None (never a ``javascript:``)."""
    if not isinstance(url, str) or not url.isprintable() or len(url) > 2000:
        return None
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else None


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


class AlertChannel(Protocol):
    """Where mails go: ``check`` refuses an unusable configuration before anything is sent."""

    name: str

    def check(self) -> None: ...

    def notifier(self, mail: AlertMail) -> BaseNotifier: ...


@dataclass(frozen=True)
class NotifierChannel:
    """Any Airflow notifier: ``factory`` builds a fresh one per mail (rendering mutates a notifier)."""

    name: str
    factory: Callable[[AlertMail], BaseNotifier]

    def check(self) -> None:
        return None

    def notifier(self, mail: AlertMail) -> BaseNotifier:
        return self.factory(mail)


@dataclass(frozen=True)
class SmtpChannel:
    """E-mail through the SMTP provider's ``SmtpNotifier`` on the settings' Airflow connection."""

    settings: AlertSettings
    name: str = "smtp"

    def check(self) -> None:
        """Recipients set, the connection exists: one line naming what to fix otherwise."""
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        if not self.settings.to:
            raise AlertConfigError(f"{ALERTS_VARIABLE}.to: no recipient configured")
        try:
            connection = BaseHook.get_connection(self.settings.smtp_conn_id)
        except AirflowNotFoundException:
            raise AlertConfigError(
                f"SMTP connection {self.settings.smtp_conn_id!r} does not exist "
                f"(create it, or name another in {ALERTS_VARIABLE}.smtp_conn_id)"
            ) from None
        if not connection.host:
            raise AlertConfigError(f"SMTP connection {self.settings.smtp_conn_id!r} has no host")

    def notifier(self, mail: AlertMail) -> BaseNotifier:
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        return SmtpNotifier(
            to=list(self.settings.to),
            from_email=self.settings.from_email,
            smtp_conn_id=self.settings.smtp_conn_id,
            subject="{{ " + CONTEXT_KEY + ".subject }}",
            html_content="{{ " + CONTEXT_KEY + ".html }}",
            custom_headers={"Message-ID": mail.message_id},
        )


@dataclass
class AlertOutcome:
    """What a run did, returned as the task's XCom."""

    received: int = 0
    duplicates: int = 0
    skipped_resolved: int = 0
    bad_events: int = 0
    mails: int = 0
    digests: int = 0
    sent_findings: int = 0
    held_for_digest: int = 0
    pending: int = 0
    subjects: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def receive(
    store: LiveStore, findings: Iterable[Finding], bad_events: int, now: datetime, settings: AlertSettings
) -> AlertOutcome:
    """Record the run's new findings as pending (one ledger write) before anything is sent."""
    outcome = AlertOutcome(bad_events=bad_events)
    ledger = store.alert_ledger()
    known = {entry.key for entry in ledger.sent} | {entry.key for entry in ledger.pending}
    for finding in findings:
        key = (finding.finding_id, finding.transition.value)
        if key in known:
            outcome.duplicates += 1
            continue
        if finding.transition is Transition.RESOLVED and not settings.notify_resolved:
            outcome.skipped_resolved += 1
            continue
        known.add(key)
        ledger.pending.append(PendingAlert(finding, now))
        outcome.received += 1
    ledger.bad_events += bad_events
    ledger.sent = [entry for entry in ledger.sent if entry.sent_at >= now - SENT_RETENTION]
    store.write_alert_ledger(ledger)
    return outcome


def deliver(
    store: LiveStore,
    settings: AlertSettings,
    channel: AlertChannel,
    context: Mapping[str, Any],
    now: datetime,
    outcome: AlertOutcome | None = None,
) -> AlertOutcome:
    """Send what is pending, within the rate limit; the ledger is written after every mail.

    Raises ``AlertConfigError`` or ``AlertDeliveryError`` (one line) when nothing or not everything
    could be sent; what was not sent stays pending for the next run.
    """
    outcome = outcome or AlertOutcome()
    ledger = store.alert_ledger()
    if not ledger.pending:
        return outcome
    limit = settings.max_mails_per_kind_per_hour
    singles = Counter((s.kind, _hour(s.received_at)) for s in ledger.sent if not s.digest)
    plan: list[AlertMail] = []
    digests: dict[tuple[str, datetime], list[Finding]] = {}
    for entry in sorted(ledger.pending, key=lambda e: e.received_at):
        slot = (entry.finding.kind.value, _hour(entry.received_at))
        if singles[slot] < limit:
            singles[slot] += 1
            plan.append(compose_mail(entry.finding, settings))
        elif now >= slot[1] + HOUR:
            digests.setdefault(slot, []).append(entry.finding)
        else:
            outcome.held_for_digest += 1
    plan += [compose_digest(kind, hour, found, settings) for (kind, hour), found in sorted(digests.items())]
    if not plan:
        outcome.pending = len(ledger.pending)
        return outcome
    try:
        channel.check()
    except AlertConfigError as err:
        raise AlertConfigError(f"{err}; {_waiting(ledger, store)}") from None
    for mail in plan:
        try:
            channel.notifier(mail)({**context, CONTEXT_KEY: mail})
        except Exception as err:  # any notifier, any failure: keep the rest, say it in one line
            reason = printable(f"{type(err).__name__}: {err}", TEXT_LIMIT)
            raise AlertDeliveryError(
                f"kip714 alerts: {channel.name} failed ({reason}); {_waiting(ledger, store)}"
            ) from None
        sent_keys = {(f.finding_id, f.transition.value) for f in mail.findings}
        for entry in [e for e in ledger.pending if e.key in sent_keys]:
            ledger.pending.remove(entry)
            ledger.sent.append(
                SentAlert(
                    entry.finding.finding_id,
                    entry.finding.transition.value,
                    entry.finding.kind.value,
                    entry.received_at,
                    now,
                    mail.digest,
                )
            )
        store.write_alert_ledger(ledger)
        outcome.subjects.append(mail.subject)
        outcome.sent_findings += len(mail.findings)
        if mail.digest:
            outcome.digests += 1
        else:
            outcome.mails += 1
    outcome.pending = len(ledger.pending)
    return outcome


def _waiting(ledger: AlertLedger, store: LiveStore) -> str:
    return (
        f"{len(ledger.pending)} finding(s) not sent wait in {store.root / ALERTS_SENT_FILE} "
        "and are sent by the next run"
    )


def run_alerts(
    context: Mapping[str, Any],
    settings_value: object,
    store: LiveStore,
    now: datetime,
    channel_for: Callable[[AlertSettings], AlertChannel] = SmtpChannel,
    recent_events: Mapping[Any, Sequence[Any]] | None = None,
) -> dict[str, Any]:
    """The ``kip714_alerts`` task: receive the triggering findings, then send what is pending.

    ``recent_events`` (the asset's events of the last ``RECONCILE_WINDOW``, read through the task's inlet)
    are received too: Airflow may attach two events of one emitting task to different runs, or none, and
    the ledger takes each transition once, so an event no run was triggered by is still mailed by the next
    run (the timed ones included). A bad ``kip714_alerts`` Variable still lets the findings be recorded
    (with the default settings) before the run fails on it, so fixing the Variable is enough for the next
    run to send them.
    """
    findings, bad = findings_of_events(context.get("triggering_asset_events") or {})
    if recent_events:
        recent, recent_bad = findings_of_events(recent_events)
        findings, bad = [*findings, *recent], bad + recent_bad
    problem: AlertConfigError | None = None
    try:
        settings = AlertSettings.from_json(settings_value)
    except AlertConfigError as err:
        settings, problem = AlertSettings(), err
    outcome = receive(store, findings, bad, now, settings)
    log.info(
        "kip714 alerts: %d finding(s) received, %d already known, %d bad event(s)",
        outcome.received,
        outcome.duplicates,
        outcome.bad_events,
    )
    if problem is not None:
        raise AlertConfigError(f"{problem}; {_waiting(store.alert_ledger(), store)}")
    outcome = deliver(store, settings, channel_for(settings), context, now, outcome)
    log.info(
        "kip714 alerts: %d mail(s) and %d digest(s) sent for %d finding(s); %d held for a digest, %d pending",
        outcome.mails,
        outcome.digests,
        outcome.sent_findings,
        outcome.held_for_digest,
        outcome.pending,
    )
    return outcome.as_dict()
