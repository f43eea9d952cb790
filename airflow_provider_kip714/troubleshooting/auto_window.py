"""Windows that open themselves: an opened finding naming a client starts ``kip714_troubleshoot`` for it.

Opt in with the Airflow Variable ``kip714_auto_windows`` (``{"enabled": true, ...}``, see
``AutoWindowSettings``); off by default. For each opened finding that names a client instance, the
``kip714_auto_window`` DAG asks ``plan_window`` and, when it agrees, triggers a troubleshooting run whose
conf selects exactly that instance (``client_instance_id`` = the escaped id), asks the metrics its
library pushes (the ``capabilities`` table), at 1 s, for a short window, and carries the finding
(``opened_by_finding``) so the run's report can begin with it.

**Guardrails, in order** (the first that refuses is logged in one line; nothing opens):
the finding must be *opened* and name an instance; a cool-down per client (no second window for an
instance within ``cooldown_minutes`` of the last); at most ``max_open`` auto-windows open at once and
``max_per_hour`` opened in the last hour; at most ``max_clients`` instances in one window; then the
capability and payload-size checks of ``guardrails.check_window`` (a library with no known metrics,
or whose push would pass ``telemetry.max.bytes``, gets no window: asking librdkafka for a metric it
lacks has crashed clients, and a Java client refused once stops pushing for good).

Every window opened is recorded with its finding in ``<root>/live/auto_windows.json`` before the run is
triggered; the guardrails count those records. Live mode's rows of the finding (its metric, for the
client and its peers) are kept then, for the report's first card (``findings/evidence.py``): the live
tables will have moved on when the report is written.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.contract.instance_id import to_kafka_form
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.findings.evidence import keep_evidence, prune_evidence
from airflow_provider_kip714.findings.model import EXTRA_KEY, Finding, Transition
from airflow_provider_kip714.findings.store import AutoWindow, LiveStore
from airflow_provider_kip714.settings import (
    CONN_ID_RULE,
    is_conn_id,
    scheduled_kafka_conn_id,
    variable_settings,
)
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.subscriptions.duration import parse_duration
from airflow_provider_kip714.subscriptions.model import MIN_INTERVAL_MS
from airflow_provider_kip714.troubleshooting.form import BUCKETS, MAX_WINDOW_S, MIN_WINDOW_S, OPENED_BY_KEY
from airflow_provider_kip714.troubleshooting.guardrails import Capability, check_window

log = logging.getLogger(__name__)

AUTO_WINDOWS_VARIABLE: Final = "kip714_auto_windows"
TROUBLESHOOT_DAG_ID: Final = "kip714_troubleshoot"
RUN_ID_PREFIX: Final = "kip714_auto__"
HOUR: Final = timedelta(hours=1)
EXPIRY_MARGIN: Final = timedelta(minutes=5)
"""An auto-window counts as open until its window plus this (landing and analysis after the window)."""
REFUSING_KINDS: Final = frozenset({"no_matching_metric", "payload_too_large"})
RECONCILE_WINDOW: Final = timedelta(minutes=15)
"""How far back each run also reads the findings asset's events. Airflow may attach two events of one
emitting task to different runs, or to none: on CI (2026-12-06) one live cycle announced two findings and
the one ``kip714_auto_window`` run it triggered held only the first. A window opened later than this
would mostly show the finding's aftermath."""


class AutoWindowConfigError(Kip714Error, ValueError):
    """The ``kip714_auto_windows`` Variable is unusable; the message names the setting."""


