"""Where a landing run starts and ends each partition of the topic.

Start: after the zone's last landed offset; a partition the zone has no history for starts at its
first record at or after ``since`` (or at the earliest retained offset). Offsets retention deleted
before they landed are skipped, counted and logged. End: the end offset read at the start (a bounded
run), none (following), or the first record at or after ``until``. While ``until`` is in the future
a partition stays open; ``UNTIL_SETTLE_S`` after it, a partition still without such a record ends
where it is then. A partition whose last offsets are transaction markers never delivers its last
offset, so an idle run also ends partitions whose consumer position has passed the end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from airflow_provider_kip714.telemetry import topic_consumer
from airflow_provider_kip714.telemetry.landing_zone import LandingZone
from airflow_provider_kip714.telemetry.topic_generation import reconcile

log = logging.getLogger(__name__)

# The plugin stamps a record before its producer appends it: after `until`, wait this long for
# records stamped just before it, then end quiet partitions at their end offsets.
UNTIL_SETTLE_S: Final = 5.0


@dataclass
class PartitionProgress:
    end_offset: int | None = None  # exclusive; None while still open (following, or waiting for `until`)


@dataclass(frozen=True)
class RunBounds:
    """A run's time bounds: ``since`` and ``until`` are timezone-aware, checked by the lander."""

    topic: str
    since: datetime | None
    until: datetime | None
    follow: bool
    metadata_timeout_s: float


@dataclass
class LandingPlan:
    """Each partition's progress, the offsets assigned, and the partitions not yet at their end."""

    progress: dict[int, PartitionProgress]
    starts: dict[int, int]
    pending: set[int]
    skipped_by_retention: dict[int, int] = field(default_factory=dict)
    archived_generation: str | None = None


def plan_partitions(
    consumer: topic_consumer.OffsetQueries,
    zone: LandingZone,
    bounds: RunBounds,
    partitions: list[int],
    next_offsets: dict[int, int],
    topic_id: str,
    *,
    accept_new_topic_id: bool,
) -> LandingPlan:
    """Read watermarks, reconcile the topic id, plan each of ``partitions``' start (the caller assigns)."""
    topic, timeout = bounds.topic, bounds.metadata_timeout_s
    marks = topic_consumer.watermarks(consumer, topic, partitions, timeout)
    next_offsets, archived = reconcile(
        zone, topic_id, next_offsets, marks, accept_new_topic_id=accept_new_topic_id
    )
    fresh = [p for p in partitions if p not in next_offsets]
    since = topic_consumer.offsets_at(consumer, topic, fresh, bounds.since, timeout) if bounds.since else {}
    until = (
        topic_consumer.offsets_at(consumer, topic, partitions, bounds.until, timeout) if bounds.until else {}
    )
    plan = LandingPlan(progress={}, starts={}, pending=set(), archived_generation=archived)
    for partition in partitions:
        low, high = marks[partition]
        first = since.get(partition, low)
        start = next_offsets.get(partition, high if first < 0 else max(first, low))
        if start < low:
            plan.skipped_by_retention[partition] = low - start
            log.warning(
                "partition %d: offsets %d..%d were deleted by retention before landing",
                partition,
                start,
                low - 1,
            )
            start = low
        if bounds.until is not None:
            end = until[partition] if until[partition] >= 0 else None
        else:
            end = None if bounds.follow else high
        plan.progress[partition] = PartitionProgress(end_offset=end)
        if end is None or start < end:
            plan.starts[partition] = start
    plan.pending = set(plan.starts)
    log.info(
        "landing %s (topic id %s) -> %s: %d partitions, %d assigned, %s",
        topic,
        topic_id,
        zone.root,
        len(plan.progress),
        len(plan.starts),
        plan_summary(bounds, plan),
    )
    return plan


def plan_summary(bounds: RunBounds, plan: LandingPlan) -> str:
    if bounds.until is not None:
        return f"up to the first records at or after {bounds.until.isoformat()}"
    if bounds.follow:
        return "following"
    backlog = sum(plan.progress[p].end_offset - start for p, start in plan.starts.items())  # type: ignore[operator]
    return f"{backlog} records up to the end offsets read now"


def close_open_partitions(
    consumer: topic_consumer.OffsetQueries, bounds: RunBounds, plan: LandingPlan
) -> None:
    """``until`` has passed: a partition still without a record at or after it ends where it is now
    (records are stamped when the broker accepts them, so none older can still arrive)."""
    assert bounds.until is not None
    topic, timeout = bounds.topic, bounds.metadata_timeout_s
    open_partitions = [p for p, progress in plan.progress.items() if progress.end_offset is None]
    found = topic_consumer.offsets_at(consumer, topic, open_partitions, bounds.until, timeout)
    marks = topic_consumer.watermarks(consumer, topic, open_partitions, timeout)
    for partition in open_partitions:
        plan.progress[partition].end_offset = (
            found[partition] if found[partition] >= 0 else marks[partition][1]
        )


def drop_partitions_at_end(positions: Callable[[list[int]], Mapping[int, int]], plan: LandingPlan) -> None:
    """A partition whose last offsets are transaction markers or compacted away never delivers
    offset end-1; its consumer position still passes the end, so check ``positions`` when idle."""
    if not plan.pending:
        return
    for partition, position in positions(sorted(plan.pending)).items():
        end_offset = plan.progress[partition].end_offset
        # nothing fetched yet (an idle partition): the position is unset, the start offset holds
        offset = position if position >= 0 else plan.starts[partition]
        if end_offset is not None and offset >= end_offset:
            plan.pending.discard(partition)
