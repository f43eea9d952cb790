"""Reading the telemetry topic: the one consumer config, partition assignment and error policy.

Used by ``TelemetryTopicHook.iter_records``, the arrival trigger and the lander, so that every
reader behaves the same way:

- **No consumer group state.** Partitions are assigned explicitly and nothing is committed: reading
  has no side effect on the cluster, and the landing zone (not a group) holds landing's progress.
  ``group.id`` is ``kip714-reader`` unless the connection names one; it is never joined.
- **No silent offset reset.** ``auto.offset.reset`` is forced to ``error``: a position that is out
  of range (deleted by retention, topic recreated) is reported, never jumped over. A shared
  connection's ``latest`` would otherwise skip a backlog without a word.
- **Fatal means fatal.** No authorization, an unknown topic, failed authentication or brokers that
  stay unreachable for longer than the metadata timeout end the read with one clear line, instead of
  retrying forever.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import math
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_kip714.exceptions import Kip714Error

log = logging.getLogger(__name__)
LIBRDKAFKA_LOG: Final = logging.getLogger("airflow_provider_kip714.librdkafka")

READER_GROUP_ID: Final = "kip714-reader"
DEFAULT_METADATA_TIMEOUT_S: Final = 15.0
# Set on every reader; a connection cannot change them.
FORCED_CONFIG: Final[Mapping[str, Any]] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": False,
    "auto.offset.reset": "error",
    "allow.auto.create.topics": False,
}
# Errors the client would retry forever although nothing will change without a human.
FATAL_CODES: Final = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.SASL_AUTHENTICATION_FAILED,
        KafkaError._AUTHENTICATION,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.UNKNOWN_TOPIC_ID,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._AUTO_OFFSET_RESET,
        KafkaError.OFFSET_OUT_OF_RANGE,
    }
)
# Connection-level errors: fatal only when they last longer than the metadata timeout.
_OUTAGE_CODES: Final = frozenset({KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE})
_LOGIN_REFUSED: Final = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED})


def is_refusal(error: KafkaError) -> bool:
    """A refused login, or a broker certificate that does not verify: retrying cannot fix either, so
    first contact fails on it at once. Other TLS errors (a handshake cut by a restarting broker) are
    left to the usual retries."""
    if error.code() in _LOGIN_REFUSED:
        return True
    return error.code() == KafkaError._SSL and "certificate" in error.str().lower()


StartAt = Literal["earliest", "latest"] | datetime


class OffsetQueries(Protocol):
    """The two offset requests planning makes: confluent-kafka's ``Consumer``, or landing's native reader."""

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float, cached: bool = False
    ) -> tuple[int, int]: ...

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]: ...


class TopicReadError(Kip714Error):
    """Reading the telemetry topic cannot go on (one line saying why and what to do)."""


def check_duration(
    field: str,
    value: float | None,
    *,
    allow_none: bool = True,
    allow_zero: bool = False,
    maximum: float | None = None,
) -> None:
    """Refuse NaN, infinite, negative (and zero unless allowed) durations, and those above ``maximum``,
    naming the field."""
    if value is None:
        if allow_none:
            return
        raise TopicReadError(f"{field}: must be set")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TopicReadError(f"{field}: must be a number of seconds (got {value!r})")
    if math.isnan(value) or math.isinf(value):
        raise TopicReadError(f"{field}: must be a finite number of seconds (got {value!r})")
    if value < 0 or (value == 0 and not allow_zero):
        rule = "zero or more" if allow_zero else "more than zero"
        raise TopicReadError(f"{field}: must be {rule} seconds (got {value!r})")
    if maximum is not None and value > maximum:
        raise TopicReadError(f"{field}: must be at most {maximum:g} seconds (got {value!r})")


class ErrorPolicy:
    """What a reader does with a client error: log and go on, or stop with ``TopicReadError``.

    Consumer errors (``message.error()``) and client-level errors (librdkafka's ``error_cb``) both
    come here. An outage (no broker reachable) is tolerated for ``outage_limit_s``.
    """

    def __init__(self, topic: str, outage_limit_s: float = DEFAULT_METADATA_TIMEOUT_S) -> None:
        self.topic = topic
        self.outage_limit_s = outage_limit_s
        self._outage_since: float | None = None
        self._pending: TopicReadError | None = None
        self._silent = False
        self.refusal: KafkaError | None = None
        """The first refused login or TLS handshake: first contact fails on it (``partitions_of``)."""
        self._first_contact = False

    def silence(self) -> None:
        """Ignore what the client reports from now on (call before ``close()``, which serves its queue)."""
        self._silent = True

    @contextlib.contextmanager
    def first_contact(self) -> Iterator[None]:
        """Callbacks served while the first metadata request waits: a refusal is kept, nothing is
        logged or raised (the caller's one line says what happened)."""
        self._first_contact = True
        try:
            yield
        finally:
            self._first_contact = False

    def on_client_error(self, error: KafkaError) -> None:
        """librdkafka's ``error_cb`` (called on the consuming thread, inside consume/poll)."""
        if self._silent:
            return
        if self.refusal is None and is_refusal(error):
            self.refusal = error
        if self._first_contact:
            return
        try:
            self.check(error)
        except TopicReadError as err:
            self._pending = err

    def check(self, error: KafkaError) -> None:
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            return
        if code in FATAL_CODES or error.fatal():
            raise TopicReadError(describe_error(self.topic, error))
        if code in _OUTAGE_CODES:
            now = time.monotonic()
            if self._outage_since is None:
                self._outage_since = now
                if not self._silent:  # once per outage: librdkafka reports every reconnect
                    log.warning(
                        "consumer (%s): %s; retrying for up to %g s",
                        self.topic,
                        error.str(),
                        self.outage_limit_s,
                    )
            elif now - self._outage_since > self.outage_limit_s:
                raise TopicReadError(
                    f"bootstrap.servers: no broker reachable for {self.outage_limit_s:g} s ({error.str()})"
                )
            return
        if not self._silent:
            log.warning("consumer (%s): %s", self.topic, error.str())

    def progress(self) -> None:
        """Records arrived: any outage is over."""
        self._outage_since = None

    def raise_pending(self) -> None:
        """Raise what ``error_cb`` recorded; call after each consume."""
        if self._pending is not None:
            error, self._pending = self._pending, None
            raise error


def describe_error(topic: str, error: KafkaError) -> str:
    """One line for a fatal client error: what happened and what to do."""
    code = error.code()
    if code in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED):
        return f"topic: not authorized to read {topic!r} ({error.str()}); grant DESCRIBE and READ on it"
    if code in (KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._AUTHENTICATION):
        return f"connection: authentication failed ({error.str()}); check sasl.username/sasl.password"
    if code == KafkaError._SSL:
        return (
            f"connection: TLS handshake failed ({error.str()}); check ssl.ca.location (the CA that signed "
            "the brokers' certificates) and that bootstrap.servers names the brokers as their certificates do"
        )
    if code in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_ID):
        return f"topic: {topic!r} does not exist (or was deleted while reading) ({error.str()})"
    if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
        return (
            f"topic: a read position in {topic!r} is out of range ({error.str()}): records were deleted "
            "by retention or the topic was recreated; nothing was skipped, rerun to re-plan"
        )
    return f"consumer ({topic}): {error.str()}"


