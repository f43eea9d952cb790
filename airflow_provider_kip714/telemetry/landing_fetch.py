"""The lander's consume loop: messages in, per-partition chunks out, by the plan's rules.

Two readers apply the same rules (a record at or past its partition's end offset is not landed; the
first record at or after ``until`` ends a partition without an end; at most ``limit`` records per
call; a partition's chunk is cut at ``chunk_records``):

- ``NativeFetcher`` (the default): ``kip714_native.TopicReader`` runs librdkafka's consume loop and
  fills column buffers with the GIL released, on the very librdkafka confluent-kafka loaded. The
  per-message Python work (accessors, one tuple per header, list appends) was the largest cost of a
  landing run (``docs/benchmarks.md``).
- ``PythonFetcher``: confluent-kafka's ``Consumer``. Used when the native extension is not installed,
  when ``KIP714_LANDING_READER=python`` (``native_switches``), or when the connection sets a
  librdkafka callback other than the logger and error callback (``oauth_cb``, ``stats_cb``, ...),
  which only confluent-kafka serves.

Both report errors to the run's ``ErrorPolicy`` and librdkafka's log lines to the same logger, and
hand on ``landing_chunk``'s plain chunks: this module imports neither pyarrow, nor the decoders, nor
the zone.
"""

from __future__ import annotations

import functools
import glob
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from airflow_provider_kip714 import native_switches
from airflow_provider_kip714.telemetry import topic_consumer
from airflow_provider_kip714.telemetry.landing_chunk import Chunk, NativeChunk, PartitionBatch

if TYPE_CHECKING:
    from airflow_provider_kip714.telemetry.landing_plan import LandingPlan

try:
    import kip714_native
except ImportError:  # the optional extra ``airflow-provider-kip714[native]`` is not installed
    kip714_native = None

log = logging.getLogger(__name__)

# Messages per consume() call for the Python reader. Small batches cost much less CPU per record than
# large ones (measured with bench_landing.py: 2,000 -> 100 took the consuming thread from ~0.95 to
# ~0.38 s per 100,000 records), and each call releases the GIL while it waits.
CONSUME_BATCH: Final = 100
# The native reader's per-message cost does not grow with the batch; larger batches mean fewer calls.
NATIVE_CONSUME_BATCH: Final = 1000
CONSUME_TIMEOUT_S: Final = 0.2
# Callbacks the native reader serves itself (the rest need confluent-kafka's Python client).
_NATIVE_CALLBACKS: Final = frozenset({"logger", "error_cb"})
# librdkafka's syslog levels to Python's.
_LOG_LEVELS: Final = {0: 50, 1: 50, 2: 50, 3: 40, 4: 30, 5: 20, 6: 20, 7: 10}


class ChunkFetcher(Protocol):
    """What the lander needs of a reader; ``metadata`` answers ``reader``'s watermark and
    offsets-for-times requests (confluent-kafka's ``Consumer``, or the native reader itself)."""

    @property
    def metadata(self) -> Any: ...

    def assign(self, starts: Mapping[int, int]) -> None: ...

    def fetch(
        self, plan: LandingPlan, until_ms: int | None, limit: int | None
    ) -> tuple[int, int, list[Chunk]]:
        """(messages consumed, records accepted, chunks that filled), updating ``plan``."""
        ...

    def take_all(self) -> list[Chunk]: ...

    def positions(self, partitions: list[int]) -> dict[int, int]: ...

    def close(self) -> None: ...


