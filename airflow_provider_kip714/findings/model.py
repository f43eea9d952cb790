"""A finding: one episode of something wrong with a client or a broker, and its transitions.

Live mode detects findings in the analytics tables (anomalies, delivery, broker client metrics); each
new or resolved finding becomes one event on the ``kip714_findings`` Airflow Asset with the finding in
the event's ``extra`` (``Finding.as_extra``). Whatever reacts to findings (the alert DAG, the
self-opening window) reads it back with ``Finding.from_extra``: the finding is parsed and checked once,
there, and travels as this typed object.

**Identity.** ``finding_id`` is derived from what went wrong, with whom, and since when
(``finding_key``): the same episode seen again by a later run has the same id, so it is neither
opened twice nor lost. A finding ends (``resolved``) when its condition is no longer seen.

Everything a client controls (its id, software name, metric names) is data: it is kept as given here,
and escaped where it is shown (``contract.client_text.printable``, HTML escaping in pages and mails).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from airflow_provider_kip714.exceptions import Kip714Error

FINDINGS_ASSET_NAME: Final = "kip714_findings"
"""The Airflow Asset whose events are findings (one event per opened or resolved episode)."""
EXTRA_KEY: Final = "finding"
"""The key of ``AssetEvent.extra`` that holds ``Finding.as_extra()``."""
SCHEMA_VERSION: Final = 1


class FindingError(Kip714Error, ValueError):
    """An asset event's ``extra`` that is not a finding of this schema."""


class FindingKind(StrEnum):
    ANOMALY = "anomaly"
    SILENT_CLIENT = "silent_client"
    THROTTLED_CLIENT = "throttled_client"
    PLUGIN_ERRORS = "plugin_errors"


class Severity(StrEnum):
    WARNING = "warning"
    CRITICAL = "critical"


class Transition(StrEnum):
    OPENED = "opened"
    RESOLVED = "resolved"


@dataclass(frozen=True)
class ClientIdentity:
    """Who: the broker-added labels of a client instance (``CLIENT_IDENTITY_COLUMNS``), as landed."""

    client_instance_id: str | None = None
    client_instance_id_hex: str | None = None
    client_id: str | None = None
    client_software_name: str | None = None
    client_software_version: str | None = None
    client_source_address: str | None = None
    principal: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ClientIdentity:
        return cls(**{name: _text_or_none(row.get(name)) for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Finding:
    """One episode. ``since`` is when it started; ``ended`` is set once it is resolved."""

    kind: FindingKind
    severity: Severity
    since: datetime
    summary: str
    """One line: what happened and how bad, e.g. ``poll idle ratio 0.02, peers' median 0.97``."""
    client: ClientIdentity = field(default_factory=ClientIdentity)
    metric_name: str | None = None
    attributes_key: str | None = None
    broker_node_id: int | None = None
    observed: float | None = None
    expected: float | None = None
    """Against what: the baseline's or peers' median, the threshold, or the expected pushes."""
    against: str | None = None
    """What ``expected`` is: ``own``, ``peers``, ``threshold``, ``expected_pushes``, ``ratio``."""
    peer_group: str | None = None
    ended: datetime | None = None
    transition: Transition = Transition.OPENED
    link: str | None = None
    """The UI page that shows it (filled by the emitter, which knows the API server's base URL)."""

    @property
    def finding_id(self) -> str:
        return finding_key(
            self.kind,
            self.client.client_instance_id,
            self.broker_node_id,
            self.metric_name,
            self.attributes_key,
            self.since,
        )

    @property
    def episode_key(self) -> tuple[str, str, str, str, str]:
        """What and who, without since when: the same episode seen by a later run has the same key."""
        return (
            self.kind.value,
            self.client.client_instance_id or "",
            "" if self.broker_node_id is None else str(self.broker_node_id),
            self.metric_name or "",
            self.attributes_key or "",
        )

    @property
    def subject(self) -> str:
        """Who, in words: the client id and instance, or the broker."""
        if self.kind is FindingKind.PLUGIN_ERRORS and self.client.client_instance_id is None:
            return f"broker {self.broker_node_id}"
        return f"client {self.client.client_id} ({self.client.client_instance_id})"

    def resolved(self, at: datetime) -> Finding:
        return replace(self, ended=at, transition=Transition.RESOLVED)

    def as_extra(self) -> dict[str, Any]:
        """JSON-ready ``AssetEvent.extra``: ``{"finding": {...}}`` with ISO-8601 UTC times."""
        body = asdict(self)
        body["kind"] = self.kind.value
        body["severity"] = self.severity.value
        body["transition"] = self.transition.value
        body["since"] = self.since.isoformat()
        body["ended"] = self.ended.isoformat() if self.ended else None
        body["finding_id"] = self.finding_id
        body["schema_version"] = SCHEMA_VERSION
        return {EXTRA_KEY: body}

    @classmethod
    def from_extra(cls, extra: dict[str, Any]) -> Finding:
        """The finding of an asset event's ``extra``; ``FindingError`` names the field that is wrong."""
        body = extra.get(EXTRA_KEY) if isinstance(extra, dict) else None
        if not isinstance(body, dict):
            raise FindingError(f"extra.{EXTRA_KEY}: must be an object holding a finding")
        try:
            finding = cls(
                kind=FindingKind(body["kind"]),
                severity=Severity(body["severity"]),
                since=_utc(body["since"], "since"),
                summary=str(body["summary"]),
                client=ClientIdentity.from_row(body.get("client") or {}),
                metric_name=_text_or_none(body.get("metric_name")),
                attributes_key=_text_or_none(body.get("attributes_key")),
                broker_node_id=_int_or_none(body.get("broker_node_id")),
                observed=_float_or_none(body.get("observed")),
                expected=_float_or_none(body.get("expected")),
                against=_text_or_none(body.get("against")),
                peer_group=_text_or_none(body.get("peer_group")),
                ended=_utc(body["ended"], "ended") if body.get("ended") else None,
                transition=Transition(body.get("transition", Transition.OPENED.value)),
                link=_text_or_none(body.get("link")),
            )
        except KeyError as missing:
            raise FindingError(f"extra.{EXTRA_KEY}.{missing.args[0]}: is required") from None
        except ValueError as bad:
            raise FindingError(f"extra.{EXTRA_KEY}: {bad}") from None
        stated = body.get("finding_id")
        if stated is not None and stated != finding.finding_id:
            raise FindingError(f"extra.{EXTRA_KEY}.finding_id: does not match the finding's identity")
        return finding


def finding_key(
    kind: FindingKind,
    client_instance_id: str | None,
    broker_node_id: int | None,
    metric_name: str | None,
    attributes_key: str | None,
    since: datetime,
) -> str:
    """A stable id: ``<kind>-<16 hex>`` of what, who and since when (to the second)."""
    parts = (
        kind.value,
        client_instance_id or "",
        str(broker_node_id or ""),
        metric_name or "",
        attributes_key or "",
        since.strftime("%Y%m%dT%H%M%SZ"),
    )
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]
    return f"{kind.value}-{digest}"


def _utc(value: object, name: str) -> datetime:
    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = datetime.fromisoformat(str(value))
        except ValueError:
            raise ValueError(f"{name}: must be an ISO-8601 time, got {str(value)[:40]!r}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{name}: must carry a UTC offset")
    return parsed


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def _float_or_none(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]
