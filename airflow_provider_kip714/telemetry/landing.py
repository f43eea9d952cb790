"""Land the telemetry topic into the Parquet landing zone, exactly once, using both cores on backlogs.

The calling thread consumes (partitions assigned explicitly, no consumer group offsets) and cuts the
stream into per-partition chunks; decoding and Parquet writing of a chunk run on a staging thread
(``stage_batch``; the native decoder and pyarrow's writer release the GIL), which leaves temp files;
the calling thread commits chunks strictly in the order it cut them, so a partition's landed offsets
never have holes. See ``landing_zone`` for the crash protocol and ``docs/telemetry-landing.md`` for
the layout.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from airflow_provider_kip714.contract.landing_schema import QUARANTINE_SCHEMA, RAW_SCHEMA, STRING_MAP
from airflow_provider_kip714.decoding.decoder import VALUE_FORMATS, TopicRecord, ValueFormat, decode_batch
from airflow_provider_kip714.exceptions import LandingError
from airflow_provider_kip714.telemetry.landing_zone import ChunkId, LandingZone, StagedChunk

log = logging.getLogger(__name__)

DEFAULT_CHUNK_RECORDS: Final = 5_000  # per partition
DEFAULT_CHUNK_INTERVAL_S: Final = 5.0
CONSUME_BATCH: Final = 2_000


# --------------------------------------------------------------------------------------------------
# tables


def _headers_map(records: Sequence[TopicRecord]) -> pa.Array:
    """Headers as a map column; each distinct header set (usually one per client) is decoded once."""
    distinct: dict[int, int] = {}
    sets: list[Any] = []
    index: list[int] = []
    for record in records:
        headers = record.headers
        slot = distinct.get(id(headers))
        if slot is None:
            slot = distinct[id(headers)] = len(sets)
            sets.append(headers)
        index.append(slot)
    offsets = [0]
    keys: list[str] = []
    values: list[str | None] = []
    for headers in sets:
        for name, raw in headers or ():
            keys.append(name)
            values.append(None if raw is None else raw.decode("utf-8", errors="replace"))
        offsets.append(len(keys))
    per_set = pa.MapArray.from_arrays(
        pa.array(offsets, type=pa.int32()),
        pa.array(keys, type=pa.string()),
        pa.array(values, type=pa.string()),
        type=STRING_MAP,
    )
    return per_set.take(pa.array(index, type=pa.int32()))


def raw_table(records: Sequence[TopicRecord]) -> pa.Table:
    """One row per record, bytes as received (the source of truth and the resume point)."""
    return pa.Table.from_arrays(
        [
            pa.array([r.topic for r in records], type=pa.string()),
            pa.array([r.partition for r in records], type=pa.int32()),
            pa.array([r.offset for r in records], type=pa.int64()),
            pa.array([r.timestamp_ms for r in records], type=pa.int64()).cast(
                RAW_SCHEMA.field("timestamp").type
            ),
            pa.array([r.key for r in records], type=pa.binary()),
            _headers_map(records),
            pa.array([r.value for r in records], type=pa.binary()),
        ],
        schema=RAW_SCHEMA,
    )


def quarantine_table(records: Sequence[TopicRecord], failures: Sequence[tuple[int, str]]) -> pa.Table:
    bad = [records[index] for index, _ in failures]
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
    zone_root: str, topic: str, fsync: bool, value_format: ValueFormat, records: Sequence[TopicRecord]
) -> StagedChunk:
    """Decode one partition's consecutive records and write them as a staged chunk (thread-safe)."""
    zone = LandingZone(zone_root, topic, fsync=fsync)
    chunk = ChunkId(records[0].partition, records[0].offset, records[-1].offset)
    decoded = decode_batch(records, value_format)
    return zone.stage(
        chunk,
        raw_table(records),
        decoded.datapoints,
        quarantine_table(records, decoded.failures),
        points=decoded.datapoints.num_rows,
        last_timestamp_ms=records[-1].timestamp_ms,
    )


