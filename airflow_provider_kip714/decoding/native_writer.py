"""A chunk's ``datapoints`` Parquet files, decoded and written by the native extension in one call.

Landing used to decode a chunk into an Arrow table and write it with ``pq.write_table``: about 0.47 CPU s
per million points, most of landing's cost (``docs/benchmarks.md``). ``kip714_native.write_datapoints``
decodes the values and writes the same files (the same Parquet schema, encodings and statistics columns
as ``telemetry/landing_zone.py::parquet_options``; the rows read back equal) with the GIL released, at
about 0.18 s: columns that are constant over a record, a scope or a metric are written as runs, not
value by value (``native/src/parquet/``).

It covers chunks whose records are all gauges and sums, nearly every chunk clients push. Headers and
lineage are checked here first, exactly as ``fast_path.decode_fast`` checks them (those records are
quarantined, not decoded). When any other record needs the Python decoder (a histogram, a summary,
anything unusual), nothing is written and the caller takes the table path for the whole chunk, so
the reference decoder keeps deciding every record the native side does not; the extension hands back
what it decoded (``NeedsReference``), and the table path goes on from that instead of decoding again.

``KIP714_DATAPOINTS_WRITER=pyarrow`` turns the native writer off (for comparing the two, or to rule
it out); ``KIP714_OTLP_DECODER=python`` turns it off too, with the native decoder (``native_switches``
owns both).

The columns go to the extension as they are: keys and values as an Arrow array's buffers, numbers as
the sequences ``RecordColumns`` holds (a chunk's topic and partition ``Repeated``, the native reader's
numbers memoryviews over its buffers), which the extension iterates at C speed; no list is copied.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

import numpy as np
import pyarrow as pa

from airflow_provider_kip714 import native_switches
from airflow_provider_kip714.decoding import native
from airflow_provider_kip714.decoding.header_sets import as_text
from airflow_provider_kip714.decoding.labels import BatchLabels
from airflow_provider_kip714.decoding.records import RecordColumns, Repeated
from airflow_provider_kip714.decoding.reference import record_failures

log = logging.getLogger(__name__)

T = TypeVar("T")
PAGE_LIMIT: Final = "a Parquet page beyond 2 GiB"
"""The native writer's refusal (one page per column and row group); the chunk then goes to pyarrow."""


@dataclass(frozen=True)
class DatapointFile:
    """One written ``datapoints`` file: the UTC date and hour of its records, and its Parquet bytes."""

    date: str
    hour: int
    data: bytes


@dataclass(frozen=True)
class RawFile:
    """A chunk's written ``raw`` file: its record count and Parquet bytes."""

    records: int
    data: bytes


@dataclass(frozen=True)
class WrittenDatapoints:
    points: int
    files: list[DatapointFile]  # one per UTC hour of the records' timestamps, in ascending order
    failures: list[tuple[int, str]]  # records that failed on headers or lineage (no points), by index


@dataclass(frozen=True)
class NeedsReference:
    """Nothing written: some record needs the Python decoder. ``decoded`` is the chunk as the extension
    decoded it (records in ``failures`` skipped), for ``fast_path.decode_fast`` to go on from."""

    decoded: native.NativeColumns


def native_writer_available() -> bool:
    """Whether the extension has the writer and neither it nor the native decoder is turned off."""
    extension = native.kip714_native
    if extension is None or not all(hasattr(extension, name) for name in ("write_datapoints", "write_raw")):
        return False  # not installed, or a build from before the writer
    if not native_switches.is_native(native_switches.WRITER_ENV):
        _say_pyarrow_writer_once()
        return False
    return native.native_available()


@functools.cache
def _say_pyarrow_writer_once() -> None:
    log.info(
        "%s=pyarrow: datapoints are decoded into Arrow tables and written by pyarrow",
        native_switches.WRITER_ENV,
    )


def _binary(column: object) -> object:
    """A binary column for the extension: an Arrow array's buffers (read in place), else a list (the
    extension takes a Python list itself; a tuple, from ``RecordColumns.of``, is listed once)."""
    if isinstance(column, pa.Array):
        validity, offsets, data = (None if b is None else memoryview(b).cast("B") for b in column.buffers())
        return offsets, data, validity, column.offset, len(column)
    return column if isinstance(column, list) else list(column)  # type: ignore[call-overload]


def _numbers(column: Sequence[int], dtype: type[np.integer]) -> object:
    """A per-record number column for the extension, which reads a buffer in place: a ``Repeated`` (a
    chunk's partition) filled into an array by numpy, a buffer (the native reader's) as it is, anything
    else (a list or tuple, from ``RecordColumns.of``) as a sequence."""
    if isinstance(column, Repeated):
        return np.full(len(column), column.value, dtype=dtype)
    return column


def _unless_page_too_large(what: str, records: int, write: Callable[[], T]) -> T | None:
    """``write()``, or None when the writer refused a page beyond 2 GiB (pyarrow then cuts smaller)."""
    try:
        return write()
    except ValueError as err:
        if PAGE_LIMIT not in str(err):
            raise
        log.warning("%s of %d records left to pyarrow (which cuts pages smaller): %s", what, records, err)
        return None


def write_raw_natively(columns: RecordColumns) -> RawFile | None:
    """The chunk's ``raw`` file (``RAW_SCHEMA``, what ``landing_stage.raw_table`` holds), or None when
    the records are not one landing chunk (one topic).

    Header values are kept as text with undecodable bytes replaced, as the raw table keeps them; each
    distinct header set is converted once, and written once into the file's dictionaries.
    """
    topic = columns.single_topic()
    if topic is None:
        return None
    data = _unless_page_too_large(
        "raw file",
        len(columns),
        lambda: native.kip714_native.write_raw(  # type: ignore[union-attr]
            topic,
            _numbers(columns.partitions, np.int32),
            columns.offsets,
            columns.timestamps_ms,
            _binary(columns.keys),
            [as_text(headers) for headers in columns.header_sets],
            columns.header_index,
            _binary(columns.values),
        ),
    )
    return None if data is None else RawFile(len(columns), data)


def write_natively(columns: RecordColumns) -> WrittenDatapoints | NeedsReference | None:
    """The chunk's datapoints files; or, when a record needs the Python decoder, nothing written and
    the chunk's native decoding (``NeedsReference``), so it is not decoded natively again; or None when
    the chunk is not one topic's or a page would pass 2 GiB (the table path then takes it).

    ``columns`` is one landing chunk (one topic). The caller checks ``native_writer_available`` first.
    """
    topic = columns.single_topic()
    if topic is None:
        return None  # not a landing chunk: the table path handles every shape
    labels = BatchLabels.of_sets(columns.header_sets, columns.header_index)
    failed = record_failures(columns.partitions, columns.offsets, columns.timestamps_ms, labels)
    partitions = _numbers(columns.partitions, np.int32)
    records = (topic, partitions, columns.offsets, columns.timestamps_ms, labels.slots)
    written = _unless_page_too_large(
        "datapoints",
        len(columns),
        lambda: native.kip714_native.write_datapoints(  # type: ignore[union-attr]
            _binary(columns.values), records, list(labels.label_rows()), sorted(failed)
        ),
    )
    if written is None:
        return None
    points, files, decoded = written
    if decoded is not None:
        return NeedsReference(native.native_columns(decoded))
    return WrittenDatapoints(
        points,
        [DatapointFile(date, hour, data) for date, hour, data in files],
        sorted(failed.items()),
    )


__all__ = [
    "DatapointFile",
    "NeedsReference",
    "RawFile",
    "WrittenDatapoints",
    "native_writer_available",
    "write_natively",
    "write_raw_natively",
]
