"""What one landing chunk is made of: a partition's records in compact columns, and their tables.

A chunk is what the consuming thread cuts: a ``NativeChunk`` (the native reader's buffers) or a
``PartitionBatch`` (the Python reader's lists). ``stage_batch`` runs on a staging thread: decode,
build the raw and quarantine tables, write temp files.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from airflow_provider_kip714.contract.landing_schema import QUARANTINE_SCHEMA, RAW_SCHEMA, STRING_MAP
from airflow_provider_kip714.decoding.decoder import RecordColumns, TopicRecord, ValueFormat, decode_batch
from airflow_provider_kip714.decoding.header_sets import HeaderSet, HeaderSets, as_text
from airflow_provider_kip714.decoding.native import variable_width
from airflow_provider_kip714.decoding.native_writer import (
    DatapointFile,
    native_writer_available,
    write_natively,
    write_raw_natively,
)
from airflow_provider_kip714.telemetry.landing_zone import ChunkId, LandingZone, StagedChunk


def _sets_map(header_sets: Sequence[HeaderSet], index: Sequence[int]) -> pa.Array:
    """Headers as a map column: each distinct header set's map built once, then taken per record."""
    offsets = [0]
    keys: list[str] = []
    values: list[str | None] = []
    for headers in header_sets:
        for name, text in as_text(headers):
            keys.append(name)
            values.append(text)
        offsets.append(len(keys))
    per_set = pa.MapArray.from_arrays(
        pa.array(offsets, type=pa.int32()),
        pa.array(keys, type=pa.string()),
        pa.array(values, type=pa.string()),
        type=STRING_MAP,
    )
    return per_set.take(pa.array(index, type=pa.int32()))


def _binary(column: Sequence[bytes | None] | pa.BinaryArray) -> pa.Array:
    return column if isinstance(column, pa.Array) else pa.array(column, type=pa.binary())


def raw_table(records: Sequence[TopicRecord] | RecordColumns) -> pa.Table:
    """One row per record, bytes as received (the source of truth and the resume point).

    Built from columns, each distinct header set's map once (usually one per client).
    """
    columns = records if isinstance(records, RecordColumns) else RecordColumns.of(records)
    return pa.Table.from_arrays(
        [
            pa.array(columns.topics, type=pa.string()),
            pa.array(columns.partitions, type=pa.int32()),
            pa.array(columns.offsets, type=pa.int64()),
            pa.array(columns.timestamps_ms, type=pa.int64()).cast(RAW_SCHEMA.field("timestamp").type),
            _binary(columns.keys),
            _sets_map(columns.header_sets, columns.header_index),
            _binary(columns.values),
        ],
        schema=RAW_SCHEMA,
    )


def quarantine_table(bad: Sequence[TopicRecord], failures: Sequence[tuple[int, str]]) -> pa.Table:
    """``bad[i]`` is the record of ``failures[i]``."""
    if not bad:  # the usual chunk
        return QUARANTINE_SCHEMA.empty_table()
    raw = raw_table(bad)
    now_ms = int(time.time() * 1000)
    return pa.Table.from_arrays(
        [
            *raw.columns,
            pa.array([reason for _, reason in failures], type=pa.string()),
            pa.array([now_ms] * len(bad), type=pa.int64()).cast(
                QUARANTINE_SCHEMA.field("quarantined_at").type
            ),
        ],
        schema=QUARANTINE_SCHEMA,
    )


