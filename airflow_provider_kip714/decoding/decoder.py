"""Decode telemetry-topic records (OTLP ``MetricsData`` + ``kip714.*`` headers) into datapoint rows.

The public entry points of the ``decoding`` package. Output is columnar (an Arrow table in
``DATAPOINT_SCHEMA``) because landing decodes millions of points. Records that cannot be decoded, or
that hold a value the landing schema cannot (``limits``), are reported with a specific reason
(``DecodedBatch.failures``), never dropped silently, and never stop the other records.

Modules: ``records`` (in and out types), ``header_sets`` and ``labels`` (``kip714.*`` headers to label
columns, each distinct header set once), ``parsing`` (protobuf / OTLP/JSON), ``attributes``
(attribute values as text), ``limits`` (what fits the schema), ``columns`` (the row builder),
``arrow`` (table assembly), ``reference`` (the Python decoder), ``native`` and ``fast_path`` (the
Rust decoder's buffers, and its merge with the reference).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA
from airflow_provider_kip714.decoding import native
from airflow_provider_kip714.decoding.attributes import render_any_value
from airflow_provider_kip714.decoding.fast_path import decode_fast
from airflow_provider_kip714.decoding.labels import RecordLabels, headers_to_dict, parse_labels
from airflow_provider_kip714.decoding.parsing import count_points, parse_metrics_data
from airflow_provider_kip714.decoding.records import (
    VALUE_FORMATS,
    DecodedBatch,
    RecordColumns,
    TopicRecord,
    ValueFormat,
    check_value_format,
)
from airflow_provider_kip714.decoding.reference import decode_reference
from airflow_provider_kip714.exceptions import TelemetryDecodeError


def decode_batch(
    records: Sequence[TopicRecord] | RecordColumns,
    value_format: ValueFormat = "otlp_proto",
    *,
    dictionary_strings: bool = False,
    native_decoded: native.NativeColumns | None = None,
) -> DecodedBatch:
    """Decode records into one datapoints table; failing records are listed with their reason.

    The table is in ``DATAPOINT_SCHEMA``; with ``dictionary_strings`` its string columns may stay
    dictionary-encoded (what landing writes: cheaper to build and to write, read back as strings).
    ``native_decoded`` is the records' native decoding, when the native writer already did it.
    """
    check_value_format(value_format)
    # The batch allocates many small tuples that cannot form cycles; pausing the cyclic GC avoids
    # repeated full scans of them (a measured 20-40% of decode time).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        if value_format == "otlp_proto" and native.native_available():
            columns = records if isinstance(records, RecordColumns) else RecordColumns.of(records)
            decoded = decode_fast(columns, native_decoded)
            if not dictionary_strings and decoded.datapoints.schema != DATAPOINT_SCHEMA:
                decoded.datapoints = decoded.datapoints.cast(DATAPOINT_SCHEMA)
            return decoded
        if isinstance(records, RecordColumns):
            records = records.records()
        return decode_reference(records, value_format)
    finally:
        if gc_was_enabled:
            gc.enable()


def decode_one(
    record: TopicRecord, value_format: ValueFormat = "otlp_proto"
) -> tuple[list[dict[str, Any]], str | None]:
    """One record's datapoint rows (dicts), or no rows and the reason it cannot be decoded."""
    batch = decode_batch([record], value_format)
    if batch.failures:
        return [], batch.failures[0][1]
    return batch.datapoints.to_pylist(), None


def decode_record(
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] | None,
    *,
    topic: str = "",
    partition: int = -1,
    offset: int = -1,
    timestamp_ms: int = 0,
    key: bytes | None = None,
    value_format: ValueFormat = "otlp_proto",
) -> list[dict[str, Any]]:
    """Decode one record to datapoint rows (dicts); raise ``TelemetryDecodeError`` if it is malformed."""
    rows, reason = decode_one(
        TopicRecord(topic, partition, offset, timestamp_ms, key, headers, value), value_format
    )
    if reason is not None:
        raise TelemetryDecodeError(reason)
    return rows


__all__ = [
    "VALUE_FORMATS",
    "DecodedBatch",
    "RecordColumns",
    "RecordLabels",
    "TopicRecord",
    "ValueFormat",
    "count_points",
    "decode_batch",
    "decode_one",
    "decode_record",
    "headers_to_dict",
    "parse_labels",
    "parse_metrics_data",
    "render_any_value",
]
