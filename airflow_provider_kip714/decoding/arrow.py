"""Arrow assembly: the builder's rows (or the native buffers) as one table in ``DATAPOINT_SCHEMA``.

Record-level columns (lineage, labels, ``date``/``hour``) are built once per record and fanned out to
points with one ``take`` per level, not per column: each pyarrow compute call releases and re-takes
the GIL, and on a staging thread every re-take can wait a whole switch interval behind the consumer.
Values reaching here were checked per record (``limits``), so no conversion here can raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final

import numpy as np
import pyarrow as pa

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA, STRING_MAP
from airflow_provider_kip714.decoding import native as native_buffers
from airflow_provider_kip714.decoding.columns import (
    EXTRA_COLUMNS,
    METRIC_COLUMNS,
    METRIC_WIDTH,
    POINT_WIDTH,
    RECORD_WIDTH,
    SCOPE_COLUMNS,
    Columns,
)
from airflow_provider_kip714.decoding.labels import LABEL_COLUMNS
from airflow_provider_kip714.decoding.records import arrow_column

_MS_PER_HOUR: Final = 3_600_000


@lru_cache(maxsize=256)
def _date_hour(hour_index: int) -> tuple[str, int]:
    moment = datetime.fromtimestamp(hour_index * 3600, tz=UTC)
    return moment.strftime("%Y-%m-%d"), moment.hour


def _transpose(rows: Sequence[tuple[Any, ...]], width: int) -> list[Sequence[Any]]:
    if not rows:
        return [() for _ in range(width)]
    return list(zip(*rows, strict=True))


def _typed_array(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(arrow_type):
        return pa.array(values, type=pa.int64()).cast(arrow_type)
    return pa.array(values, type=arrow_type)


def timestamps(values: np.ndarray, arrow_type: pa.DataType, *, zero_is_null: bool = False) -> pa.Array:
    """Integer epoch values as a timestamp array, without a compute call."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    validity = None
    if zero_is_null and not values.all():
        validity = pa.py_buffer(np.packbits(values != 0, bitorder="little"))
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(values)])


def _nanos_or_null(values: Sequence[int], arrow_type: pa.DataType) -> pa.Array:
    """OTLP's fixed64 times (checked to fit int64) as timestamps; 0 means "unset": null."""
    return timestamps(np.asarray(values, dtype=np.int64), arrow_type, zero_is_null=True)