@dataclass(frozen=True)
class AutoWindowSettings:
    """The ``kip714_auto_windows`` Variable (JSON); every field is optional."""

    enabled: bool = False
    kafka_config_id: str = field(default_factory=scheduled_kafka_conn_id)
    """The cluster live mode watches (``KIP714_KAFKA_CONN_ID``, default ``kafka_default``)."""
    window_minutes: int = 10
    interval_ms: int = 1000
    cooldown_minutes: int = 60
    max_open: int = 2
    max_per_hour: int = 4
    max_clients: int = 5
    telemetry_max_bytes: int | None = None
    """The brokers' ``telemetry.max.bytes`` when not Kafka's default (1 MiB)."""

    @classmethod
    def from_json(cls, body: object) -> AutoWindowSettings:
        body = variable_settings(body, AUTO_WINDOWS_VARIABLE, cls.__dataclass_fields__, AutoWindowConfigError)
        if body is None:
            return cls()
        defaults = cls()
        enabled = body.get("enabled", defaults.enabled)
        if not isinstance(enabled, bool):
            raise AutoWindowConfigError(f"{AUTO_WINDOWS_VARIABLE}.enabled: must be true or false")
        conn = body.get("kafka_config_id", defaults.kafka_config_id)
        if not is_conn_id(conn):
            raise AutoWindowConfigError(
                f"{AUTO_WINDOWS_VARIABLE}.kafka_config_id: must name an Airflow connection ({CONN_ID_RULE})"
            )
        bounds = {
            "window_minutes": (MIN_WINDOW_S // 60 or 1, MAX_WINDOW_S // 60),
            "interval_ms": (MIN_INTERVAL_MS, 60_000),
            "cooldown_minutes": (0, 7 * 24 * 60),
            "max_open": (0, 100),
            "max_per_hour": (0, 1000),
            "max_clients": (1, 1000),
        }
        numbers: dict[str, int] = {}
        for name, (low, high) in bounds.items():
            value = body.get(name, getattr(defaults, name))
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise AutoWindowConfigError(
                    f"{AUTO_WINDOWS_VARIABLE}.{name}: must be a whole number {low}..{high}"
                )
            numbers[name] = value
        limit = body.get("telemetry_max_bytes")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1024):
            raise AutoWindowConfigError(
                f"{AUTO_WINDOWS_VARIABLE}.telemetry_max_bytes: must be bytes, at least 1024"
            )
        return cls(enabled=enabled, kafka_config_id=conn, telemetry_max_bytes=limit, **numbers)


@dataclass(frozen=True)
class WindowPlan:
    """A window the guardrails let open: the troubleshoot run's id and conf, and its record."""

    run_id: str
    conf: dict[str, Any]
    record: AutoWindow
    finding: Finding
    new: bool = True
    """False when the finding's window was recorded by an earlier try: trigger again, record nothing."""

    def trigger_kwargs(self) -> dict[str, Any]:
        """``TriggerDagRunOperator`` arguments (``expand_kwargs``)."""
        return {"trigger_run_id": self.run_id, "conf": self.conf}


@dataclass(frozen=True)
class Refusal:
    """Why no window opens for a finding; ``guardrail`` is stable for programs and tests."""

    finding_id: str
    guardrail: str
    reason: str


@dataclass
class Plans:
    windows: list[WindowPlan] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)


def library_metrics(capabilities: Sequence[Capability], name: str | None, version: str | None) -> list[str]:
    """The metric names the client's library (name and version; else the newest known version) pushed."""
    if not name:
        return []
    same_name = [c for c in capabilities if c.software_name == name]
    exact = [c.metric_name for c in same_name if c.software_version == version]
    if exact:
        return sorted(set(exact))
    versions = sorted({c.software_version for c in same_name})
    if not versions:
        return []
    newest = versions[-1]
    return sorted({c.metric_name for c in same_name if c.software_version == newest})


