"""Land the telemetry topic into the Parquet landing zone, exactly once, using both cores on backlogs.

The calling thread consumes (``landing_fetch``'s native reader, or confluent-kafka's consumer; both
follow ``reader``: partitions assigned explicitly, no group offsets, no silent offset reset, fatal
errors stop the run) and cuts the stream into per-partition chunks;
decoding and Parquet writing of a chunk run on a staging thread (``landing_stage.stage_chunk``, given
the run's zone; the native decoder and writer, and pyarrow's writer, release the GIL), which leaves
temp files; the calling thread commits chunks strictly in the order it cut them, so a partition's
landed offsets never have holes. One record's way: ``landing_fetch`` -> ``landing_chunk`` ->
``landing_stage`` -> ``landing_zone`` (``docs/architecture.md``).
Where each partition starts and ends (``since``, ``until``, following) is ``landing_plan``'s; before
landing anything, the topic's Kafka id is compared with the one the zone landed (``topic_generation``).
See ``landing_zone`` for the crash protocol and ``docs/telemetry-landing.md``.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from airflow_provider_kip714 import native_switches
from airflow_provider_kip714.decoding.decoder import VALUE_FORMATS, ValueFormat
from airflow_provider_kip714.exceptions import LandingError
from airflow_provider_kip714.telemetry import topic_consumer
from airflow_provider_kip714.telemetry.landing_chunk import Chunk
from airflow_provider_kip714.telemetry.landing_fetch import CONSUME_BATCH, ChunkFetcher, open_fetcher
from airflow_provider_kip714.telemetry.landing_plan import (
    UNTIL_SETTLE_S,
    LandingPlan,
    RunBounds,
    close_open_partitions,
    drop_partitions_at_end,
    plan_partitions,
)
from airflow_provider_kip714.telemetry.landing_stage import stage_chunk
from airflow_provider_kip714.telemetry.landing_zone import LandingZone, StagedChunk

__all__ = [
    "CONSUME_BATCH",
    "COUNT_LIMITS",
    "LandingResult",
    "TopicLander",
    "check_count",
    "land_topic",
]

log = logging.getLogger(__name__)

DEFAULT_CHUNK_RECORDS: Final = 5_000  # per partition
DEFAULT_CHUNK_INTERVAL_S: Final = 5.0
COUNT_LIMITS: Final = {"max_records": 2**63 - 1, "chunk_records": 10_000_000, "workers": 64}
"""Upper bounds: a Kafka offset is an int64; a chunk is held in memory; staging threads share the cores."""
MAX_METADATA_TIMEOUT_S: Final = 3600.0
"""librdkafka's longest request timeout."""
# Consumer tuning for backlogs (a connection may set its own values).
LANDING_TUNING: Final = {"fetch.max.bytes": 64 * 1024 * 1024, "queued.max.messages.kbytes": 262144}


@dataclass
class LandingResult:
    """What one run landed; ``partitions`` maps partition -> (first, last) offset landed by this run."""

    topic: str
    out_dir: str
    records: int = 0
    points: int = 0
    quarantined: int = 0
    chunks: int = 0
    elapsed_s: float = 0.0
    stop_reason: str = ""
    partitions: dict[int, tuple[int, int]] = field(default_factory=dict)
    skipped_by_retention: dict[int, int] = field(default_factory=dict)
    topic_id: str = ""
    archived_generation: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "out_dir": self.out_dir,
            "records": self.records,
            "points": self.points,
            "quarantined": self.quarantined,
            "chunks": self.chunks,
            "elapsed_s": round(self.elapsed_s, 3),
            "stop_reason": self.stop_reason,
            "partitions": {str(p): list(r) for p, r in sorted(self.partitions.items())},
            "skipped_by_retention": {str(p): n for p, n in sorted(self.skipped_by_retention.items())},
            "topic_id": self.topic_id,
            "archived_generation": self.archived_generation,
        }


class _InlineExecutor(Executor):
    """Runs jobs at submit time (``workers=1``): everything on the calling thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:
            future.set_exception(err)
        return future


def check_count(field: str, option: str, value: object) -> None:
    """``value`` of landing option ``option`` (a ``COUNT_LIMITS`` key), unset or a positive integer within
    its bound; refused in one line naming ``field`` (the option, or the flag that sets it)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LandingError(f"{field}: must be a positive integer (got {value!r})")
    if value > COUNT_LIMITS[option]:
        raise LandingError(f"{field}: must be at most {COUNT_LIMITS[option]:,} (got {value!r})")


