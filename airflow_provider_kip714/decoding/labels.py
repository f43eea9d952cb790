"""The broker-added labels: ``kip714.*`` headers checked, typed and turned into label columns."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import numpy as np

from airflow_provider_kip714.contract.instance_id import to_hex_form
from airflow_provider_kip714.contract.topic import CLIENT_HEADERS, Header, RecordType
from airflow_provider_kip714.decoding import limits
from airflow_provider_kip714.decoding.header_sets import Headers, HeaderSet, HeaderSets
from airflow_provider_kip714.decoding.records import Repeated
from airflow_provider_kip714.exceptions import TelemetryDecodeError
from spark_apps.kip714_common.landing_contract import BROKER_LABEL_COLUMNS

LABEL_COLUMNS: Final = BROKER_LABEL_COLUMNS
_CONTRACT_HEADERS: Final = frozenset(CLIENT_HEADERS)


@dataclass(frozen=True)
class RecordLabels:
    """The broker-added labels of one record, parsed from its ``kip714.*`` headers."""

    record_type: str
    client_instance_id: str | None
    client_instance_id_hex: str | None
    client_id: str | None
    client_software_name: str | None
    client_software_version: str | None
    client_source_address: str | None
    client_source_port: int | None
    principal: str | None
    listener: str | None
    node_id: int | None
    cluster_id: str | None
    subscription_id: int | None
    push_interval_ms: int | None
    terminating: bool | None

    def row(self) -> tuple[Any, ...]:
        """The label columns' values, in ``LABEL_COLUMNS`` order."""
        return tuple(getattr(self, name) for name in LABEL_COLUMNS)


def headers_to_dict(headers: Iterable[tuple[str, bytes | None]] | None) -> dict[str, str | None]:
    """Headers as text; a repeated header keeps its last value (as Kafka clients read them)."""
    if not headers:
        return {}
    return {name: (None if raw is None else raw.decode("utf-8", errors="replace")) for name, raw in headers}


def contract_headers(headers: Iterable[tuple[str, bytes | None]] | None) -> dict[str, str | None]:
    """``headers_to_dict`` for labelling: the contract's headers (``Header``) must be UTF-8; one that is
    not was written by something other than the plugin, and its record is quarantined with that reason
    instead of landing with replacement characters in a label column. Other headers (a later plugin's
    additions, anyone's own) are not read into labels and stay lenient."""
    if not headers:
        return {}
    text: dict[str, str | None] = {}
    for name, raw in headers:
        if raw is None:
            text[name] = None
        elif name in _CONTRACT_HEADERS:
            try:
                text[name] = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise TelemetryDecodeError(f"header {name}: must be UTF-8 text (got {raw[:64]!r})") from None
        else:
            text[name] = raw.decode("utf-8", errors="replace")
    return text


def _int_header(headers: dict[str, str | None], name: str, column: str) -> int | None:
    """An integer header that must also fit its landing column (``node_id`` is an int32, ...)."""
    text = headers.get(name)
    if text is None or text == "":
        return None
    try:
        number = int(text)
    except ValueError:
        raise TelemetryDecodeError(f"header {name}: must be an integer (got {text!r})") from None
    reason = limits.misfit(column, number)
    if reason is not None:
        raise TelemetryDecodeError(f"header {name}: {reason}")
    return number


def _bool_header(headers: dict[str, str | None], name: str) -> bool | None:
    text = headers.get(name)
    if text is None or text == "":
        return None
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise TelemetryDecodeError(f"header {name}: must be 'true' or 'false' (got {text!r})")
    return lowered == "true"


@lru_cache(maxsize=4096)
def _hex_instance_id(instance_id: str) -> str:
    return to_hex_form(instance_id)


def _record_type(headers: dict[str, str | None]) -> str:
    if not headers:
        raise TelemetryDecodeError("missing headers: the record has no kip714.* headers")
    record_type = headers.get(Header.TYPE)
    if record_type is None:
        raise TelemetryDecodeError(f"missing header {Header.TYPE}")
    if record_type not in (RecordType.CLIENT, RecordType.BROKER):
        raise TelemetryDecodeError(
            f"header {Header.TYPE}: must be 'client' or 'broker' (got {record_type!r})"
        )
    return record_type


