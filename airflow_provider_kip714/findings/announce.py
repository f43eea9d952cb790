"""Announcing findings as ``kip714_findings`` asset events, each transition exactly once.

The outbox (``store.FindingsLedger.outbox``) holds the transitions detection queued. The announcing task
reads the asset's recent events from Airflow (its inlet), drops the outbox entries Airflow already holds
(a previous attempt that succeeded after queueing them), and adds one event per remaining entry through
an ``AssetAlias`` outlet. Airflow registers a task's events together with its success, so:

- the task dies before success: no event exists, the entries stay queued, the next run announces them;
- the task succeeds: every event exists; the next run sees them and prunes the outbox.

Nothing is announced twice and nothing queued is lost, whichever process dies when.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from airflow.sdk import Asset, AssetAlias, AssetOrTimeSchedule, CronTriggerTimetable

from airflow_provider_kip714.findings.model import EXTRA_KEY, FINDINGS_ASSET_NAME, Finding
from airflow_provider_kip714.findings.store import LiveStore

FINDINGS_ALIAS_NAME: Final = "kip714_findings_announcer"
EVENT_LOOKBACK_MARGIN: Final = timedelta(minutes=5)
"""Events are searched from the oldest queued entry minus this (clock differences between hosts)."""


def findings_asset() -> Asset:
    """The asset whose events are findings; DAGs that react to findings schedule on it."""
    return Asset(name=FINDINGS_ASSET_NAME, group="kip714")


def findings_schedule(every_minutes: int) -> AssetOrTimeSchedule:
    """A consumer of findings runs on each event and every ``every_minutes``: Airflow may attach an event
    to another run than its own, or to none, so each run also reads the asset's recent events, and the
    timer runs read the events that started no run."""
    return AssetOrTimeSchedule(
        timetable=CronTriggerTimetable(f"*/{every_minutes} * * * *", timezone="UTC"), assets=findings_asset()
    )


def recent_finding_events(context: Any, window: timedelta, now: datetime) -> dict[Asset, list[Any]]:
    """The findings asset's events of the last ``window``, read through the task's inlet (declare
    ``inlets=[findings_asset()]``), keyed as ``triggering_asset_events`` is (``events.findings_of_events``
    reads both): a consumer reads these too, since Airflow may give an event to another run, or none."""
    asset = findings_asset()
    return {asset: list(context["inlet_events"][asset].after((now - window).isoformat()))}


def findings_alias() -> AssetAlias:
    return AssetAlias(name=FINDINGS_ALIAS_NAME)


class EventSink(Protocol):
    """``outlet_events[findings_alias()]``: ``add(asset, extra)`` records one event."""

    def add(self, asset: Asset, extra: dict[str, Any] | None = None) -> None: ...


def announced_keys(events: Iterable[Any]) -> set[tuple[str, str]]:
    """``(finding_id, transition)`` of every asset event (``AssetEventResult`` or a dict) that holds one."""
    keys = set()
    for event in events:
        extra = event.get("extra") if isinstance(event, dict) else getattr(event, "extra", None)
        body = (extra or {}).get(EXTRA_KEY) if isinstance(extra, dict) else None
        if isinstance(body, dict) and body.get("finding_id") and body.get("transition"):
            keys.add((str(body["finding_id"]), str(body["transition"])))
    return keys


def oldest_queued(store: LiveStore) -> datetime | None:
    """Where to start reading the asset's events: the oldest outbox entry minus a margin; None if empty."""
    outbox = store.ledger().outbox
    if not outbox:
        return None
    return min(entry.queued_at for entry in outbox) - EVENT_LOOKBACK_MARGIN


def announce(
    store: LiveStore, sink: EventSink, already: set[tuple[str, str]], link: str | None
) -> list[Finding]:
    """Add one event per outbox entry Airflow does not hold yet; returns the findings announced now."""
    ledger = store.ledger()
    pending = ledger.confirm(already)
    store.write_ledger(ledger)  # only confirmed entries leave the outbox
    asset = findings_asset()
    announced = []
    for entry in pending:
        finding = entry.finding if entry.finding.link or not link else replace(entry.finding, link=link)
        sink.add(asset, extra=finding.as_extra())
        announced.append(finding)
    return announced