def stage_records(
    zone_root: str,
    topic: str,
    fsync: bool,
    value_format: ValueFormat,
    records: Sequence[TopicRecord] | RecordColumns,
) -> StagedChunk:
    """Decode one partition's consecutive records and write them as a staged chunk (thread-safe).

    The native writer writes the raw file, and the datapoints files when every record is a gauge or a
    sum (``decoding/native_writer.py``); otherwise the chunk is decoded into a table that pyarrow writes.
    """
    zone = LandingZone(zone_root, topic, fsync=fsync)
    columns = records if isinstance(records, RecordColumns) else RecordColumns.of(records)
    chunk = ChunkId(columns.partitions[0], columns.offsets[0], columns.offsets[-1])
    written = raw = None
    if native_writer_available():
        raw = write_raw_natively(columns)
        if value_format == "otlp_proto":
            written = write_natively(columns)
    if written is not None:
        datapoints: pa.Table | list[DatapointFile] = written.files
        points, failures = written.points, written.failures
    else:
        decoded = decode_batch(columns, value_format, dictionary_strings=True)
        datapoints, points, failures = decoded.datapoints, decoded.datapoints.num_rows, decoded.failures
    return zone.stage(
        chunk,
        raw if raw is not None else raw_table(columns),
        datapoints,
        quarantine_table([columns.record(index) for index, _ in failures], failures),
        points=points,
        last_timestamp_ms=columns.timestamps_ms[-1],
    )


class PartitionBatch:
    """One partition's consecutive records in compact columns, as the consumer hands them on.

    Each distinct header set (one per client connection, usually) is kept once: decoding parses its
    labels once and the raw table writes its map once, instead of once per record.
    """

    __slots__ = (
        "_interned",
        "header_index",
        "header_sets",
        "keys",
        "offsets",
        "partition",
        "timestamps",
        "topic",
        "values",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self._interned = HeaderSets()
        self.header_sets = self._interned.sets  # each distinct header set once
        self.header_index: list[int] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def append(
        self,
        offset: int,
        timestamp_ms: int,
        key: bytes | None,
        headers: list[tuple[str, bytes | None]] | None,
        value: bytes | None,
    ) -> None:
        self.header_index.append(self._interned.slot(headers))
        self.offsets.append(offset)
        self.timestamps.append(timestamp_ms)
        self.keys.append(key)
        self.values.append(value)

    def columns(self) -> RecordColumns:
        """The batch as the decoders read it (the lists themselves, not copies)."""
        count = len(self.offsets)
        return RecordColumns(
            [self.topic] * count,
            [self.partition] * count,
            self.offsets,
            self.timestamps,
            self.keys,
            self.header_sets,
            self.header_index,
            self.values,
        )


class NativeChunk:
    """One partition's consecutive records as the native reader (``kip714_native.TopicReader``) cut them.

    Numbers and bytes stay in the buffers the reader filled: keys and values become Arrow binary
    arrays over them, read in place by the decoder and the raw table's writer.
    """

    __slots__ = ("_buffers", "partition", "topic")

    def __init__(self, topic: str, buffers: dict[str, object]) -> None:
        self.topic = topic
        self.partition: int = buffers["partition"]  # type: ignore[assignment]
        self._buffers = buffers

    def __len__(self) -> int:
        return len(self._buffers["offsets"]) // 8  # type: ignore[arg-type]

    def _numbers(self, name: str, dtype: type[np.generic]) -> list[int]:
        return np.frombuffer(self._buffers[name], dtype=dtype).tolist()  # type: ignore[arg-type]

    def columns(self) -> RecordColumns:
        count = len(self)
        return RecordColumns(
            [self.topic] * count,
            [self.partition] * count,
            self._numbers("offsets", np.int64),
            self._numbers("timestamps", np.int64),
            variable_width(self._buffers, "keys", pa.binary()),
            self._buffers["header_sets"],  # type: ignore[arg-type]
            self._numbers("header_index", np.int32),
            variable_width(self._buffers, "values", pa.binary()),
        )


def stage_batch(
    zone_root: str,
    topic: str,
    fsync: bool,
    value_format: ValueFormat,
    batch: PartitionBatch | NativeChunk,
) -> StagedChunk:
    """``stage_records`` for a chunk (what the landing run hands to staging threads)."""
    return stage_records(zone_root, topic, fsync, value_format, batch.columns())