def plan_window(
    finding: Finding,
    settings: AutoWindowSettings,
    history: Sequence[AutoWindow],
    capabilities: Sequence[Capability],
    now: datetime,
) -> WindowPlan | Refusal:
    """Whether ``finding`` opens a window now, given the windows already opened (``history``).

    A finding that already has a record gets its plan again (``new`` False) and no new record: a retried
    run triggers the same run id again, which ``kip714_troubleshoot`` already has or now gets.
    """
    fid = finding.finding_id
    if finding.transition is not Transition.OPENED:
        return Refusal(fid, "not_opened", "only an opened finding opens a window")
    instance = finding.client.client_instance_id
    if not instance:
        return Refusal(fid, "no_client", "the finding names no client instance")
    try:
        instance = to_kafka_form(instance)
    except ValueError:
        return Refusal(fid, "no_client", f"client instance id {printable(instance, 60)} is not a KIP-714 id")
    existing = next((w for w in history if w.finding_id == fid), None)
    if existing is None:
        refusal = _caps_refusal(fid, instance, settings, history, now)
        if refusal is not None:
            return refusal
    clients = (instance,)
    if len(clients) > settings.max_clients:
        return Refusal(
            fid, "max_clients", f"{len(clients)} clients, at most {settings.max_clients} in one window"
        )
    built = _conf(finding, instance, settings, capabilities)
    if isinstance(built, Refusal):
        return built
    if existing is not None:
        return WindowPlan(existing.run_id, built, existing, finding, new=False)
    window_seconds = settings.window_minutes * 60
    record = AutoWindow(
        run_id=f"{RUN_ID_PREFIX}{fid}",
        finding_id=fid,
        client_instance_ids=clients,
        opened_at=now,
        expires_at=now + timedelta(seconds=window_seconds) + EXPIRY_MARGIN,
        summary=printable(
            f"{finding.kind.value} {finding.severity.value}: {finding.subject}: {finding.summary}", 300
        ),
    )
    return WindowPlan(record.run_id, built, record, finding)


def _caps_refusal(
    fid: str, instance: str, settings: AutoWindowSettings, history: Sequence[AutoWindow], now: datetime
) -> Refusal | None:
    """The cool-down per client, then the caps on open windows and on windows in the last hour."""
    cooldown = timedelta(minutes=settings.cooldown_minutes)
    recent = [w for w in history if instance in w.client_instance_ids and w.opened_at > now - cooldown]
    if recent:
        last = max(w.opened_at for w in recent)
        return Refusal(
            fid,
            "cooldown",
            f"client {instance} had an auto-window at {last.isoformat()}; cool-down until "
            f"{(last + cooldown).isoformat()}",
        )
    open_now = [w for w in history if w.expires_at > now]
    if len(open_now) >= settings.max_open:
        return Refusal(fid, "max_open", f"{len(open_now)} auto-window(s) open, at most {settings.max_open}")
    last_hour = [w for w in history if w.opened_at > now - HOUR]
    if len(last_hour) >= settings.max_per_hour:
        return Refusal(
            fid,
            "max_per_hour",
            f"{len(last_hour)} auto-window(s) in the last hour, at most {settings.max_per_hour}",
        )
    return None


def _conf(
    finding: Finding, instance: str, settings: AutoWindowSettings, capabilities: Sequence[Capability]
) -> dict[str, Any] | Refusal:
    """The troubleshoot run's conf, after the capability and payload-size checks."""
    fid = finding.finding_id
    name, version = finding.client.client_software_name, finding.client.client_software_version
    metrics = library_metrics(capabilities, name, version)
    if not name or not metrics:
        library = printable(f"{name} {version}", 120)
        return Refusal(
            fid, "capabilities", f"no capabilities known for {library}: which metrics to ask is unknown"
        )
    chosen = [c for c in capabilities if c.software_name == name and c.metric_name in metrics]
    versions = sorted({c.software_version for c in chosen})
    software = {
        "client_software_name": re.escape(name),
        "client_software_version": re.escape(version if version in versions else versions[-1]),
    }
    checked = check_window(chosen, metrics, software, settings.telemetry_max_bytes)
    problems = [w for w in checked if w.kind in REFUSING_KINDS]
    if problems:
        return Refusal(fid, problems[0].kind, problems[0].message)
    return {
        "kafka_config_id": settings.kafka_config_id,
        "client_instance_id": re.escape(instance),
        "metrics": metrics,
        "interval_ms": settings.interval_ms,
        "window_seconds": settings.window_minutes * 60,
        "bucket": bucket_for(settings.interval_ms),
        "min_clients": 1,
        OPENED_BY_KEY: finding.as_extra()[EXTRA_KEY],
    }