def _check_options(lander: TopicLander) -> None:
    """One line naming the field for every option a run cannot work with."""
    if lander.value_format not in VALUE_FORMATS:
        raise LandingError(f"value_format: must be one of {VALUE_FORMATS} (got {lander.value_format!r})")
    for name in COUNT_LIMITS:
        check_count(name, name, getattr(lander, name))
    topic_consumer.check_duration("timeout_s", lander.timeout_s)
    for name in ("chunk_interval_s", "progress_interval_s"):
        topic_consumer.check_duration(name, getattr(lander, name), allow_none=False)
    topic_consumer.check_duration(
        "metadata_timeout_s", lander.metadata_timeout_s, allow_none=False, maximum=MAX_METADATA_TIMEOUT_S
    )
    for name in ("since", "until"):
        moment = getattr(lander, name)
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            raise LandingError(f"{name}: must be a timezone-aware datetime (got {moment!r})")
    if lander.until is not None and lander.follow:
        raise LandingError("until: cannot be combined with follow (until already says when to stop)")
    if lander.follow and lander.max_records is None and lander.timeout_s is None:
        raise LandingError("follow: needs max_records or timeout_s, or the run never ends")
    topic_consumer.check_duration(
        "lease_wait_s", lander.lease_wait_s, allow_none=False, allow_zero=True, maximum=3600
    )
    native_switches.check()  # a misspelt switch is refused before anything connects