class PythonFetcher:
    """The consume loop on confluent-kafka's ``Consumer`` (which it owns and closes)."""

    def __init__(
        self, consumer: Consumer, topic: str, policy: topic_consumer.ErrorPolicy, chunk_records: int
    ) -> None:
        self.consumer = consumer
        self.topic = topic
        self.policy = policy
        self.chunk_records = chunk_records
        self._buffers: dict[int, PartitionBatch] = {}

    @property
    def metadata(self) -> Consumer:
        return self.consumer

    def assign(self, starts: Mapping[int, int]) -> None:
        topic_consumer.assign(self.consumer, self.topic, starts)

    def fetch(
        self, plan: LandingPlan, until_ms: int | None, limit: int | None
    ) -> tuple[int, int, list[Chunk]]:
        """Buffer the consumed messages this run must land (at most ``limit``).

        One call per consumed batch with everything in locals: the per-message Python work is what
        this reader spends its CPU on.
        """
        messages = self.consumer.consume(num_messages=CONSUME_BATCH, timeout=CONSUME_TIMEOUT_S)
        self.policy.raise_pending()
        accepted = 0
        full: list[Chunk] = []
        buffers, chunk_records = self._buffers, self.chunk_records
        progress, pending = plan.progress, plan.pending
        for message in messages:
            error = message.error()
            if error is not None:
                self.policy.check(error)
                continue
            partition = message.partition()
            offset = message.offset()
            end_offset = progress[partition].end_offset
            if topic_consumer.past_end(offset, end_offset, partition, pending):
                continue
            timestamp_ms = message.timestamp()[1]
            if until_ms is not None and end_offset is None and timestamp_ms >= until_ms:
                progress[partition].end_offset = offset  # the first record at or after `until`
                pending.discard(partition)
                continue
            batch = buffers.get(partition)
            if batch is None:
                batch = buffers[partition] = PartitionBatch(self.topic, partition)
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
        return len(messages), accepted, full

    def take_all(self) -> list[Chunk]:
        chunks: list[Chunk] = [self._buffers[p] for p in sorted(self._buffers) if len(self._buffers[p])]
        self._buffers.clear()
        return chunks

    def positions(self, partitions: list[int]) -> dict[int, int]:
        found = self.consumer.position([TopicPartition(self.topic, p) for p in partitions])
        return {position.partition: position.offset for position in found}

    def close(self) -> None:
        self.consumer.close()


class NativeFetcher:
    """The consume loop in ``kip714_native.TopicReader`` (see the module docstring)."""

    def __init__(
        self,
        config: list[tuple[str, str]],
        topic: str,
        policy: topic_consumer.ErrorPolicy,
        chunk_records: int,
    ) -> None:
        assert kip714_native is not None
        self.topic = topic
        self.policy = policy
        self.chunk_records = chunk_records
        try:
            self._reader = kip714_native.TopicReader(librdkafka_path(), config, topic)
        except ValueError as err:
            raise topic_consumer.TopicReadError(f"connection extra: {err}") from None

    @property
    def metadata(self) -> NativeFetcher:
        return self

    def assign(self, starts: Mapping[int, int]) -> None:
        if starts:
            self._reader.assign(dict(starts))

    # The two requests ``topic_consumer.watermarks`` and ``topic_consumer.offsets_at`` make, as
    # ``Consumer`` answers them.

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float, cached: bool = False
    ) -> tuple[int, int]:
        code, low, high = self._reader.watermarks(partition.partition, _milliseconds(timeout))
        if code:
            raise KafkaException(KafkaError(code))
        return low, high

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        wanted = [(position.partition, position.offset) for position in partitions]
        code, found = self._reader.offsets_for_times(wanted, _milliseconds(timeout))
        if code:
            raise KafkaException(KafkaError(code))
        for partition, _, partition_code in found:
            if partition_code:
                raise KafkaException(
                    KafkaError(partition_code, f"partition {partition}: {KafkaError(partition_code).str()}")
                )
        return [TopicPartition(self.topic, partition, offset) for partition, offset, _ in found]

    def fetch(
        self, plan: LandingPlan, until_ms: int | None, limit: int | None
    ) -> tuple[int, int, list[Chunk]]:
        progress = plan.progress
        fetched = self._reader.fetch(
            {partition: state.end_offset for partition, state in progress.items()},
            max_messages=NATIVE_CONSUME_BATCH if limit is None else min(NATIVE_CONSUME_BATCH, limit),
            timeout_ms=int(CONSUME_TIMEOUT_S * 1000),
            chunk_records=self.chunk_records,
            until_ms=until_ms,
            limit=limit,
        )
        self._report(fetched)
        for partition, offset in fetched["until_ends"]:
            progress[partition].end_offset = offset  # the first record at or after `until`
        plan.pending.difference_update(fetched["reached_end"])
        for code, partition, text in fetched["message_errors"]:
            self.policy.check(KafkaError(code, f"partition {partition}: {text}"))
        self.policy.raise_pending()
        chunks: list[Chunk] = [NativeChunk(self.topic, buffers) for buffers in fetched["full"]]
        return fetched["consumed"], fetched["accepted"], chunks

    def _report(self, events: dict[str, Any]) -> None:
        """librdkafka's log lines to the librdkafka logger, its client errors to the policy."""
        for level, facility, line in events["logs"]:
            topic_consumer.LIBRDKAFKA_LOG.log(
                _LOG_LEVELS.get(level, 20), "%s [%s] %s", self.topic, facility, line
            )
        if events["dropped_logs"]:
            topic_consumer.LIBRDKAFKA_LOG.warning(
                "%d librdkafka log lines dropped (too many)", events["dropped_logs"]
            )
        for code, fatal, text in events["client_errors"]:
            self.policy.on_client_error(KafkaError(code, text, fatal=fatal))

    def take_all(self) -> list[Chunk]:
        return [NativeChunk(self.topic, buffers) for buffers in self._reader.take_all()]

    def positions(self, partitions: list[int]) -> dict[int, int]:
        return self._reader.positions(partitions)

    def close(self) -> None:
        self._reader.close()