def _instance_hex(instance_id: str | None) -> str | None:
    if instance_id is None:
        return None
    try:
        return _hex_instance_id(instance_id)
    except ValueError:
        raise TelemetryDecodeError(
            f"header {Header.CLIENT_INSTANCE_ID}: not a Kafka Uuid or UUID (got {instance_id!r})"
        ) from None


def parse_labels(headers: dict[str, str | None]) -> RecordLabels:
    """Validate and type the ``kip714.*`` headers; the type header and the record's identity are required."""
    record_type = _record_type(headers)
    instance_id = headers.get(Header.CLIENT_INSTANCE_ID) or None
    node_id = _int_header(headers, Header.NODE_ID, "node_id")
    if record_type == RecordType.CLIENT and instance_id is None:
        raise TelemetryDecodeError(f"missing header {Header.CLIENT_INSTANCE_ID} on a client record")
    if record_type == RecordType.BROKER and node_id is None:
        raise TelemetryDecodeError(f"missing header {Header.NODE_ID} on a broker record")
    return RecordLabels(
        record_type=record_type,
        client_instance_id=instance_id,
        client_instance_id_hex=_instance_hex(instance_id),
        client_id=headers.get(Header.CLIENT_ID),
        client_software_name=headers.get(Header.CLIENT_SOFTWARE_NAME),
        client_software_version=headers.get(Header.CLIENT_SOFTWARE_VERSION),
        client_source_address=headers.get(Header.CLIENT_SOURCE_ADDRESS),
        client_source_port=_int_header(headers, Header.CLIENT_SOURCE_PORT, "client_source_port"),
        principal=headers.get(Header.PRINCIPAL),
        listener=headers.get(Header.LISTENER),
        node_id=node_id,
        cluster_id=headers.get(Header.CLUSTER_ID),
        subscription_id=_int_header(headers, Header.SUBSCRIPTION_ID, "subscription_id"),
        push_interval_ms=_int_header(headers, Header.PUSH_INTERVAL_MS, "push_interval_ms"),
        terminating=_bool_header(headers, Header.TERMINATING),
    )


@dataclass
class BatchLabels:
    """A batch's labels: each distinct header set parsed once (``HeaderSets``).

    ``slots[i]`` is record i's row in ``rows`` (the valid label sets), or -1 when its headers are
    invalid; ``errors[i]`` is then the reason.
    """

    rows: list[RecordLabels]
    slots: Sequence[int]
    """An int64 numpy array (``of_sets``) or a list."""
    errors: Sequence[str | None]

    @classmethod
    def of(cls, header_lists: Sequence[Headers]) -> BatchLabels:
        sets = HeaderSets()
        return cls.of_sets(sets.sets, sets.slots(header_lists))

    @classmethod
    def of_sets(cls, header_sets: Sequence[HeaderSet], header_index: Sequence[int]) -> BatchLabels:
        """Labels of records given as interned header sets (``RecordColumns``): each set parsed once."""
        rows: list[RecordLabels] = []
        row_of_set: list[int] = []
        error_of_set: list[str | None] = []
        for header_set in header_sets:
            try:
                labels = parse_labels(contract_headers(header_set))
            except TelemetryDecodeError as err:
                row_of_set.append(-1)
                error_of_set.append(err.reason)
                continue
            row_of_set.append(len(rows))
            error_of_set.append(None)
            rows.append(labels)
        # per record by numpy's indexing, not a Python loop: a landing chunk's header_index is the native
        # reader's buffer, read in place, and the slots go to the native writer as a buffer again
        index = np.asarray(header_index, dtype=np.intp)
        slots = np.asarray(row_of_set, dtype=np.int64)[index] if len(index) else np.empty(0, np.int64)
        if not any(error_of_set):
            return cls(rows, slots, Repeated(None, len(index)))
        return cls(rows, slots, list(map(error_of_set.__getitem__, index.tolist())))

    def subset(self, indexes: Sequence[int]) -> BatchLabels:
        """The labels of some of the batch's records (same rows, no re-parsing)."""
        return BatchLabels(self.rows, [self.slots[i] for i in indexes], [self.errors[i] for i in indexes])

    def label_rows(self) -> Sequence[tuple[Any, ...]]:
        return [labels.row() for labels in self.rows]


__all__ = [
    "LABEL_COLUMNS",
    "BatchLabels",
    "RecordLabels",
    "contract_headers",
    "headers_to_dict",
    "parse_labels",
]
