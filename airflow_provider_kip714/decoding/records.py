"""What goes into decoding and what comes out: records (or ``RecordColumns``) in, ``DecodedBatch`` out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

import pyarrow as pa

from airflow_provider_kip714.decoding.header_sets import HeaderSet, HeaderSets

ValueFormat = Literal["otlp_proto", "otlp_json", "auto"]
VALUE_FORMATS: Final = ("otlp_proto", "otlp_json", "auto")


def check_value_format(value_format: str) -> None:
    """A caller's mistake, not a record's: raise ``ValueError`` (not a quarantine reason)."""
    if value_format not in VALUE_FORMATS:
        raise ValueError(f"value_format: must be one of {VALUE_FORMATS} (got {value_format!r})")


class TopicRecord(NamedTuple):
    """One telemetry-topic record as plain, picklable data (what decoding and landing need)."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    headers: Sequence[tuple[str, bytes | None]] | None
    value: bytes | None


@dataclass(frozen=True)
class RecordColumns:
    """Records as columns, each distinct header set once: the form the decoders read.

    Landing builds it straight from what it consumed (``PartitionBatch``, or the native reader's
    chunks, whose keys and values are Arrow binary arrays over the consumed bytes), so a staging
    thread does no per-record Python work before the native decoder; ``of`` builds it from
    ``TopicRecord``s. ``header_index[i]`` is record i's position in ``header_sets``.
    """

    topics: Sequence[str]
    partitions: Sequence[int]
    offsets: Sequence[int]
    timestamps_ms: Sequence[int]
    keys: Sequence[bytes | None] | pa.BinaryArray
    header_sets: Sequence[HeaderSet]
    header_index: Sequence[int]
    values: Sequence[bytes | None] | pa.BinaryArray

    @classmethod
    def of(cls, records: Sequence[TopicRecord]) -> RecordColumns:
        if not records:
            return cls((), (), (), (), (), (), (), ())
        topics, partitions, offsets, timestamps, keys, headers, values = zip(*records, strict=True)
        sets = HeaderSets()
        return cls(topics, partitions, offsets, timestamps, keys, sets.sets, sets.slots(headers), values)

    def __len__(self) -> int:
        return len(self.offsets)

    def records(self) -> list[TopicRecord]:
        """One ``TopicRecord`` per record (headers as their interned tuples)."""
        return [self.record(index) for index in range(len(self))]

    def record(self, index: int) -> TopicRecord:
        return TopicRecord(
            self.topics[index],
            self.partitions[index],
            self.offsets[index],
            self.timestamps_ms[index],
            _item(self.keys, index),
            self.header_sets[self.header_index[index]],
            _item(self.values, index),
        )


def _item(column: Sequence[bytes | None] | pa.BinaryArray, index: int) -> bytes | None:
    return column[index].as_py() if isinstance(column, pa.Array) else column[index]


@dataclass
class DecodedBatch:
    """Datapoints of the records that decoded, and ``(record index, reason)`` for those that did not."""

    datapoints: pa.Table
    failures: list[tuple[int, str]] = field(default_factory=list)
    points_per_record: list[int] = field(default_factory=list)


__all__ = [
    "VALUE_FORMATS",
    "DecodedBatch",
    "RecordColumns",
    "TopicRecord",
    "ValueFormat",
    "check_value_format",
]
