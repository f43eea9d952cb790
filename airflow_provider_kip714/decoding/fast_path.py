"""The native fast path and its merge with the reference: one home for "native first, Python for the rest".

``native.decode_values`` decodes gauges and sums (nearly every point clients push) with the GIL
released and marks every other record for the Python decoder (``reference``). Headers and lineage are
checked here once for both (``reference.record_failures``), the records the native side leaves are
decoded by the reference, and the two tables are merged back into record order.

Input is ``RecordColumns``: landing hands its consumed columns over as they are, so nothing here
walks the records one by one unless some need the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA
from airflow_provider_kip714.decoding import native
from airflow_provider_kip714.decoding.arrow import native_table
from airflow_provider_kip714.decoding.labels import BatchLabels
from airflow_provider_kip714.decoding.records import DecodedBatch, RecordColumns
from airflow_provider_kip714.decoding.reference import decode_reference, record_failures


def _lineage(columns: RecordColumns, failed: dict[int, str]) -> list[Sequence[Any]]:
    """Per-record lineage columns; failed records (which have no points) get harmless zeros."""
    lineage: list[Sequence[Any]] = [
        columns.topics,
        columns.partitions,
        columns.offsets,
        columns.timestamps_ms,
    ]
    if failed:
        lineage[1:] = [list(column) for column in lineage[1:]]
        for index in failed:
            for column in lineage[1:]:
                column[index] = 0  # type: ignore[index]
    return lineage


def merge_by_record(
    first: pa.Table, first_records: np.ndarray, second: pa.Table, second_records: np.ndarray
) -> pa.Table:
    """Both tables' rows in record order (a stable sort keeps each record's points in order)."""
    if second.num_rows == 0:
        return first
    if first.num_rows == 0:
        return second
    order = np.argsort(np.concatenate([first_records, second_records]), kind="stable")
    return pa.concat_tables([first, second]).take(pa.array(order))


def decode_fast(columns: RecordColumns, decoded: native.NativeColumns | None = None) -> DecodedBatch:
    """``otlp_proto`` records: natively where it can, the rest through the reference, in record order.

    ``decoded`` is the records' native decoding when it was already done (the native writer hands it
    back for a chunk it cannot write), with the records that fail on headers or lineage skipped.
    The table's string columns may be dictionary-encoded (``DATAPOINT_SCHEMA`` after a cast).
    """
    labels = BatchLabels.of_sets(columns.header_sets, columns.header_index)
    failed = record_failures(columns.partitions, columns.offsets, columns.timestamps_ms, labels)
    # A failed record is not decoded at all: its header or lineage problem is its reason.
    if decoded is None and isinstance(columns.values, pa.Array):
        decoded = native.decode_array(columns.values, skip=list(failed))
    elif decoded is None:
        values = list(columns.values)  # the extension reads a list
        for index in failed:
            values[index] = None
        decoded = native.decode_values(values)
    table = native_table(_lineage(columns, failed), labels.slots, labels.label_rows(), decoded)
    points_per_record = decoded.points_per_record.tolist()
    failures = sorted(failed.items())
    fallback = [int(index) for index in np.flatnonzero(decoded.status) if index not in failed]
    if fallback:
        reference = decode_reference(
            [columns.record(index) for index in fallback], "otlp_proto", labels.subset(fallback)
        )
        failures.extend((fallback[position], reason) for position, reason in reference.failures)
        for position, index in enumerate(fallback):
            points_per_record[index] = reference.points_per_record[position]
        table = merge_by_record(
            table.cast(DATAPOINT_SCHEMA),
            decoded.point_record,
            reference.datapoints,
            np.repeat(np.asarray(fallback, dtype=np.int64), reference.points_per_record),
        )
    failures.sort()
    return DecodedBatch(table, failures, points_per_record)


__all__ = ["decode_fast", "merge_by_record"]
