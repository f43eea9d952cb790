"""The Python decoder, the reference: every record decoded through protobuf, or quarantined with why.

The native fast path (``fast_path``) takes the common case and hands every other record here; so the
reasons below are the only quarantine reasons for values, and a fix here is a fix for both paths.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from google.protobuf.message import DecodeError, Message

from airflow_provider_kip714.decoding import limits
from airflow_provider_kip714.decoding.arrow import columns_table
from airflow_provider_kip714.decoding.attributes import NestedDecodeError
from airflow_provider_kip714.decoding.columns import Columns
from airflow_provider_kip714.decoding.labels import BatchLabels
from airflow_provider_kip714.decoding.parsing import (
    check_structure,
    not_protobuf_reason,
    parse_metrics_data,
    raw_attribute_metrics_data,
)
from airflow_provider_kip714.decoding.records import DecodedBatch, Repeated, TopicRecord, ValueFormat
from airflow_provider_kip714.exceptions import TelemetryDecodeError


def record_failures(
    partitions: Sequence[int], offsets: Sequence[int], timestamps_ms: Sequence[int], labels: BatchLabels
) -> dict[int, str]:
    """Records that fail before their value is read (headers, then lineage), by index; both paths.

    The usual batch has no such record: ``min``/``max`` over its columns say so at C speed.
    """
    if len(offsets) and (
        any(labels.errors)
        or any(limits.misfit("partition", bound) for bound in _bounds(partitions))
        or any(limits.misfit("offset", bound) for bound in _bounds(offsets))
        or any(limits.misfit("record_timestamp", bound) for bound in _bounds(timestamps_ms))
    ):
        return {
            index: reason
            for index, lineage in enumerate(zip(partitions, offsets, timestamps_ms, strict=True))
            if (reason := labels.errors[index] or limits.record_misfit(*lineage))
        }
    return {}


def _bounds(values: Sequence[int]) -> tuple[int, int]:
    """The least and greatest of a non-empty column: a ``Repeated``'s one value, else numpy's (a native
    buffer is read in place, no int object per record)."""
    if isinstance(values, Repeated):
        return values.value, values.value
    numbers = np.asarray(values)
    return int(numbers.min()), int(numbers.max())


def _add_record(
    columns: Columns,
    record: TopicRecord,
    label_row: int,
    value_format: ValueFormat,
    message_class: type[Message],
) -> str | None:
    """Add one record's rows, or roll them back and return the reason it is quarantined."""
    mark = columns.mark()
    try:
        data = parse_metrics_data(
            record.value, value_format, check_unknown_fields=False, message_class=message_class
        )
        record_index = columns.add_record(record, label_row)
        columns.add_metrics(record_index, data)
        columns.check_fit(mark)
        if len(columns.points) == mark[3]:
            check_structure(data)  # no points: make sure it is not another message type
        return None
    except TelemetryDecodeError as err:
        reason = err.reason
    except NestedDecodeError:
        reason = not_protobuf_reason(record.value)
    except (DecodeError, ValueError, OverflowError, TypeError) as err:
        reason = f"undecodable OTLP content: {type(err).__name__}: {err}"
    columns.rollback(mark)
    return reason


def decode_reference(
    records: Sequence[TopicRecord], value_format: ValueFormat, labels: BatchLabels | None = None
) -> DecodedBatch:
    """Decode ``records`` with the Python decoder; ``labels`` (aligned with records) if already parsed."""
    if labels is None:
        labels = BatchLabels.of([record.headers for record in records])
    early = record_failures(
        [record.partition for record in records],
        [record.offset for record in records],
        [record.timestamp_ms for record in records],
        labels,
    )
    columns = Columns()
    message_class = raw_attribute_metrics_data()
    failures: list[tuple[int, str]] = []
    points_per_record: list[int] = []
    for index, record in enumerate(records):
        points_before = columns.point_count
        reason = early.get(index)
        if reason is None:
            reason = _add_record(columns, record, labels.slots[index], value_format, message_class)
        if reason is None:
            points_per_record.append(columns.point_count - points_before)
        else:
            failures.append((index, reason))
            points_per_record.append(0)
    return DecodedBatch(columns_table(columns, labels.label_rows()), failures, points_per_record)


__all__ = ["decode_reference", "record_failures"]
