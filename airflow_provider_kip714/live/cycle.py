"""One live cycle: land what is new, analyse the trailing minutes, turn the tables into findings.

    begin_cycle -> land (the scheduled landing zone, exactly once) -> the Spark pipeline (in the live
    Spark Connect session, ``spark_session_for``) over
    [now - lookback, now) reading only the recent chunks (rollups, anomalies, broker metrics, delivery;
    capabilities once per ``capabilities_every``; no summaries read back) -> detect (transitions into
    the outbox) -> announce (``findings.announce``)

**Where things are.** Live mode lands into the scheduled landing zone (``<root>/landing``), the one
``kip714_rollups`` lands into: the zone's lease lets one of them land at a time and its offsets make
every record land once, whichever ran. Its tables go to ``<root>/live/analytics`` (the trailing window
of the last cycle, replaced each cycle), never to the hourly tables, so a closed hour's tables are the
same whether or not live mode ran; hours the window left more than an hour ago are removed from them
(``prune_left_hours``). Its state (status, findings, cursor) is ``<root>/live/*.json``; the own baselines
learned for the current history are kept in ``<root>/live/baselines/``.

**Work bounded by the lookback, not the hour.** (Not in proportion to what is new: each cycle analyses
its whole window again; docs/live.md.) Each cycle records the next offset per partition before it
lands (``CycleStart``). A cycle analysing ``[start, now)`` reads only the chunks at or after the
offsets of the last cycle that began at or before ``start - CLOCK_SLACK``: every record there had been
committed before that cycle began, so a record accepted later lands at those offsets or after, whoever
lands it (a later cycle, or ``kip714_rollups`` between two cycles). So a cycle at minute 55 of an hour
reads what one at minute 5 reads.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

import pandas as pd

from airflow_provider_kip714.analytics.tables import HourPartitions, read_table
from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.findings.detect import current_findings, pushing_instances, transitions
from airflow_provider_kip714.findings.from_tables import TABLES
from airflow_provider_kip714.findings.model import Finding
from airflow_provider_kip714.findings.store import CycleStart, LiveStatus, LiveStore
from airflow_provider_kip714.live.settings import EVERY_ENV, LOOKBACK_ENV, LiveSettings, seconds_text
from airflow_provider_kip714.storage.data_root import RunArea, StoragePath, remove_tree
from airflow_provider_kip714.telemetry.landing_zone import LandingZone
from spark_apps.kip714_common.connect_session_id import is_session_id, new_session_id

log = logging.getLogger(__name__)

ANALYSIS_STEPS: Final = ("rollups", "anomalies", "broker_metrics", "delivery")
"""The pipeline's steps every cycle runs; ``capabilities`` joins them once per ``capabilities_every``."""
CAPABILITIES_STEP: Final = "capabilities"
REWRITTEN_TABLES: Final = (
    "rollups", "thresholds", "anomalies", "broker_metrics", "broker_client_metrics", "delivery",
)  # fmt: skip
"""The live tables every cycle rewrites for its window's hours (``capabilities`` is refreshed less often and
keeps its hours)."""
KEPT_HOURS: Final = timedelta(hours=1)
"""How long before the window's hour the live tables keep an hour partition (``prune_left_hours``)."""
_DATE_FOLDER: Final = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")
_HOUR_FOLDER: Final = re.compile(r"^hour=(\d{1,2})$")
CLOCK_SLACK: Final = timedelta(minutes=1)
"""Clients' clocks and the broker's may differ: chunks are taken from a little before the window."""
KEPT_CYCLES: Final = timedelta(hours=2)
BASELINES_DIR: Final = "baselines"
"""``<root>/live/baselines/``: own baselines learned for the current history (``baselines_cache``)."""
HOURLY_LAG: Final = timedelta(hours=1)
"""How long after an hour ends the hourly DAG may still be landing and analysing it: own baselines look
this much further back for the last hour the hourly rollups table holds."""
SPARK_SESSION_IDLE: Final = timedelta(minutes=10)
"""A cycle beginning longer than this after the last one moves to a new Spark Connect session: a server
closes a session idle for its timeout (15 minutes on ``kip714 local-spark-connect``, an hour by Spark's
default) and refuses a closed id."""
SPARK_SESSION_LIFETIME: Final = timedelta(hours=1)
"""Cycles move to a new Spark Connect session at least this often: what a session holds on the server (its
cached plans) stays bounded, and an id the server closed (its idle timeout shorter than
``SPARK_SESSION_IDLE``, or a release by hand) is replaced within the hour; until then each cycle falls back
to a session of its own and compiles afresh. A restarted server simply opens a session of that id again."""