def bucket_for(interval_ms: int) -> str:
    """The finest rollup bucket that holds at least one push: the window's charts at its own resolution
    (1 s pushes, 1 s buckets), not the form's 10 s default."""
    for bucket in BUCKETS:
        if parse_duration(bucket, "bucket").total_seconds() * 1000 >= interval_ms:
            return bucket
    return BUCKETS[-1]


def findings_to_plan(
    triggering: Sequence[Finding], recent: Sequence[Finding], still_open: set[str]
) -> list[Finding]:
    """The run's triggering findings, then the recent events' opened findings that are still open.

    A recent finding was announced to some run, or to none (``RECONCILE_WINDOW``); planned again, one
    with a window gets its plan back (the same run id, triggered again: a no-op once the run exists) and
    one refused by a guardrail is asked again, so a window refused for a cap opens once the cap allows,
    while its finding lasts and its event is recent. A triggering finding whose end is among the recent
    events (its run was queued behind others) is left out. One entry per finding id."""
    ended = {f.finding_id for f in recent if f.transition is Transition.RESOLVED}
    chosen: dict[str, Finding] = {}
    for finding in triggering:
        if finding.finding_id not in ended:
            chosen.setdefault(finding.finding_id, finding)
    for finding in recent:
        if finding.transition is Transition.OPENED and finding.finding_id in still_open:
            chosen.setdefault(finding.finding_id, finding)
    return list(chosen.values())


def plan_windows(
    findings: Sequence[Finding],
    settings: AutoWindowSettings,
    history: Sequence[AutoWindow],
    capabilities: Sequence[Capability],
    now: datetime,
) -> Plans:
    """``plan_window`` for each finding in turn, each plan counting against the next (caps, cool-down)."""
    plans = Plans()
    opened = list(history)
    for finding in findings:
        decision = plan_window(finding, settings, opened, capabilities, now)
        if isinstance(decision, WindowPlan):
            plans.windows.append(decision)
            if decision.new:
                opened.append(decision.record)
        else:
            plans.refusals.append(decision)
    return plans


def open_windows(
    store: LiveStore,
    findings: Sequence[Finding],
    settings: AutoWindowSettings,
    capabilities: Sequence[Capability],
    now: datetime,
    live: RunArea | None = None,
) -> Plans:
    """``plan_windows`` against the recorded windows, with every new window recorded before it is
    triggered (the guardrails count the records); one log line per refusal and per window. With
    ``live`` (live mode's area), live mode's rows of each window's finding are kept for the run's report
    (``findings.evidence``), while they still exist."""
    history = prune(store.auto_windows(), now)
    plans = plan_windows(findings, settings, history, capabilities, now)
    for refusal in plans.refusals:
        log.info(
            "KIP714_AUTO_WINDOW refused %s %s: %s", refusal.finding_id, refusal.guardrail, refusal.reason
        )
    new = [window.record for window in plans.windows if window.new]
    if new:
        store.write_auto_windows([*history, *new])
    for window in plans.windows:
        if window.new:
            log.info("KIP714_AUTO_WINDOW opening %s for %s", window.run_id, window.record.client_instance_ids)
        else:  # a retry, or a recent event planned again: the same run id (created only if missing)
            log.info(
                "KIP714_AUTO_WINDOW %s recorded at %s: triggered again (creates the run only if missing)",
                window.run_id,
                window.record.opened_at.isoformat(),
            )
        if live is not None and window.new:  # a retry keeps what the first try kept
            kept = keep_evidence(window.finding, live)
            log.info("%s: live mode's rows kept for its report: %s", window.run_id, kept or "none")
    if live is not None and new:
        prune_evidence(live, [w.finding_id for w in [*history, *new]])
    return plans


def prune(
    history: Sequence[AutoWindow], now: datetime, keep: timedelta = timedelta(days=7)
) -> list[AutoWindow]:
    """The records still worth keeping: open, or opened within ``keep`` (the guardrails look back an hour
    and one cool-down; the UI shows the open ones)."""
    return [w for w in history if w.expires_at > now or w.opened_at > now - keep]