def consumer_config(
    base: Mapping[str, Any], policy: ErrorPolicy | None = None, **tuning: Any
) -> dict[str, Any]:
    """The consumer config of every reader: the connection's settings, ``tuning`` defaults, forced keys."""
    config = dict(base)
    inherited = config.get("auto.offset.reset")
    if inherited not in (None, "error"):
        log.info(
            "auto.offset.reset=%s from the connection is ignored: readers never reset silently", inherited
        )
    config.setdefault("group.id", READER_GROUP_ID)
    for key, value in tuning.items():
        config.setdefault(key, value)
    config.update(FORCED_CONFIG)
    config.setdefault("logger", LIBRDKAFKA_LOG)
    if policy is not None:
        config["error_cb"] = policy.on_client_error
    return config


def open_consumer(base: Mapping[str, Any], policy: ErrorPolicy | None = None, **tuning: Any) -> Consumer:
    try:
        return Consumer(consumer_config(base, policy, **tuning))
    except KafkaException as err:
        raise TopicReadError(f"connection extra: {err.args[0].str()}") from None


def _unreachable(config: Mapping[str, Any], timeout_s: float, detail: str) -> str:
    servers = config.get("bootstrap.servers", "?")
    return f"bootstrap.servers: no broker of {servers} answered within {timeout_s:g} s ({detail})"