@dataclass(frozen=True)
class CyclePlan:
    """What one cycle's analysis reads and writes."""

    start: datetime
    end: datetime
    chunks_from: dict[int, int] | None
    """None: no earlier cycle recorded where to start, so every committed chunk of the hours is read."""
    spark_session: str
    """The Spark Connect server session the analysis runs in (the pipeline's ``--connect-session``)."""
    steps: tuple[str, ...] = (*ANALYSIS_STEPS, CAPABILITIES_STEP)
    history_end: datetime | None = None
    """Where own baselines' history ends (the pipeline's ``--history-end``): the end of the last hour the
    hourly rollups table holds; None: at the window's start."""
    baselines_cache: str | None = None
    """Where the baselines learned from that history are kept for the next cycles (``--baselines-cache``):
    a folder named after the history's files, so a rewritten hour is learned again."""

    def steps_flag(self) -> str:
        """The pipeline's ``--steps``."""
        return ",".join(self.steps)

    def history_end_flag(self) -> str | None:
        """The pipeline's ``--history-end``."""
        return None if self.history_end is None else self.history_end.isoformat()

    def baselines_cache_flag(self) -> str | None:
        """The pipeline's ``--baselines-cache``."""
        return self.baselines_cache

    def chunks_flag(self) -> str | None:
        if self.chunks_from is None:
            return None
        return json.dumps({str(p): offset for p, offset in sorted(self.chunks_from.items())})


def begin_cycle(
    store: LiveStore,
    landing_zone: StoragePath,
    topic: str,
    now: datetime,
    settings: LiveSettings,
    hourly: RunArea | None = None,
) -> CyclePlan:
    """Record where this cycle's landing starts, and plan the analysis of ``[now - lookback, now)``.

    ``hourly``: the area of the hourly tables own baselines learn from (``baseline_history_end``)."""
    landed = LandingZone(landing_zone, topic).landed_next_offsets()
    cycles = [cycle for cycle in store.cycle_starts() if cycle.at >= now - KEPT_CYCLES]
    last = max((cycle.at for cycle in cycles), default=None)
    steps = ANALYSIS_STEPS
    if refreshes_capabilities(last, now, settings.capabilities_every):
        steps = (*steps, CAPABILITIES_STEP)
    unanalysed = skipped_span(last, now, settings.lookback)
    if unanalysed is not None:
        log.warning("%s", fell_behind_message(unanalysed, settings))
    session = spark_session_for(cycles, now)
    cycles.append(CycleStart(now, landed, session))
    store.write_cycle_starts(cycles)
    start = now - settings.lookback
    try:
        if last is None or _hour(last - settings.lookback) != _hour(start):  # what to keep changes hourly
            prune_left_hours(RunArea(store.root), start)
    except Exception as err:  # tidying: never a reason to stop landing and analysing
        log.warning("Live tables: could not remove the hours the window left: %s", printable(str(err), 300))
    history_end, cache = None, None
    if hourly is not None:
        try:
            rollups = HourPartitions(hourly, "rollups")  # listed once for both
            history_end = baseline_history_end(rollups, start)
            if history_end is not None:
                cache = str(baselines_cache(store.root, rollups, history_end - settings.history, history_end))
        except Exception as err:  # a listing failed: learn from [start - history, start) as before
            history_end, cache = None, None
            log.warning(
                "Own baselines: could not list the hourly rollups table (%s); this cycle learns them from "
                "what it holds before the window",
                printable(str(err), 300),
            )
    return CyclePlan(start, now, chunks_from(cycles, start - CLOCK_SLACK), session, steps, history_end, cache)


