"""What goes into decoding and what comes out: records (or ``RecordColumns``) in, ``DecodedBatch`` out."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple, TypeVar, overload

import numpy as np
import pyarrow as pa

from airflow_provider_kip714.decoding.header_sets import HeaderSet, HeaderSets

T = TypeVar("T")
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


class Repeated(Sequence[T]):
    """One value for every record (a landing chunk's topic and partition), without a list of copies.

    Iterating it is C-speed (``itertools.repeat``), which is what the extension's sequence arguments
    and ``min``/``max`` do; ``arrow_column`` makes it an Arrow array without a Python loop.
    """

    __slots__ = ("length", "value")

    def __init__(self, value: T, length: int) -> None:
        self.value = value
        self.length = length

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Repeated[T]: ...
    def __getitem__(self, index: int | slice) -> T | Repeated[T]:
        if isinstance(index, slice):
            return Repeated(self.value, len(range(*index.indices(self.length))))
        if not -self.length <= index < self.length:
            raise IndexError(index)
        return self.value

    def __iter__(self) -> Iterator[T]:
        return itertools.repeat(self.value, self.length)


def arrow_column(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array:
    """A per-record column as an Arrow array: ``Repeated`` without a loop, a buffer without a copy."""
    if isinstance(values, Repeated):
        return pa.repeat(pa.scalar(values.value, arrow_type), len(values))
    if isinstance(values, memoryview):
        return pa.array(np.asarray(values), type=arrow_type)
    return pa.array(values, type=arrow_type)


@dataclass(frozen=True)
class RecordColumns:
    """Records as columns, each distinct header set once: the form the decoders read.

    Landing builds it straight from what it consumed (``landing_stage.record_columns``: a chunk's
    topic and partition as ``Repeated``; the native reader's numbers as memoryviews over its buffers,
    its keys and values as Arrow binary arrays over the consumed bytes), so a staging thread does no
    per-record Python work before the native decoder; ``of`` builds it from ``TopicRecord``s.
    ``header_index[i]`` is record i's position in ``header_sets``.
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

    def single_topic(self) -> str | None:
        """The one topic of every record (a landing chunk's), or None when there are several or none."""
        if isinstance(self.topics, Repeated):
            return self.topics.value if len(self.topics) else None
        topics = self.topics
        return topics[0] if topics and topics.count(topics[0]) == len(topics) else None

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
    "Repeated",
    "TopicRecord",
    "ValueFormat",
    "arrow_column",
    "check_value_format",
]
