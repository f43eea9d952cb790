"""Live mode's state on the data root: what is open, what waits to be announced, how fresh the data is.

Layout (``<root>/live/``, a local folder or an object-store prefix)::

    status.json          LiveStatus: when live mode last finished, and up to when its data reaches
    findings.json        FindingsLedger: the open findings and the outbox of transitions to announce
    auto_windows.json    AutoWindow records: windows opened by findings (the guardrails count them)
    cursor.json          CycleStart records: where each recent cycle's landing began, per partition
    alerts_sent.json     AlertLedger: findings the alert DAG received and has not sent yet, and what it sent

Each file is one JSON document written whole (a single PUT on object stores; a fsynced temporary file
renamed into place locally), so a reader sees the old or the new document, never half of one. One writer
at a time is the caller's business: live mode's DAG runs with ``max_active_runs=1``, the auto-window DAG
likewise.

**Exactly once.** Detection writes a transition into the outbox together with the new open set (one
document write). The emitting task announces each outbox entry as an asset event unless Airflow already
holds that event (``Finding.finding_id`` + transition in the event's ``extra``), and prunes only entries
that Airflow confirms. A crash at any point therefore re-announces nothing already announced and loses
nothing not yet announced.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from airflow_provider_kip714.findings.model import EXTRA_KEY, Finding, Transition
from airflow_provider_kip714.storage.data_root import StoragePath, live_area

STATUS_FILE: Final = "status.json"
LEDGER_FILE: Final = "findings.json"
AUTO_WINDOWS_FILE: Final = "auto_windows.json"
CURSOR_FILE: Final = "cursor.json"
ALERTS_SENT_FILE: Final = "alerts_sent.json"


def live_root(root: StoragePath | None = None) -> StoragePath:
    return live_area(root).root


@dataclass(frozen=True)
class LiveStatus:
    """How fresh live mode's tables are: ``data_through`` is the newest push they include."""

    updated_at: datetime
    data_through: datetime | None
    run_id: str | None = None
    landed_records: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "updated_at": self.updated_at.isoformat(),
            "data_through": self.data_through.isoformat() if self.data_through else None,
            "run_id": self.run_id,
            "landed_records": self.landed_records,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> LiveStatus:
        through = body.get("data_through")
        return cls(
            updated_at=datetime.fromisoformat(body["updated_at"]),
            data_through=datetime.fromisoformat(through) if through else None,
            run_id=body.get("run_id"),
            landed_records=int(body.get("landed_records") or 0),
        )


@dataclass(frozen=True)
class OutboxEntry:
    """A transition waiting to become an asset event; ``queued_at`` bounds the event search."""

    finding: Finding
    queued_at: datetime

    @property
    def key(self) -> tuple[str, str]:
        return self.finding.finding_id, self.finding.transition.value


@dataclass
class FindingsLedger:
    """The open findings by id, and the outbox of transitions not yet confirmed as asset events."""

    open: dict[str, Finding] = field(default_factory=dict)
    outbox: list[OutboxEntry] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "open": [finding.as_extra()[EXTRA_KEY] for finding in self.open.values()],
            "outbox": [
                {"queued_at": entry.queued_at.isoformat(), **entry.finding.as_extra()}
                for entry in self.outbox
            ],
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> FindingsLedger:
        opened = [Finding.from_extra({EXTRA_KEY: item}) for item in body.get("open", [])]
        outbox = [
            OutboxEntry(Finding.from_extra(item), datetime.fromisoformat(item["queued_at"]))
            for item in body.get("outbox", [])
        ]
        return cls({finding.finding_id: finding for finding in opened}, outbox)

    def queue(self, finding: Finding, at: datetime) -> None:
        """Record a transition: opened findings join the open set, resolved ones leave it."""
        if finding.transition is Transition.OPENED:
            self.open[finding.finding_id] = finding
        else:
            self.open.pop(finding.finding_id, None)
        self.outbox.append(OutboxEntry(finding, at))

    def confirm(self, announced: set[tuple[str, str]]) -> list[OutboxEntry]:
        """Drop the outbox entries Airflow holds as events; returns what is left to announce."""
        self.outbox = [entry for entry in self.outbox if entry.key not in announced]
        return list(self.outbox)


@dataclass(frozen=True)
class AutoWindow:
    """A troubleshooting run opened by a finding: which, for whom, and until when."""

    run_id: str
    finding_id: str
    client_instance_ids: tuple[str, ...]
    opened_at: datetime
    expires_at: datetime
    summary: str

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "finding_id": self.finding_id,
            "client_instance_ids": list(self.client_instance_ids),
            "opened_at": self.opened_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
            "summary": self.summary,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> AutoWindow:
        return cls(
            run_id=str(body["run_id"]),
            finding_id=str(body["finding_id"]),
            client_instance_ids=tuple(str(i) for i in body.get("client_instance_ids", [])),
            opened_at=datetime.fromisoformat(body["opened_at"]),
            expires_at=datetime.fromisoformat(body["expires_at"]),
            summary=str(body.get("summary", "")),
        )