@dataclass(frozen=True)
class TopicIdentity:
    """A topic's Kafka id (new when it is deleted and recreated under the same name) and partitions."""

    topic_id: str
    partitions: list[int]


def describe_topic(base: Mapping[str, Any], topic: str, timeout_s: float) -> TopicIdentity:
    """The topic's id and partitions, in one request a landing run makes before any consumer exists."""
    config = {k: v for k, v in base.items() if k in _ADMIN_KEYS or k.startswith(_ADMIN_PREFIXES)}
    config.setdefault("logger", LIBRDKAFKA_LOG)
    # error_cb runs only inside poll(): the wait polls, so a refused login or TLS handshake ends the
    # run at once in its own words, instead of as a timeout that reads like an unreachable broker.
    refusals: list[KafkaError] = []
    config["error_cb"] = lambda error: refusals.append(error) if is_refusal(error) else None
    try:
        admin = AdminClient(config)
    except KafkaException as err:  # a setting librdkafka refuses (an unknown protocol, a missing CA file)
        raise TopicReadError(f"connection extra: {err.args[0].str()}") from None
    try:
        future = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)[topic]
        deadline = time.monotonic() + timeout_s + 5
        while not future.done():
            concurrent.futures.wait([future], timeout=0.05)  # returns as soon as the answer is in
            admin.poll(0)
            if refusals:
                raise TopicReadError(describe_error(topic, refusals[0]))
            if time.monotonic() > deadline:
                raise TopicReadError(_unreachable(base, timeout_s, "timed out"))
        description = future.result()
    except KafkaException as err:
        error = err.args[0]
        admin.poll(0)  # the refusal that made the request time out, if any, explains it better
        if refusals:
            raise TopicReadError(describe_error(topic, refusals[0])) from None
        if error.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
            raise TopicReadError(_unreachable(base, timeout_s, error.str())) from None
        raise TopicReadError(describe_error(topic, error)) from None
    return TopicIdentity(str(description.topic_id), sorted(info.id for info in description.partitions))


# librdkafka keys an admin client honours (connection and security), taken from a consumer config.
_ADMIN_KEYS: Final = frozenset({"bootstrap.servers", "client.id", "client.dns.lookup", "socket.timeout.ms"})
_ADMIN_PREFIXES: Final = ("security.", "sasl.", "ssl.", "oauth", "broker.address.")


