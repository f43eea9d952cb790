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

**Where the pieces live.** The Variable's settings: ``alert_settings``; composing a mail or a digest
(client text kept as text): ``alert_mail``; the channels (any Airflow notifier, or SMTP): ``alert_channels``.
This module holds the ledger's side: receive, deliver, and the task's ``run_alerts``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.findings.alert_channels import (
    CONTEXT_KEY,
    AlertChannel,
    SmtpChannel,
)
from airflow_provider_kip714.findings.alert_mail import TEXT_LIMIT, AlertMail, compose_digest, compose_mail
from airflow_provider_kip714.findings.alert_settings import AlertConfigError, AlertSettings
from airflow_provider_kip714.findings.events import findings_of_events
from airflow_provider_kip714.findings.model import Finding, Transition
from airflow_provider_kip714.findings.store import (
    ALERTS_SENT_FILE,
    AlertLedger,
    LiveStore,
    PendingAlert,
    SentAlert,
)

log = logging.getLogger(__name__)

RECONCILE_WINDOW: Final = timedelta(hours=1)
"""How far back each run also reads the findings asset's events (an event no run was triggered by)."""
SENT_RETENTION: Final = timedelta(days=7)
"""How long a sent transition is remembered (an event re-delivered within it is not mailed again)."""
HOUR: Final = timedelta(hours=1)


class AlertDeliveryError(Kip714Error, RuntimeError):
    """A notifier failed; the message says why and how many findings wait for the next run."""


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
