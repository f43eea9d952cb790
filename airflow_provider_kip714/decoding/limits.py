"""Which values fit the landing schema, and the quarantine reason of one that does not.

OTLP and Kafka carry wider numbers than the landing columns hold (``flags`` is a uint32 on the wire and
an int32 column; counts and times are uint64 on the wire and int64 columns; a record timestamp must
name a calendar hour for the ``date``/``hour`` partition). Decoding checks each value per record, so
a value that does not fit quarantines its own record with a reason and every other record lands: the
batch-wide Arrow conversions that run afterwards can then never raise.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import Final

import pyarrow as pa

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA
from airflow_provider_kip714.exceptions import TelemetryDecodeError

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1
# ``date``/``hour`` are calendar values: the record timestamp must fall in years 1..9999 (UTC).
RECORD_TIMESTAMP_MIN_MS: Final = int(datetime(1, 1, 1, tzinfo=UTC).timestamp() * 1000)
RECORD_TIMESTAMP_MAX_MS: Final = int(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp() * 1000) + 999
REASON_PREFIX: Final = "value does not fit the landing schema"


@cache
def column_range(column: str) -> tuple[int, int]:
    """Inclusive integer range of a numeric or timestamp ``datapoints`` column (lists: their items)."""
    arrow_type = DATAPOINT_SCHEMA.field(column).type
    if pa.types.is_list(arrow_type):
        arrow_type = arrow_type.value_type
    if column == "record_timestamp":
        return RECORD_TIMESTAMP_MIN_MS, RECORD_TIMESTAMP_MAX_MS
    if pa.types.is_int32(arrow_type):
        return -(2**31), INT32_MAX
    if pa.types.is_int64(arrow_type) or pa.types.is_timestamp(arrow_type):
        return -(2**63), INT64_MAX
    raise ValueError(f"{column}: not an integer or timestamp column ({arrow_type})")


def misfit(column: str, value: int) -> str | None:
    """The quarantine reason if ``value`` does not fit ``column``, else None."""
    low, high = column_range(column)
    if low <= value <= high:
        return None
    unit = " ms" if column == "record_timestamp" else ""
    return f"{REASON_PREFIX}: {column} = {value}{unit} is outside {low}..{high}"


def check(column: str, value: int) -> None:
    """Raise the record's ``TelemetryDecodeError`` if ``value`` does not fit ``column``."""
    reason = misfit(column, value)
    if reason is not None:
        raise TelemetryDecodeError(reason)


def check_max(column: str, values: list[int]) -> None:
    """``check`` on the largest of non-negative wire values (uint32/uint64: only the top can overflow)."""
    if values:
        check(column, max(values))


def record_misfit(partition: int, offset: int, timestamp_ms: int) -> str | None:
    """The reason a record's lineage columns cannot hold it, else None (checked before its value)."""
    if (
        -INT32_MAX - 1 <= partition <= INT32_MAX
        and -INT64_MAX - 1 <= offset <= INT64_MAX
        and RECORD_TIMESTAMP_MIN_MS <= timestamp_ms <= RECORD_TIMESTAMP_MAX_MS
    ):
        return None  # the usual case, without a lookup per column
    return (
        misfit("partition", partition) or misfit("offset", offset) or misfit("record_timestamp", timestamp_ms)
    )


__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "REASON_PREFIX",
    "check",
    "check_max",
    "column_range",
    "misfit",
    "record_misfit",
]