@dataclass(frozen=True)
class CycleStart:
    """A live cycle's start, and the next offset to land per partition at that moment.

    Every record the broker accepted after ``at`` lands at or after ``next_offsets`` (that cycle or a later
    one lands it), so a cycle that analyses ``[at, now)`` needs only the chunks from those offsets on."""

    at: datetime
    next_offsets: dict[int, int]
    spark_session: str | None = None
    """The Spark Connect server session the cycle's analysis runs in (``live.cycle.spark_session_for``);
    None in cursors written before cycles shared one."""

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "at": self.at.isoformat(),
            "next_offsets": {str(p): o for p, o in self.next_offsets.items()},
        }
        if self.spark_session is not None:
            body["spark_session"] = self.spark_session
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> CycleStart:
        offsets = {int(p): int(o) for p, o in body.get("next_offsets", {}).items()}
        return cls(datetime.fromisoformat(body["at"]), offsets, body.get("spark_session"))


@dataclass(frozen=True)
class PendingAlert:
    """A transition the alert DAG received and has not yet mailed; ``received_at`` picks its hour."""

    finding: Finding
    received_at: datetime

    @property
    def key(self) -> tuple[str, str]:
        return self.finding.finding_id, self.finding.transition.value


@dataclass(frozen=True)
class SentAlert:
    """A transition that was handed to the notifiers, on its own (``digest`` False) or in a digest."""

    finding_id: str
    transition: str
    kind: str
    received_at: datetime
    sent_at: datetime
    digest: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return self.finding_id, self.transition

    def as_json(self) -> dict[str, Any]:
        return {
            "finding_id": self.finding_id,
            "transition": self.transition,
            "kind": self.kind,
            "received_at": self.received_at.isoformat(),
            "sent_at": self.sent_at.isoformat(),
            "digest": self.digest,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SentAlert:
        return cls(
            finding_id=str(body["finding_id"]),
            transition=str(body["transition"]),
            kind=str(body["kind"]),
            received_at=datetime.fromisoformat(body["received_at"]),
            sent_at=datetime.fromisoformat(body["sent_at"]),
            digest=bool(body.get("digest", False)),
        )


@dataclass
class AlertLedger:
    """The alert DAG's memory: what waits to be sent, and what was sent (for no-twice and the rate limit)."""

    pending: list[PendingAlert] = field(default_factory=list)
    sent: list[SentAlert] = field(default_factory=list)
    bad_events: int = 0
    """Asset events whose ``extra`` was not a finding, counted over the ledger's life."""

    def as_json(self) -> dict[str, Any]:
        return {
            "pending": [
                {"received_at": entry.received_at.isoformat(), **entry.finding.as_extra()}
                for entry in self.pending
            ],
            "sent": [entry.as_json() for entry in self.sent],
            "bad_events": self.bad_events,
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> AlertLedger:
        pending = [
            PendingAlert(Finding.from_extra(item), datetime.fromisoformat(item["received_at"]))
            for item in body.get("pending", [])
        ]
        sent = [SentAlert.from_json(item) for item in body.get("sent", [])]
        return cls(pending, sent, int(body.get("bad_events") or 0))


class LiveStore:
    """Reads and writes the documents under ``<root>/live/``; a missing document reads as empty."""

    def __init__(self, root: StoragePath | None = None) -> None:
        self.root = live_root(root)

    def status(self) -> LiveStatus | None:
        body = self._read(STATUS_FILE)
        return LiveStatus.from_json(body) if body else None

    def write_status(self, status: LiveStatus) -> None:
        self._write(STATUS_FILE, status.as_json())

    def ledger(self) -> FindingsLedger:
        body = self._read(LEDGER_FILE)
        return FindingsLedger.from_json(body) if body else FindingsLedger()

    def write_ledger(self, ledger: FindingsLedger) -> None:
        self._write(LEDGER_FILE, ledger.as_json())

    def open_findings(self) -> list[Finding]:
        """Open findings, the most severe and the oldest first."""
        findings = list(self.ledger().open.values())
        return sorted(findings, key=lambda f: (f.severity.value != "critical", f.since))

    def auto_windows(self) -> list[AutoWindow]:
        body = self._read(AUTO_WINDOWS_FILE)
        return [AutoWindow.from_json(item) for item in (body or {}).get("windows", [])]

    def write_auto_windows(self, windows: list[AutoWindow]) -> None:
        self._write(AUTO_WINDOWS_FILE, {"windows": [window.as_json() for window in windows]})

    def cycle_starts(self) -> list[CycleStart]:
        body = self._read(CURSOR_FILE)
        return [CycleStart.from_json(item) for item in (body or {}).get("cycles", [])]

    def write_cycle_starts(self, cycles: list[CycleStart]) -> None:
        self._write(CURSOR_FILE, {"cycles": [cycle.as_json() for cycle in cycles]})

    def alert_ledger(self) -> AlertLedger:
        body = self._read(ALERTS_SENT_FILE)
        return AlertLedger.from_json(body) if body else AlertLedger()

    def write_alert_ledger(self, ledger: AlertLedger) -> None:
        self._write(ALERTS_SENT_FILE, ledger.as_json())

    def _read(self, name: str) -> dict[str, Any] | None:
        path = self.root / name
        if not path.exists():
            return None
        with path.open("r", encoding="utf-8") as handle:
            return json.load(handle)

    def _write(self, name: str, body: dict[str, Any]) -> None:
        text = json.dumps(body, sort_keys=True, indent=1)
        path = self.root / name
        if isinstance(path, Path):
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{name}.", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
            return
        with path.open("w", encoding="utf-8") as out:  # one PUT: whole once listed
            out.write(text)