class PartitionBatch:
    """One partition's consecutive records in compact columns, as the consumer hands them on.

    Each distinct header set (one per client connection, usually) is kept once: decoding parses its
    labels once and the raw table writes its map once, instead of once per record.
    """

    __slots__ = (
        "_interned",
        "header_index",
        "header_sets",
        "keys",
        "offsets",
        "partition",
        "timestamps",
        "topic",
        "values",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.header_sets: list[tuple[tuple[str, bytes | None], ...] | None] = []
        self.header_index: list[int] = []
        self._interned: dict[Any, int] = {}

    def __len__(self) -> int:
        return len(self.offsets)

    def append(
        self,
        offset: int,
        timestamp_ms: int,
        key: bytes | None,
        headers: list[tuple[str, bytes | None]] | None,
        value: bytes | None,
    ) -> None:
        header_key = tuple(headers) if headers else None
        index = self._interned.get(header_key)
        if index is None:
            index = self._interned[header_key] = len(self.header_sets)
            self.header_sets.append(header_key)
        self.header_index.append(index)
        self.offsets.append(offset)
        self.timestamps.append(timestamp_ms)
        self.keys.append(key)
        self.values.append(value)

    def records(self) -> list[TopicRecord]:
        topic, partition, header_sets = self.topic, self.partition, self.header_sets
        return [
            TopicRecord(topic, partition, offset, timestamp, key, header_sets[header], value)
            for offset, timestamp, key, header, value in zip(
                self.offsets, self.timestamps, self.keys, self.header_index, self.values, strict=True
            )
        ]


def stage_batch(
    zone_root: str, topic: str, fsync: bool, value_format: ValueFormat, batch: PartitionBatch
) -> StagedChunk:
    """``stage_records`` for a ``PartitionBatch`` (what the landing run hands to staging threads)."""
    return stage_records(zone_root, topic, fsync, value_format, batch.records())


# --------------------------------------------------------------------------------------------------
# the run


@dataclass
class PartitionProgress:
    end_offset: int | None = None  # exclusive; None when following


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


def consumer_config_for_landing(base_config: dict[str, Any]) -> dict[str, Any]:
    """Explicit assignment, no commits: progress lives in the landing zone, not in a consumer group."""
    config = dict(base_config)
    config.setdefault("group.id", "kip714-landing")
    config.update(
        {
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
        }
    )
    config.setdefault("auto.offset.reset", "earliest")
    config.setdefault("fetch.max.bytes", 64 * 1024 * 1024)
    config.setdefault("queued.max.messages.kbytes", 262144)
    return config


class TopicLander:
    """One landing run over a topic; see ``land_topic`` for the knobs.

    ``since`` (timezone-aware) starts each partition the zone has no history for at its first record
    at or after that time instead of the earliest retained offset: a troubleshooting window on a topic
    with days of retention lands minutes, not days. Partitions with landed chunks always resume after
    their last landed offset.
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
        metadata_timeout_s: float = 15.0,
        since: datetime | None = None,
    ) -> None:
        if value_format not in VALUE_FORMATS:
            raise LandingError(f"value_format: must be one of {VALUE_FORMATS} (got {value_format!r})")
        if max_records is not None and max_records < 1:
            raise LandingError(f"max_records: must be a positive integer (got {max_records!r})")
        if timeout_s is not None and timeout_s <= 0:
            raise LandingError(f"timeout_s: must be positive (got {timeout_s!r})")
        if chunk_records < 1:
            raise LandingError(f"chunk_records: must be a positive integer (got {chunk_records!r})")
        if follow and max_records is None and timeout_s is None:
            raise LandingError("follow: needs max_records or timeout_s, or the run never ends")
        if since is not None and since.tzinfo is None:
            raise LandingError(f"since: must be timezone-aware (got {since.isoformat()})")
        self.since = since
        self.consumer_config = consumer_config_for_landing(consumer_config)
        self.topic = topic
        self.zone = LandingZone(out_dir, topic, fsync=fsync)
        self.max_records = max_records
        self.timeout_s = timeout_s
        self.follow = follow
        self.value_format = value_format
        self.chunk_records = chunk_records
        self.chunk_interval_s = chunk_interval_s
        self.workers = min(2, os.cpu_count() or 1) if workers is None else workers
        self.fsync = fsync
        self.progress_interval_s = progress_interval_s
        self.metadata_timeout_s = metadata_timeout_s

    def run(self) -> LandingResult:
        with self.zone.lock():
            self.zone.prepare()
            next_offsets = self.zone.recover()
            consumer = Consumer(self.consumer_config)
            try:
                return self._run(consumer, next_offsets)
            finally:
                consumer.close()

    # ---- internals -----------------------------------------------------------------------------

    def _plan(
        self, consumer: Consumer, next_offsets: dict[int, int], result: LandingResult
    ) -> dict[int, PartitionProgress]:
        metadata = consumer.list_topics(self.topic, timeout=self.metadata_timeout_s)
        topic_metadata = metadata.topics.get(self.topic)
        if topic_metadata is None or topic_metadata.error is not None:
            reason = "not found" if topic_metadata is None else str(topic_metadata.error)
            raise LandingError(f"topic: {self.topic!r} cannot be read ({reason})")
        plan: dict[int, PartitionProgress] = {}
        assignment: list[TopicPartition] = []
        backlog = 0
        partitions = sorted(topic_metadata.partitions)
        since_offsets = self._offsets_since(consumer, [p for p in partitions if p not in next_offsets])
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=self.metadata_timeout_s, cached=False
            )
            first = since_offsets.get(partition, low)
            start = next_offsets.get(partition, high if first < 0 else max(first, low))
            if start < low:
                result.skipped_by_retention[partition] = low - start
                log.warning(
                    "partition %d: offsets %d..%d were deleted by retention before landing",
                    partition,
                    start,
                    low - 1,
                )
                start = low
            end = None if self.follow else high
            plan[partition] = PartitionProgress(end_offset=end)
            if end is None or start < end:
                assignment.append(TopicPartition(self.topic, partition, start))
                backlog += 0 if end is None else end - start
        if assignment:
            consumer.assign(assignment)
        log.info(
            "landing %s -> %s: %d partitions, %d assigned, %s",
            self.topic,
            self.zone.root,
            len(plan),
            len(assignment),
            "following" if self.follow else f"{backlog} records up to the end offsets read now",
        )
        self._backlog = backlog
        self._pending_partitions = {tp.partition for tp in assignment}
        return plan

    def _offsets_since(self, consumer: Consumer, partitions: list[int]) -> dict[int, int]:
        """First offset at or after ``since`` of each partition the zone has no history for (-1: none
        yet). Partitions with landed chunks resume where they stopped: that is the exactly-once rule."""
        if self.since is None or not partitions:
            return {}
        since_ms = int(self.since.timestamp() * 1000)
        found = consumer.offsets_for_times(
            [TopicPartition(self.topic, partition, since_ms) for partition in partitions],
            timeout=self.metadata_timeout_s,
        )
        for position in found:
            if position.error is not None:
                raise LandingError(f"since: offsets of partition {position.partition}: {position.error}")
        log.info("starting new partitions at the first record at or after %s", self.since.isoformat())
        return {position.partition: position.offset for position in found}

    def _make_executor(self) -> Executor:
        """Staging threads: decoding (native, GIL released) and Parquet writing (pyarrow, GIL released)
        run beside the consuming thread, whose per-message Python work is the limit."""
        if self.workers <= 1:
            return _InlineExecutor()
        return ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="kip714-stage")

    def _run(self, consumer: Consumer, next_offsets: dict[int, int]) -> LandingResult:
        started = time.monotonic()
        result = LandingResult(topic=self.topic, out_dir=str(self.zone.root))
        plan = self._plan(consumer, next_offsets, result)
        deadline = None if self.timeout_s is None else started + self.timeout_s
        buffers: dict[int, PartitionBatch] = {}
        buffered = 0
        taken = 0
        in_flight: collections.deque[Future[StagedChunk]] = collections.deque()
        max_in_flight = max(2, 2 * self.workers)
        last_flush = time.monotonic()
        last_progress = started
        stop_reason = ""
        executor = self._make_executor()
        try:
            while True:
                if not self.follow and not self._pending_partitions:
                    stop_reason = "reached the end offsets read at the start"
                elif self.max_records is not None and taken >= self.max_records:
                    stop_reason = f"max_records={self.max_records} reached"
                elif deadline is not None and time.monotonic() >= deadline:
                    stop_reason = f"timeout_s={self.timeout_s} reached"
                if stop_reason:
                    break
                messages = consumer.consume(num_messages=CONSUME_BATCH, timeout=0.2)
                if not messages and not self.follow:
                    self._drop_partitions_at_end(consumer, plan)
                limit = None if self.max_records is None else self.max_records - taken
                accepted, full_batches = self._accept(messages, plan, buffers, limit)
                taken += accepted
                buffered += accepted
                for batch in full_batches:
                    self._submit(batch, executor, in_flight)
                    buffered -= len(batch)
                now = time.monotonic()
                if buffered and now - last_flush >= self.chunk_interval_s:
                    self._flush(buffers, executor, in_flight)
                    buffered = 0
                    last_flush = now
                self._commit_ready(in_flight, result, plan, block=len(in_flight) > max_in_flight)
                if now - last_progress >= self.progress_interval_s:
                    self._log_progress(result, started, buffered)
                    last_progress = now
            if buffered:
                self._flush(buffers, executor, in_flight)
            while in_flight:
                self._commit_ready(in_flight, result, plan, block=True)
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

    def _drop_partitions_at_end(self, consumer: Consumer, plan: dict[int, PartitionProgress]) -> None:
        """A partition whose last offsets are transaction markers or compacted away never delivers
        offset end-1; its consumer position still passes the end, so check positions when idle."""
        if not self._pending_partitions:
            return
        positions = consumer.position([TopicPartition(self.topic, p) for p in self._pending_partitions])
        for position in positions:
            end_offset = plan[position.partition].end_offset
            if end_offset is not None and position.offset >= end_offset:
                self._pending_partitions.discard(position.partition)

    def _accept(
        self,
        messages: list[Message],
        plan: dict[int, PartitionProgress],
        buffers: dict[int, PartitionBatch],
        limit: int | None,
    ) -> tuple[int, list[PartitionBatch]]:
        """Buffer the consumed messages this run must land (at most ``limit``).

        Returns how many were buffered and the batches that reached ``chunk_records`` (taken out of
        ``buffers``, in the order they filled). One call per consumed batch with everything in
        locals: the per-message Python work is what the main process spends its CPU on.
        """
        accepted = 0
        full: list[PartitionBatch] = []
        chunk_records = self.chunk_records
        pending = self._pending_partitions
        for message in messages:
            error = message.error()
            if error is not None:
                self._check_consumer_error(error)
                continue
            partition = message.partition()
            offset = message.offset()
            end_offset = plan[partition].end_offset
            if end_offset is not None and offset >= end_offset - 1:
                pending.discard(partition)
                if offset >= end_offset:
                    continue
            batch = buffers.get(partition)
            if batch is None:
                batch = buffers[partition] = PartitionBatch(self.topic, partition)
            timestamp_ms = message.timestamp()[1]
            batch.append(
                offset,
                timestamp_ms if timestamp_ms > 0 else 0,
                message.key(),
                message.headers(),
                message.value(),
            )
            accepted += 1
            if len(batch.offsets) >= chunk_records:
                full.append(buffers.pop(partition))
            if limit is not None and accepted >= limit:
                break
        return accepted, full

    @staticmethod
    def _check_consumer_error(error: KafkaError) -> None:
        """Log what the consumer recovers from by itself; raise on a fatal error."""
        if error.code() == KafkaError._PARTITION_EOF:
            return
        if error.retriable() or not error.fatal():
            log.warning("consumer: %s", error)
            return
        raise LandingError(f"consumer: {error}")

    def _submit(
        self, batch: PartitionBatch, executor: Executor, in_flight: collections.deque[Future[StagedChunk]]
    ) -> None:
        in_flight.append(
            executor.submit(
                stage_batch, str(self.zone.root), self.topic, self.fsync, self.value_format, batch
            )
        )

    def _flush(
        self,
        buffers: dict[int, PartitionBatch],
        executor: Executor,
        in_flight: collections.deque[Future[StagedChunk]],
    ) -> None:
        for partition in sorted(buffers):
            if len(buffers[partition]):
                self._submit(buffers[partition], executor, in_flight)
        buffers.clear()

    def _commit_ready(
        self,
        in_flight: collections.deque[Future[StagedChunk]],
        result: LandingResult,
        plan: dict[int, PartitionProgress],
        *,
        block: bool,
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


def datapoints_uri(out_dir: str | os.PathLike[str]) -> str:
    """The URI of a landing zone's datapoints (what the landing operator's Asset points at)."""
    return Path(out_dir).resolve().joinpath("datapoints").as_uri()