def prune_left_hours(live: RunArea, window_start: datetime) -> list[str]:
    """Remove the hour partitions of the ``REWRITTEN_TABLES`` that began more than ``KEPT_HOURS`` before the
    hour ``window_start`` falls in; returns them (``table/date=.../hour=...``). ``begin_cycle`` calls it in
    the first cycle whose window begins in a new hour (what to keep changes no more often).

    A cycle rewrites only its window's hours. An hour the window has left keeps what the last cycle reaching
    into it wrote, and nothing reads it again (``detect`` judges the window's hours, the anomalies step the
    window and its breach context). Kept, they made every cycle's reads grow with live mode's age: detect
    read every hour of its four tables (at 1,000 instances 0.07-0.13 s of CPU a cycle with 2 hours held,
    2.3-3.5 s with a week's: ``docs/benchmarks.md``, session 29), and the pipeline listed them all."""
    keep_from = _hour(window_start) - KEPT_HOURS
    removed: list[str] = []
    for table in REWRITTEN_TABLES:
        folder = live.table(table)
        if not folder.exists():
            continue
        for day in folder.iterdir():
            found = _DATE_FOLDER.match(day.name)
            if found is None:
                continue  # not a partition (Spark's _SUCCESS, a temporary folder): left alone
            date = datetime.strptime(found.group(1), "%Y-%m-%d").replace(tzinfo=UTC)
            for hour in day.iterdir():
                matched = _HOUR_FOLDER.match(hour.name)
                if matched is not None and date + timedelta(hours=int(matched.group(1))) < keep_from:
                    remove_tree(hour)
                    removed.append(f"{table}/{day.name}/{hour.name}")
            if date + timedelta(days=1) <= keep_from:
                _remove_if_empty(day)
    if removed:
        log.info("Live tables: removed %d hour partitions the window has left", len(removed))
    return removed