def _record_level(lineage: Sequence[Sequence[Any]]) -> pa.Table:
    """Lineage and ``date``/``hour`` per record (a small table, fanned out to points afterwards).

    ``lineage`` holds four per-record sequences: topics, partitions, offsets, timestamps in ms.
    """
    schema = DATAPOINT_SCHEMA
    topics, partitions, offsets, timestamps_ms = lineage
    timestamps_ms = np.asarray(timestamps_ms, dtype=np.int64)
    hours, hour_slot = np.unique(timestamps_ms // _MS_PER_HOUR, return_inverse=True)
    dates_hours = [_date_hour(int(hour)) for hour in hours]
    record_hour = hour_slot.reshape(-1)
    return pa.table(
        {
            "topic": arrow_column(topics, pa.string()),
            "partition": arrow_column(partitions, pa.int32()),
            "offset": arrow_column(offsets, pa.int64()),
            "record_timestamp": timestamps(timestamps_ms, schema.field("record_timestamp").type),
            "date": pa.array([date for date, _ in dates_hours], type=pa.string()).take(record_hour),
            "hour": pa.array([hour for _, hour in dates_hours], type=pa.int32()).take(record_hour),
        }
    )


def _label_level(label_rows: Sequence[tuple[Any, ...]]) -> pa.Table:
    """One row per distinct label set."""
    schema = DATAPOINT_SCHEMA
    label_columns = _transpose(label_rows, len(LABEL_COLUMNS))
    return pa.table(
        {
            name: pa.array(values, type=schema.field(name).type)
            for name, values in zip(LABEL_COLUMNS, label_columns, strict=True)
        }
    )


def _record_and_label_levels(
    lineage: Sequence[Sequence[Any]],
    label_slots: Sequence[int],
    label_rows: Sequence[tuple[Any, ...]],
    point_record: np.ndarray,
) -> list[tuple[pa.Table, np.ndarray]]:
    """The record and label-set levels with each point's row in them."""
    point_label = np.asarray(label_slots, dtype=np.int64)[point_record]
    return [(_record_level(lineage), point_record), (_label_level(label_rows), point_label)]


def record_arrays(
    records: Sequence[Sequence[Any]],
    label_rows: Sequence[tuple[Any, ...]],
    point_record: np.ndarray,
) -> dict[str, pa.Array]:
    """Lineage, label and partition columns per point.

    ``records`` holds five sequences (topics, partitions, offsets, timestamps in ms, label row per
    record); ``point_record`` gives each point's record.
    """
    *lineage, label_slots = records
    arrays: dict[str, pa.Array] = {}
    for level, index in _record_and_label_levels(lineage, label_slots, label_rows, point_record):
        fanned_out = level.take(pa.array(index, type=pa.int64()))  # one take per level
        arrays.update(zip(fanned_out.column_names, fanned_out.columns, strict=True))
    return arrays


def _extra_arrays(columns: Columns) -> dict[str, pa.Array]:
    """Distribution columns: null for number points, filled for the points that have extras."""
    schema, point_count = DATAPOINT_SCHEMA, columns.point_count
    if not columns.extras:
        return {name: pa.nulls(point_count, type=schema.field(name).type) for name in EXTRA_COLUMNS}
    extra_columns = _transpose(columns.extras, len(EXTRA_COLUMNS) + 1)
    extra_index = np.full(point_count, -1, dtype=np.int64)
    extra_index[np.asarray(extra_columns[0], dtype=np.int64)] = np.arange(len(columns.extras), dtype=np.int64)
    extra_take = pa.array(extra_index, mask=extra_index < 0)
    return {
        name: _typed_array(values, schema.field(name).type).take(extra_take)
        for name, values in zip(EXTRA_COLUMNS, extra_columns[1:], strict=True)
    }


def columns_table(columns: Columns, label_rows: Sequence[tuple[Any, ...]]) -> pa.Table:
    """The Python decoder's table."""
    schema = DATAPOINT_SCHEMA
    records, metrics, points = columns.records, columns.metrics, columns.points
    scope_columns = _transpose(columns.scopes, 5)
    metric_index = np.repeat(
        np.arange(len(metrics) // METRIC_WIDTH, dtype=np.int64),
        np.asarray(metrics[6::METRIC_WIDTH], dtype=np.int64),
    )
    scope_index = np.asarray(metrics[0::METRIC_WIDTH], dtype=np.int64)[metric_index]
    record_index = np.asarray(scope_columns[0], dtype=np.int64)[scope_index]
    per_record = [records[position::RECORD_WIDTH] for position in range(RECORD_WIDTH)]
    arrays = record_arrays(per_record, label_rows, record_index)
    for name, values in zip(SCOPE_COLUMNS, scope_columns[1:], strict=True):
        arrays[name] = _typed_array(values, schema.field(name).type).take(scope_index)
    for position, name in enumerate(METRIC_COLUMNS, start=1):
        values = metrics[position::METRIC_WIDTH]
        arrays[name] = _typed_array(values, schema.field(name).type).take(metric_index)
    arrays["start_time"] = _nanos_or_null(points[0::POINT_WIDTH], schema.field("start_time").type)
    arrays["time"] = _nanos_or_null(points[1::POINT_WIDTH], schema.field("time").type)
    arrays["value"] = pa.array(points[2::POINT_WIDTH], type=pa.float64())
    arrays["value_int"] = pa.array(points[3::POINT_WIDTH], type=pa.int64())
    arrays["flags"] = pa.array(points[4::POINT_WIDTH], type=pa.int32())
    arrays["attributes"] = pa.MapArray.from_arrays(
        pa.array(columns.attr_offsets, type=pa.int32()),
        pa.array(columns.attr_pairs[0::2], type=pa.string()),
        pa.array(columns.attr_pairs[1::2], type=pa.string()),
        type=STRING_MAP,
    )
    arrays.update(_extra_arrays(columns))
    return pa.Table.from_arrays([arrays[name] for name in schema.names], schema=schema)


def _string_codes(level: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """A string column's dictionary codes (int32, -1 for null) and its dictionary (distinct values,
    or the one a dictionary column already has)."""
    encoded = level if pa.types.is_dictionary(level.type) else level.dictionary_encode()
    codes = encoded.indices
    if codes.null_count:
        codes = codes.fill_null(-1)
    return codes.to_numpy(), encoded.dictionary


def fan_out(level: pa.Array, index: np.ndarray) -> pa.Array:
    """``level.take(index)``; a string (or dictionary) column as a dictionary array.

    For strings only the int32 codes are indexed (no string is copied per point), and the Parquet
    writer stores a dictionary column as it is instead of hashing every value again.
    """
    if not (pa.types.is_string(level.type) or pa.types.is_dictionary(level.type)):
        return level.take(pa.array(index, type=pa.int64()))
    codes, dictionary = _string_codes(level)
    point_codes = codes[index]
    mask = point_codes < 0
    indices = pa.array(point_codes, mask=mask) if mask.any() else pa.array(point_codes)
    return pa.DictionaryArray.from_arrays(indices, dictionary)


def native_table(
    lineage: Sequence[Sequence[Any]],
    label_slots: Sequence[int],
    label_rows: Sequence[tuple[Any, ...]],
    native: native_buffers.NativeColumns,
) -> pa.Table:
    """The native decoder's table, string columns dictionary-encoded (``DATAPOINT_SCHEMA`` after a cast).

    ``lineage`` holds four per-record sequences (topics, partitions, offsets, timestamps in ms) and
    ``label_slots`` each record's row in ``label_rows``. Gauges and sums only: the distribution
    columns are null. Each level's columns (record, label set, scope, metric) are fanned out to
    points with one index array per level.
    """
    schema = DATAPOINT_SCHEMA
    point_record = native.point_record
    arrays: dict[str, pa.Array] = {}
    for level, index in (
        *_record_and_label_levels(lineage, label_slots, label_rows, point_record),
        (pa.table(native.scopes), native.point_scope),
        (pa.table(native.metrics), native.point_metric),
    ):
        for name, column in zip(level.column_names, level.columns, strict=True):
            arrays[name] = fan_out(column.combine_chunks(), index)
    points = native.points
    for name in ("start_time", "time"):
        arrays[name] = timestamps(points[name], schema.field(name).type, zero_is_null=True)
    for name in ("value", "value_int", "flags", "attributes"):
        arrays[name] = points[name]
    point_count = len(point_record)
    for name in EXTRA_COLUMNS:
        arrays[name] = pa.nulls(point_count, type=schema.field(name).type)
    names = schema.names
    return pa.Table.from_arrays([arrays[name] for name in names], names=names)


__all__ = ["columns_table", "fan_out", "native_table", "record_arrays", "timestamps"]