def _milliseconds(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def software_identity() -> dict[str, str]:
    """``client.software.name``/``version`` as confluent-kafka sets them on every client it creates.

    The native reader runs confluent-kafka's own librdkafka, so it says the same: the lander's KIP-714
    identity (what a subscription's ``client_software_name`` matches, what brokers log) does not change
    with the reader. A connection that sets either keeps its own value.
    """
    import confluent_kafka

    return {
        "client.software.name": "confluent-kafka-python",
        "client.software.version": f"{confluent_kafka.__version__}-rdkafka-{confluent_kafka.libversion()[0]}",
    }


def native_config(config: Mapping[str, Any]) -> list[tuple[str, str]] | str:
    """The consumer config as librdkafka properties, or why the native reader cannot take it."""
    properties: list[tuple[str, str]] = []
    for key, value in {**software_identity(), **config}.items():
        if key in _NATIVE_CALLBACKS:
            continue
        if isinstance(value, bool):
            properties.append((key, "true" if value else "false"))
        elif isinstance(value, str | int | float):
            properties.append((key, str(value)))
        else:
            return f"{key} is a {type(value).__name__}, which only confluent-kafka's client serves"
    return properties


def open_fetcher(
    consumer_config: Mapping[str, Any], topic: str, policy: topic_consumer.ErrorPolicy, chunk_records: int
) -> ChunkFetcher:
    """The native reader where it can run, else the Python one (the run's log says why); one client."""
    properties = _native_properties(consumer_config)
    if isinstance(properties, str):
        log.info("landing reads the topic with confluent-kafka's Python consumer: %s", properties)
        return PythonFetcher(topic_consumer.open_consumer(consumer_config), topic, policy, chunk_records)
    return NativeFetcher(properties, topic, policy, chunk_records)


def _native_properties(consumer_config: Mapping[str, Any]) -> list[tuple[str, str]] | str:
    """The native reader's properties, or why the Python reader reads instead."""
    if not native_switches.is_native(native_switches.READER_ENV):
        return f"{native_switches.READER_ENV}=python"
    if kip714_native is None:
        return "the native extension is not installed (pip install 'airflow-provider-kip714[native]')"
    if not librdkafka_path():
        return "confluent-kafka's librdkafka was not found"
    return native_config(consumer_config)


@functools.cache
def librdkafka_path() -> str:
    """The librdkafka that confluent-kafka loaded (its wheel's copy or the system one); '' if none."""
    import confluent_kafka.cimpl  # loads librdkafka into the process

    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if "/librdkafka" in path and ".so" in path:
                    return path
    except OSError:
        pass
    package = os.path.dirname(os.path.dirname(confluent_kafka.cimpl.__file__))
    found = sorted(glob.glob(os.path.join(package, "confluent_kafka.libs", "librdkafka*.so*")))
    return found[0] if found else ""


__all__ = [
    "CONSUME_BATCH",
    "ChunkFetcher",
    "NativeFetcher",
    "PythonFetcher",
    "librdkafka_path",
    "native_config",
    "open_fetcher",
]
