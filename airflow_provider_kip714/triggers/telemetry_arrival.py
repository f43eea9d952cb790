"""``ClientTelemetryArrivalTrigger``: wait, in the triggerer, for telemetry from matching clients.

Reads the telemetry topic's headers only (no decoding) from a start time, with the KIP's own
selector semantics: every selector's regex must match the client's whole value. Fires with the
clients seen once enough distinct client instances have pushed, or with ``timeout`` at the deadline.

The triggerer's event loop is shared by every trigger, so nothing here may block it:

- User regexes run against client-controlled strings: they are compiled by RE2 (``google-re2``),
  which matches in time linear in the input, so a pattern such as ``(a+)+$`` cannot stall the loop.
  The rare Java construct RE2 lacks (backreferences, lookaround, possessive quantifiers) is refused
  with one line before deferring.
- The consumer lives on one dedicated thread: it is created, consumes and is closed there, so
  ``close()`` never runs while another thread is inside ``consume()`` (a librdkafka crash pattern),
  even when the trigger is cancelled mid-consume.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent
from confluent_kafka import Consumer, Message

from airflow_provider_kip714.contract.selectors import (
    MatchSelector,
    header_identity,
    match_map,
    matcher,
    parse_match,
)
from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC, Header, RecordType
from airflow_provider_kip714.decoding.decoder import headers_to_dict
from airflow_provider_kip714.hooks.base import DEFAULT_CONN_ID
from airflow_provider_kip714.telemetry import topic_consumer

STATUS_ARRIVED = "arrived"
STATUS_TIMEOUT = "timeout"
STATUS_ERROR = "error"


@dataclass(frozen=True)
class SeenClient:
    client_instance_id: str
    client_id: str | None
    client_software_name: str | None
    client_software_version: str | None
    client_source_address: str | None
    first_seen: str  # ISO-8601 record timestamp


class ClientSelectorMatcher:
    """Client records whose headers all selectors fully match (``selectors.matcher``: RE2, linear time)."""

    def __init__(self, selectors: Iterable[MatchSelector]) -> None:
        self.selectors = tuple(selectors)
        self._matches = matcher(match_map(self.selectors))

    def matches(self, headers: dict[str, str | None]) -> bool:
        return headers.get(Header.TYPE) == RecordType.CLIENT and self._matches(header_identity(headers))


class ArrivalWatch:
    """Remember the matching clients among scanned records; shared by the sensor and the trigger."""

    def __init__(self, match: Sequence[str], since_ms: int) -> None:
        self.matcher = ClientSelectorMatcher(parse_match(list(match)))
        self.since_ms = since_ms
        self.seen: dict[str, SeenClient] = {}

    def observe(self, message: Message) -> None:
        if message.error() is None:
            self.observe_record(message.headers(), message.timestamp()[1])

    def observe_record(
        self, raw_headers: Sequence[tuple[str, bytes | None]] | None, timestamp_ms: int
    ) -> None:
        if timestamp_ms < self.since_ms:
            return
        headers = headers_to_dict(raw_headers)
        if not self.matcher.matches(headers):
            return
        instance_id = headers.get(Header.CLIENT_INSTANCE_ID) or ""
        if instance_id in self.seen:
            return
        self.seen[instance_id] = SeenClient(
            client_instance_id=instance_id,
            client_id=headers.get(Header.CLIENT_ID),
            client_software_name=headers.get(Header.CLIENT_SOFTWARE_NAME),
            client_software_version=headers.get(Header.CLIENT_SOFTWARE_VERSION),
            client_source_address=headers.get(Header.CLIENT_SOURCE_ADDRESS),
            first_seen=datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC).isoformat(),
        )

    def clients(self) -> list[dict[str, Any]]:
        return [asdict(client) for client in sorted(self.seen.values(), key=lambda c: c.first_seen)]


def open_arrival_consumer(
    config: dict[str, Any],
    topic: str,
    since_ms: int,
    timeout_s: float = topic_consumer.DEFAULT_METADATA_TIMEOUT_S,
    policy: topic_consumer.ErrorPolicy | None = None,
) -> Consumer:
    """A reader consumer on every partition of ``topic``, at its first record at or after ``since_ms``."""
    consumer = topic_consumer.open_consumer(config, policy)
    try:
        since = datetime.fromtimestamp(since_ms / 1000, tz=UTC)
        topic_consumer.assign_from(
            consumer, topic, since, timeout_s, str(config.get("bootstrap.servers")), policy
        )
    except BaseException:
        consumer.close()
        raise
    return consumer


class ClientTelemetryArrivalTrigger(BaseTrigger):
    """Fire when ``min_clients`` distinct matching clients pushed telemetry at or after ``since_ms``.

    :param match: ``selector=regex`` strings (the six KIP-714 selectors; all must match).
    :param since_ms: epoch milliseconds; older records are ignored.
    :param deadline_ms: epoch milliseconds after which the trigger fires with status ``timeout``.
    :param kafka_config_id: Airflow ``kafka`` connection (librdkafka extra).
    :param topic: the telemetry topic.
    :param min_clients: distinct client instances to wait for.
    :param poll_interval: seconds per consume call.
    """

    def __init__(
        self,
        match: Sequence[str],
        since_ms: int,
        deadline_ms: int,
        kafka_config_id: str = DEFAULT_CONN_ID,
        topic: str = DEFAULT_TELEMETRY_TOPIC,
        min_clients: int = 1,
        poll_interval: float = 1.0,
    ) -> None:
        super().__init__()
        ClientSelectorMatcher(parse_match(list(match)))  # refuse bad selectors before deferring
        topic_consumer.check_duration("poll_interval", poll_interval, allow_none=False)
        self.match = list(match)
        self.since_ms = int(since_ms)
        self.deadline_ms = int(deadline_ms)
        self.kafka_config_id = kafka_config_id
        self.topic = topic
        self.min_clients = int(min_clients)
        self.poll_interval = float(poll_interval)
        self._consumer: Consumer | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._closed: Future[None] | None = None
        self._policy = topic_consumer.ErrorPolicy(topic)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "match": self.match,
                "since_ms": self.since_ms,
                "deadline_ms": self.deadline_ms,
                "kafka_config_id": self.kafka_config_id,
                "topic": self.topic,
                "min_clients": self.min_clients,
                "poll_interval": self.poll_interval,
            },
        )

    def _open(self) -> Consumer:
        from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook

        config = TelemetryTopicHook(kafka_config_id=self.kafka_config_id, topic=self.topic).client_config()
        return open_arrival_consumer(config, self.topic, self.since_ms, policy=self._policy)

    def _event(self, status: str, watch: ArrivalWatch, **extra: Any) -> TriggerEvent:
        return TriggerEvent(
            {
                "status": status,
                "match": self.match,
                "clients": watch.clients(),
                "topic": self.topic,
                **extra,
            }
        )

    async def _on_thread(self, fn: Any, *args: Any) -> Any:
        """Run ``fn`` on the trigger's own consumer thread (created on first use)."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kip714-arrival")
        return await asyncio.wrap_future(self._thread.submit(fn, *args))

    async def run(self) -> AsyncIterator[TriggerEvent]:
        watch = ArrivalWatch(self.match, self.since_ms)
        try:
            try:
                self._consumer = await self._on_thread(self._open)
            except topic_consumer.TopicReadError as err:
                yield self._event(STATUS_ERROR, watch, error=str(err))
                return
            while True:
                messages = await self._on_thread(self._consumer.consume, 500, self.poll_interval)
                try:
                    self._observe(messages, watch)
                except topic_consumer.TopicReadError as err:
                    yield self._event(STATUS_ERROR, watch, error=str(err))
                    return
                if len(watch.seen) >= self.min_clients:
                    yield self._event(STATUS_ARRIVED, watch)
                    return
                if time.time() * 1000 >= self.deadline_ms:
                    yield self._event(STATUS_TIMEOUT, watch)
                    return
        finally:
            await self.cleanup()

    def _observe(self, messages: list[Message], watch: ArrivalWatch) -> None:
        """Headers and timestamps only, matched by RE2; a fatal client error raises ``TopicReadError``."""
        self._policy.raise_pending()
        for message in messages:
            error = message.error()
            if error is not None:
                self._policy.check(error)
                continue
            watch.observe(message)

    async def cleanup(self) -> None:
        """Close the consumer on its own thread, after any consume in flight there has returned.

        Safe on cancellation: the close is queued behind the running consume (at most
        ``poll_interval`` away) whether or not this coroutine gets to wait for it.
        """
        consumer, self._consumer = self._consumer, None
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if consumer is not None:
            self._policy.silence()
            self._closed = thread.submit(consumer.close)
        thread.shutdown(wait=False)
        if self._closed is not None:
            await asyncio.shield(asyncio.wrap_future(self._closed))