class TopicLander:
    """One landing run over a topic; see ``land_topic`` for the knobs.

    ``since`` (timezone-aware) starts each partition the zone has no history for at its first record
    at or after that time instead of the earliest retained offset. ``until`` ends each partition just
    before its first record at or after that time (found with offsets_for_times; while that time is
    in the future the run follows, and ``UNTIL_SETTLE_S`` after it, a partition without such a record
    ends at its end offset then): a late run still lands the whole window. Partitions with landed chunks
    always resume after their last landed offset. ``accept_new_topic_id`` lets a run land a topic that
    was deleted and recreated (see ``topic_generation``). ``lease_wait_s`` waits that long for another
    run's lease on the zone to end instead of failing at once (live mode and the hourly DAG share one).
    """

    def __init__(
        self,
        consumer_config: dict[str, Any],
        topic: str,
        out_dir: str | os.PathLike[str],
        *,
        max_records: int | None = None,
        timeout_s: float | None = None,
        follow: bool = False,
        value_format: ValueFormat = "otlp_proto",
        chunk_records: int = DEFAULT_CHUNK_RECORDS,
        chunk_interval_s: float = DEFAULT_CHUNK_INTERVAL_S,
        workers: int | None = None,
        fsync: bool = True,
        progress_interval_s: float = 10.0,
        metadata_timeout_s: float = topic_consumer.DEFAULT_METADATA_TIMEOUT_S,
        since: datetime | None = None,
        until: datetime | None = None,
        accept_new_topic_id: bool = False,
        lease_wait_s: float = 0.0,
    ) -> None:
        self.base_config = dict(consumer_config)
        self.topic = topic
        self.max_records = max_records
        self.timeout_s = timeout_s
        self.follow = follow
        self.value_format = value_format
        self.chunk_records = chunk_records
        self.chunk_interval_s = chunk_interval_s
        self.workers = workers
        self.progress_interval_s = progress_interval_s
        self.metadata_timeout_s = metadata_timeout_s
        self.since = since
        self.until = until
        self.accept_new_topic_id = accept_new_topic_id
        self.lease_wait_s = lease_wait_s
        _check_options(self)
        self.workers = min(2, os.cpu_count() or 1) if workers is None else workers
        self.zone = LandingZone(out_dir, topic, fsync=fsync)
        self.policy = topic_consumer.ErrorPolicy(topic, outage_limit_s=metadata_timeout_s)
        self.consumer_config = topic_consumer.consumer_config(self.base_config, self.policy, **LANDING_TUNING)
        self.bounds = RunBounds(topic, since, until, follow, metadata_timeout_s)
        self._plan = LandingPlan(progress={}, starts={}, pending=set())

    def run(self) -> LandingResult:
        # First contact: fails in one line within metadata_timeout_s (settings librdkafka refuses,
        # unreachable, unknown topic, no DESCRIBE), before a consumer exists and before the zone is
        # touched. Its partitions spare the consumer a metadata request before its first (measured:
        # ~55 ms of a run's set-up on a local broker).
        identity = topic_consumer.describe_topic(self.base_config, self.topic, self.metadata_timeout_s)
        with self.zone.lock().waiting(self.lease_wait_s):
            self.zone.prepare()
            next_offsets = self.zone.recover()
            fetcher = open_fetcher(self.consumer_config, self.topic, self.policy, self.chunk_records)
            try:
                result = self._run(fetcher, next_offsets, identity)
            finally:
                self.policy.silence()
                fetcher.close()
            self.zone.finish()  # every chunk staged was committed: the next run starts from here
            return result

    # ---- the run -------------------------------------------------------------------------------

    def _make_executor(self) -> Executor:
        """Staging threads: decoding (native, GIL released) and Parquet writing (pyarrow, GIL released)
        run beside the consuming thread, whose per-message Python work is the limit."""
        if self.workers <= 1:
            return _InlineExecutor()
        return ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="kip714-stage")

    def _stop_reason(self, taken: int, deadline: float | None) -> str:
        if not self._plan.pending and not (self.follow and self.until is None):
            if self.until is not None:
                return f"reached the first records at or after until={self.until.isoformat()}"
            return "reached the end offsets read at the start"
        if self.max_records is not None and taken >= self.max_records:
            return f"max_records={self.max_records} reached"
        if deadline is not None and time.monotonic() >= deadline:
            return f"timeout_s={self.timeout_s} reached"
        return ""

    def _start(
        self,
        fetcher: ChunkFetcher,
        next_offsets: dict[int, int],
        partitions: list[int],
        result: LandingResult,
    ) -> None:
        """Plan each partition's start and end and assign them (``landing_plan``)."""
        self._plan = plan_partitions(
            fetcher.metadata,
            self.zone,
            self.bounds,
            partitions,
            next_offsets,
            result.topic_id,
            accept_new_topic_id=self.accept_new_topic_id,
        )
        fetcher.assign(self._plan.starts)
        result.skipped_by_retention = self._plan.skipped_by_retention
        result.archived_generation = self._plan.archived_generation

    def _run(
        self,
        fetcher: ChunkFetcher,
        next_offsets: dict[int, int],
        identity: topic_consumer.TopicIdentity,
    ) -> LandingResult:
        started = time.monotonic()
        result = LandingResult(topic=self.topic, out_dir=str(self.zone.root), topic_id=identity.topic_id)
        self._start(fetcher, next_offsets, identity.partitions, result)
        deadline = None if self.timeout_s is None else started + self.timeout_s
        until_s = None if self.until is None else self.until.timestamp() + UNTIL_SETTLE_S
        until_ms = None if self.until is None else int(self.until.timestamp() * 1000)
        buffered = taken = 0
        in_flight: collections.deque[Future[StagedChunk]] = collections.deque()
        max_in_flight = max(2, 2 * self.workers)
        last_flush = last_progress = started
        stop_reason = ""
        executor = self._make_executor()
        try:
            while not (stop_reason := self._stop_reason(taken, deadline)):
                if until_s is not None and time.time() >= until_s:
                    close_open_partitions(fetcher.metadata, self.bounds, self._plan)
                    drop_partitions_at_end(fetcher.positions, self._plan)
                    until_s = None
                limit = None if self.max_records is None else self.max_records - taken
                consumed, accepted, full_batches = fetcher.fetch(self._plan, until_ms, limit)
                if accepted:
                    self.policy.progress()
                if not consumed:
                    drop_partitions_at_end(fetcher.positions, self._plan)
                taken += accepted
                buffered += accepted
                for batch in full_batches:
                    self._submit(batch, executor, in_flight)
                    buffered -= len(batch)
                now = time.monotonic()
                if buffered and now - last_flush >= self.chunk_interval_s:
                    self._flush(fetcher, executor, in_flight)
                    buffered = 0
                    last_flush = now
                self._commit_ready(in_flight, result, block=len(in_flight) > max_in_flight)
                if now - last_progress >= self.progress_interval_s:
                    self._log_progress(result, started, buffered)
                    last_progress = now
            if buffered:
                self._flush(fetcher, executor, in_flight)
            while in_flight:
                self._commit_ready(in_flight, result, block=True)
        except BaseException:
            # Never commit after a failure: staged temp files are removed by the next run's recover().
            for future in in_flight:
                future.cancel()
            raise
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
        result.elapsed_s = time.monotonic() - started
        result.stop_reason = stop_reason
        self._log_progress(result, started, 0, final=True)
        return result

    def _submit(
        self, batch: Chunk, executor: Executor, in_flight: collections.deque[Future[StagedChunk]]
    ) -> None:
        in_flight.append(executor.submit(stage_chunk, self.zone, self.value_format, batch))

    def _flush(
        self,
        fetcher: ChunkFetcher,
        executor: Executor,
        in_flight: collections.deque[Future[StagedChunk]],
    ) -> None:
        for chunk in fetcher.take_all():
            self._submit(chunk, executor, in_flight)

    def _commit_ready(
        self, in_flight: collections.deque[Future[StagedChunk]], result: LandingResult, *, block: bool
    ) -> None:
        while in_flight and (block or in_flight[0].done()):
            staged = in_flight.popleft().result()
            block = False
            self.zone.commit(staged)
            result.records += staged.records
            result.points += staged.points
            result.quarantined += staged.quarantined
            result.chunks += 1
            chunk = staged.chunk
            first, _ = result.partitions.get(chunk.partition, (chunk.first_offset, chunk.last_offset))
            result.partitions[chunk.partition] = (first, chunk.last_offset)

    def _log_progress(
        self, result: LandingResult, started: float, buffered: int, *, final: bool = False
    ) -> None:
        elapsed = max(time.monotonic() - started, 1e-9)
        log.info(
            "%s %s: %d records (%d points, %d quarantined) in %d chunks, %.0f records/s, %.0f points/s%s",
            "landed" if final else "landing",
            self.topic,
            result.records,
            result.points,
            result.quarantined,
            result.chunks,
            result.records / elapsed,
            result.points / elapsed,
            f", {buffered} buffered" if buffered else "",
        )


def land_topic(
    consumer_config: dict[str, Any], topic: str, out_dir: str | os.PathLike[str], **options: Any
) -> LandingResult:
    """Land ``topic`` into ``out_dir`` (see ``TopicLander`` for options); safe to rerun after any crash."""
    return TopicLander(consumer_config, topic, out_dir, **options).run()