def _hour(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def _remove_if_empty(folder: StoragePath) -> None:
    """Remove a local folder its hours were removed from. On an object store a prefix with no keys left is
    gone already (listing it may even fail), so there is nothing to do."""
    try:
        if folder.exists() and not any(True for _ in folder.iterdir()):
            remove_tree(folder)
    except (FileNotFoundError, NotADirectoryError):
        pass


def baselines_cache(
    live_root: StoragePath, rollups: HourPartitions, start: datetime, end: datetime
) -> StoragePath:
    """The folder keeping the own baselines learned from the hourly rollups of ``[start, end)``, named after
    those hours' files; the folders of other histories are removed (one history is in use at a time)."""
    name = f"{end:%Y-%m-%dT%H}-{rollups.fingerprint(start, end)}"
    parent = live_root / BASELINES_DIR
    if parent.exists():
        for folder in parent.iterdir():
            if folder.name != name:
                remove_tree(folder)
    return parent / name


def baseline_history_end(rollups: HourPartitions, start: datetime) -> datetime | None:
    """Where own baselines' history ends for a window beginning at ``start``: the end of the last hour the
    hourly rollups table holds, at or before ``start`` and at most ``HOURLY_LAG`` before the hour ``start``
    falls in. None (the history then ends at ``start``) when it holds neither.

    Ending the history at ``start`` learned from what the hourly table holds of ``[start - history,
    start)``, and it holds no minute of the current hour: at minute 55 a one-hour history was the last 5
    minutes of the hour before (a client group of one instance: 5 rows, under the 10 a baseline needs,
    ``--min-history-buckets``), and from the hour's start until the hourly DAG had written the hour
    before, it was empty: no own baselines at all."""
    start = start.astimezone(UTC)  # the partitions are named in UTC
    current_hour = start.replace(minute=0, second=0, microsecond=0)
    held = rollups.last_held(current_hour - HOURLY_LAG - timedelta(hours=1), start)
    if held is None:
        log.info(
            "Own baselines: the hourly rollups table holds no hour ending between %s and %s; they learn from "
            "what it holds before the window",
            (current_hour - HOURLY_LAG).isoformat(),
            start.isoformat(),
        )
    return held


def fell_behind_message(span: tuple[datetime, datetime], settings: LiveSettings) -> str:
    """The warning for pushes no live window covers (``skipped_span``), with what to change."""
    why = "cycles take longer than the lookback"
    fixes = f"give the Spark server more cores, or raise {LOOKBACK_ENV}"
    if settings.every is not None:
        why += f" or begin further apart than it ({EVERY_ENV}={seconds_text(settings.every)})"
        fixes = f"give the Spark server more cores, shorten {EVERY_ENV}, or raise {LOOKBACK_ENV}"
    return (
        f"Live mode fell behind: the last cycle began at {span[0].isoformat()}, more than the lookback "
        f"({seconds_text(settings.lookback)}) ago, so the pushes from then until {span[1].isoformat()} are "
        f"in no live window (the hourly DAG still lands and analyses them). Either {why}, or live mode "
        f"was paused: {fixes}."
    )


def spark_session_for(cycles: list[CycleStart], now: datetime) -> str:
    """The Spark Connect session of the cycle beginning ``now``: the last cycle's, so the server reuses the
    code it compiled for it (``kip714_common.shared_session``), unless that cycle began more than
    ``SPARK_SESSION_IDLE`` ago or its session's first cycle ``SPARK_SESSION_LIFETIME`` ago; then a new one."""
    last = max(cycles, key=lambda cycle: cycle.at, default=None)
    if last is None or not is_session_id(last.spark_session) or now - last.at > SPARK_SESSION_IDLE:
        return new_session_id()
    first = min(cycle.at for cycle in cycles if cycle.spark_session == last.spark_session)
    return new_session_id() if now - first >= SPARK_SESSION_LIFETIME else str(last.spark_session)


def skipped_span(
    last: datetime | None, now: datetime, lookback: timedelta
) -> tuple[datetime, datetime] | None:
    """The span no live window covers when a cycle begins more than ``lookback`` after the ``last`` one
    began (that cycle's window ended at its start, this one begins ``lookback`` before now); None when
    the windows meet or overlap, or when no cycle came before."""
    start = now - lookback
    return (last, start) if last is not None and start > last else None


def refreshes_capabilities(last: datetime | None, now: datetime, every: timedelta) -> bool:
    """Whether the cycle beginning ``now`` is the first of its ``every`` period (or follows none, ``last``
    None): it then runs the capabilities step too. Periods are aligned to the epoch, so every worker
    agrees."""
    if last is None:
        return True
    period = every.total_seconds()
    return int(now.timestamp() // period) != int(last.timestamp() // period)


def chunks_from(cycles: list[CycleStart], since: datetime) -> dict[int, int] | None:
    """The offsets of the last cycle that began at or before ``since``; None when none did.

    Not the first cycle after ``since``: a record accepted between ``since`` and that cycle's start may
    already have landed before it (by the hourly DAG, or by a landing that ran past ``since``), below its
    offsets. A partition the cycle did not know yet (no committed chunk then) starts at offset 0."""
    ordered = sorted(cycles, key=lambda cycle: cycle.at)
    if not ordered or ordered[0].at > since:
        return None  # live mode is younger than the window: read every committed chunk of the hours
    last = [cycle for cycle in ordered if cycle.at <= since][-1]
    partitions = set().union(*(cycle.next_offsets for cycle in ordered))
    return {partition: last.next_offsets.get(partition, 0) for partition in sorted(partitions)}


def detect(
    store: LiveStore,
    area: RunArea,
    plan_end: datetime,
    now: datetime,
    run_id: str | None,
    *,
    window_start: datetime | None = None,
) -> list[Finding]:
    """Queue the transitions the live tables show into the outbox; record the data's age. Returns them.

    ``window_start`` (the plan's start): only the hour partitions of ``[window_start, plan_end)`` are
    read, the ones this cycle's pipeline rewrote (``window_rows``)."""
    tables = {table: read_table(area, table) for table in TABLES}
    if window_start is not None:
        tables = {table: window_rows(frame, window_start, plan_end) for table, frame in tables.items()}
    ledger = store.ledger()
    changed = transitions(ledger, current_findings(tables), pushing_instances(tables), now)
    for finding in changed:
        ledger.queue(finding, now)
    store.write_ledger(ledger)
    store.write_status(LiveStatus(updated_at=now, data_through=plan_end, run_id=run_id))
    for finding in changed:
        log.info(
            "finding %s %s: %s, %s",
            finding.transition.value,
            finding.finding_id,
            printable(finding.subject, 200),
            printable(finding.summary, 400),
        )
    return changed


def window_rows(frame: pd.DataFrame, start: datetime, end: datetime) -> pd.DataFrame:
    """The rows of the ``date``/``hour`` partitions ``[start, end)`` touches.

    Each cycle replaces only its window's hour partitions of the live tables: once the window has left
    an hour, that hour's partition keeps what the last cycle reaching into it wrote until
    ``prune_left_hours`` removes it an hour later. Read whole, it would keep its anomalies open (and its
    silent clients silent) long after they ended."""
    if frame.empty or not {"date", "hour"} <= set(frame.columns):
        return frame
    hours = set()
    hour = start.replace(minute=0, second=0, microsecond=0)
    while hour < end:
        hours.add((hour.strftime("%Y-%m-%d"), hour.hour))
        hour += timedelta(hours=1)
    current = [(str(date), int(h)) in hours for date, h in zip(frame["date"], frame["hour"], strict=True)]
    return frame[current]
