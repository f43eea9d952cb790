"""What goes into decoding and what comes out: ``TopicRecord`` in, ``DecodedBatch`` out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple

import pyarrow as pa

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


@dataclass
class DecodedBatch:
    """Datapoints of the records that decoded, and ``(record index, reason)`` for those that did not."""

    datapoints: pa.Table
    failures: list[tuple[int, str]] = field(default_factory=list)
    points_per_record: list[int] = field(default_factory=list)


__all__ = ["VALUE_FORMATS", "DecodedBatch", "TopicRecord", "ValueFormat", "check_value_format"]