def partitions_of(
    consumer: Consumer, topic: str, timeout_s: float, servers: str = "?", policy: ErrorPolicy | None = None
) -> list[int]:
    """The topic's partitions, or one line saying why it cannot be read.

    With the consumer's ``policy``, the wait is cut in short metadata requests with ``poll(0)`` between
    them (librdkafka's ``error_cb`` runs only there): a refused login or TLS handshake fails at once,
    in its own words, instead of as a broker that never answered.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = max(0.001, deadline - time.monotonic())
        try:
            metadata = consumer.list_topics(
                topic, timeout=remaining if policy is None else min(remaining, 0.5)
            )
            break
        except KafkaException as err:
            if policy is not None:
                with policy.first_contact():
                    consumer.poll(0)  # nothing is assigned yet: this serves callbacks only
                if policy.refusal is not None:
                    raise TopicReadError(describe_error(topic, policy.refusal)) from None
                if err.args[0].code() == KafkaError._TIMED_OUT and time.monotonic() < deadline:
                    continue
            raise TopicReadError(
                _unreachable({"bootstrap.servers": servers}, timeout_s, err.args[0].str())
            ) from None
    topic_metadata = metadata.topics.get(topic)
    if topic_metadata is None:
        raise TopicReadError(f"topic: {topic!r} does not exist")
    if topic_metadata.error is not None:
        raise TopicReadError(describe_error(topic, topic_metadata.error))
    return sorted(topic_metadata.partitions)


def watermarks(
    consumer: OffsetQueries, topic: str, partitions: Iterable[int], timeout_s: float
) -> dict[int, tuple[int, int]]:
    """partition -> (low, high) offsets, read from the leaders now."""
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s, cached=False)
            for p in partitions
        }
    except KafkaException as err:
        raise TopicReadError(describe_error(topic, err.args[0])) from None


def offsets_at(
    consumer: OffsetQueries, topic: str, partitions: Iterable[int], when: datetime, timeout_s: float
) -> dict[int, int]:
    """partition -> first offset whose timestamp is at or after ``when`` (-1: no such record yet)."""
    wanted = [TopicPartition(topic, p, int(when.timestamp() * 1000)) for p in partitions]
    if not wanted:
        return {}
    try:
        found = consumer.offsets_for_times(wanted, timeout=timeout_s)
    except KafkaException as err:
        raise TopicReadError(describe_error(topic, err.args[0])) from None
    for position in found:
        if position.error is not None:
            raise TopicReadError(
                f"partition {position.partition}: offsets at {when.isoformat()}: {position.error}"
            )
    return {position.partition: position.offset for position in found}


def start_offsets(
    consumer: OffsetQueries,
    topic: str,
    marks: Mapping[int, tuple[int, int]],
    start: StartAt,
    timeout_s: float,
) -> dict[int, int]:
    """partition -> first offset to read for ``start`` (a time with no record yet: the end)."""
    if isinstance(start, datetime):
        found = offsets_at(consumer, topic, marks, start, timeout_s)
        return {p: (offset if offset >= 0 else marks[p][1]) for p, offset in found.items()}
    if start == "earliest":
        return {p: low for p, (low, _) in marks.items()}
    if start == "latest":
        return {p: high for p, (_, high) in marks.items()}
    raise TopicReadError(f"start: must be 'earliest', 'latest' or a datetime (got {start!r})")


def assign(consumer: Consumer, topic: str, offsets: Mapping[int, int]) -> None:
    """Assign partitions at explicit offsets (never a group, never a committed position)."""
    if offsets:
        consumer.assign([TopicPartition(topic, p, offset) for p, offset in sorted(offsets.items())])


def past_end(offset: int, end_offset: int | None, partition: int, pending: set[int]) -> bool:
    """The end rule of a bounded read: whether a record at ``offset`` is at or past ``end_offset``
    (exclusive; None: no end), in which case it is not read. The partition leaves ``pending`` at its
    last record before the end, so a read stops without waiting for a record that never comes.
    (The native reader applies the same rule in ``native/src/reader.rs``.)"""
    if end_offset is None or offset < end_offset - 1:
        return False
    pending.discard(partition)
    return offset >= end_offset


def assign_from(
    consumer: Consumer,
    topic: str,
    start: StartAt,
    timeout_s: float = DEFAULT_METADATA_TIMEOUT_S,
    servers: str = "?",
    policy: ErrorPolicy | None = None,
) -> dict[int, tuple[int, int]]:
    """Assign every partition from ``start``; return partition -> (start offset, end offset read now)."""
    partitions = partitions_of(consumer, topic, timeout_s, servers, policy)
    marks = watermarks(consumer, topic, partitions, timeout_s)
    starts = start_offsets(consumer, topic, marks, start, timeout_s)
    assign(consumer, topic, starts)
    return {p: (starts[p], marks[p][1]) for p in partitions}
