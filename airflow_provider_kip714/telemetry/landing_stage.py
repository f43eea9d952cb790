"""The stager: a landing chunk decoded and written as the zone's temp files, on a staging thread.

``stage_chunk`` takes a chunk as the consume loop cut it (``landing_chunk``), reads its columns in place
(``record_columns``), decodes them, and has the run's zone (the one ``LandingZone`` of the run, never a
new one) write the raw, datapoints and quarantine files under a fresh token; the calling thread
commits them later, in order.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pyarrow as pa

from airflow_provider_kip714.contract.landing_schema import QUARANTINE_SCHEMA, RAW_SCHEMA, STRING_MAP
from airflow_provider_kip714.decoding.decoder import RecordColumns, TopicRecord, ValueFormat, decode_batch
from airflow_provider_kip714.decoding.header_sets import HeaderSet, as_text
from airflow_provider_kip714.decoding.native import variable_width
from airflow_provider_kip714.decoding.native_writer import (
    DatapointFile,
    NeedsReference,
    WrittenDatapoints,
    native_writer_available,
    write_natively,
    write_raw_natively,
)
from airflow_provider_kip714.decoding.records import Repeated, arrow_column
from airflow_provider_kip714.telemetry.landing_chunk import Chunk, PartitionBatch
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
    return per_set.take(arrow_column(index, pa.int32()))


def _binary(column: Sequence[bytes | None] | pa.BinaryArray) -> pa.Array:
    return column if isinstance(column, pa.Array) else pa.array(column, type=pa.binary())


def raw_table(records: Sequence[TopicRecord] | RecordColumns) -> pa.Table:
    """One row per record, bytes as received (the source of truth and the resume point).

    Built from columns, each distinct header set's map once (usually one per client).
    """
    columns = records if isinstance(records, RecordColumns) else RecordColumns.of(records)
    return pa.Table.from_arrays(
        [
            arrow_column(columns.topics, pa.string()),
            arrow_column(columns.partitions, pa.int32()),
            arrow_column(columns.offsets, pa.int64()),
            arrow_column(columns.timestamps_ms, pa.int64()).cast(RAW_SCHEMA.field("timestamp").type),
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
    zone: LandingZone, value_format: ValueFormat, records: Sequence[TopicRecord] | RecordColumns
) -> StagedChunk:
    """Decode one partition's consecutive records and stage them in ``zone`` (thread-safe).

    The native writer writes the raw file, and the datapoints files when every record is a gauge or a
    sum (``decoding/native_writer.py``); otherwise the chunk is decoded into a table that pyarrow writes.
    """
    columns = records if isinstance(records, RecordColumns) else RecordColumns.of(records)
    chunk = ChunkId(columns.partitions[0], columns.offsets[0], columns.offsets[-1])
    written = raw = None
    if native_writer_available():
        raw = write_raw_natively(columns)
        if value_format == "otlp_proto":
            written = write_natively(columns)
    if isinstance(written, WrittenDatapoints):
        datapoints: pa.Table | list[DatapointFile] = written.files
        points, failures = written.points, written.failures
    else:
        native_decoded = written.decoded if isinstance(written, NeedsReference) else None
        decoded = decode_batch(columns, value_format, dictionary_strings=True, native_decoded=native_decoded)
        datapoints, points, failures = decoded.datapoints, decoded.datapoints.num_rows, decoded.failures
    return zone.stage(
        chunk,
        raw if raw is not None else raw_table(columns),
        datapoints,
        quarantine_table([columns.record(index) for index, _ in failures], failures),
        points=points,
        last_timestamp_ms=columns.timestamps_ms[-1],
    )


def record_columns(chunk: Chunk) -> RecordColumns:
    """A chunk as the decoders and writers read it, without copying its columns.

    The topic and partition are ``Repeated``; a ``PartitionBatch`` hands over its lists; a
    ``NativeChunk``'s numbers are memoryviews over the reader's buffers and its keys and values Arrow
    binary arrays over them.
    """
    count = len(chunk)
    if isinstance(chunk, PartitionBatch):
        return RecordColumns(
            Repeated(chunk.topic, count),
            Repeated(chunk.partition, count),
            chunk.offsets,
            chunk.timestamps,
            chunk.keys,
            chunk.header_sets,
            chunk.header_index,
            chunk.values,
        )
    buffers = chunk.buffers
    return RecordColumns(
        Repeated(chunk.topic, count),
        Repeated(chunk.partition, count),
        _numbers(buffers["offsets"], "q"),
        _numbers(buffers["timestamps"], "q"),
        variable_width(buffers, "keys", pa.binary()),
        buffers["header_sets"],  # type: ignore[arg-type]
        _numbers(buffers["header_index"], "i"),
        variable_width(buffers, "values", pa.binary()),
    )


def _numbers(buffer: object, code: str) -> memoryview:
    """A little-endian number buffer of the native reader, read in place (``q`` int64, ``i`` int32)."""
    return memoryview(buffer).cast("B").cast(code)  # type: ignore[arg-type]


def stage_chunk(zone: LandingZone, value_format: ValueFormat, chunk: Chunk) -> StagedChunk:
    """``stage_records`` for a chunk the consume loop cut (what the landing run hands to staging threads)."""
    return stage_records(zone, value_format, record_columns(chunk))
