"""``ClientTelemetryArrivalTrigger``: wait, in the triggerer, for telemetry from matching clients.

Reads the telemetry topic's headers only (no decoding) from a start time, with the KIP's own
selector semantics: every selector's regex must match the client's whole value. Fires with the
clients seen once enough distinct client instances have pushed, or with ``timeout`` at the deadline.
The consumer is created in a thread on first use and closed in ``cleanup``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent
from confluent_kafka import Consumer, KafkaError, Message

from airflow_provider_kip714.contract.selectors import SELECTOR_HEADERS, MatchSelector, parse_match
from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC, Header, RecordType
from airflow_provider_kip714.decoding.decoder import headers_to_dict

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
    """All-selectors-must-fully-match, as the broker matches subscriptions."""

    def __init__(self, selectors: Iterable[MatchSelector]) -> None:
        self.selectors = tuple(selectors)
        self._compiled = [(SELECTOR_HEADERS[s.selector], re.compile(s.pattern)) for s in self.selectors]

    def matches(self, headers: dict[str, str | None]) -> bool:
        if headers.get(Header.TYPE) != RecordType.CLIENT:
            return False
        return all(pattern.fullmatch(headers.get(header) or "") for header, pattern in self._compiled)


class ArrivalWatch:
    """Remember the matching clients among scanned records; shared by the sensor and the trigger."""

    def __init__(self, selectors: Sequence[str], since_ms: int) -> None:
        self.matcher = ClientSelectorMatcher(parse_match(list(selectors)))
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
    config: dict[str, Any], topic: str, since_ms: int, timeout_s: float = 15.0
) -> Consumer:
    """A consumer assigned to every partition of ``topic`` at the first offset at or after ``since_ms``."""
    from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook

    hook = TelemetryTopicHook(config=config, topic=topic)
    consumer = hook.get_conn()
    try:
        hook.assign(consumer, datetime.fromtimestamp(since_ms / 1000, tz=UTC), timeout_s=timeout_s)
    except BaseException:
        consumer.close()
        raise
    return consumer


class ClientTelemetryArrivalTrigger(BaseTrigger):
    """Fire when ``min_clients`` distinct matching clients pushed telemetry at or after ``since_ms``.

    :param selectors: ``selector=regex`` strings (the six KIP-714 selectors; all must match).
    :param since_ms: epoch milliseconds; older records are ignored.
    :param deadline_ms: epoch milliseconds after which the trigger fires with status ``timeout``.
    :param kafka_config_id: Airflow ``kafka`` connection (librdkafka extra).
    :param topic: the telemetry topic.
    :param min_clients: distinct client instances to wait for.
    :param poll_interval: seconds per consume call.
    """

    def __init__(
        self,
        selectors: Sequence[str],
        since_ms: int,
        deadline_ms: int,
        kafka_config_id: str = "kafka_default",
        topic: str = DEFAULT_TELEMETRY_TOPIC,
        min_clients: int = 1,
        poll_interval: float = 1.0,
    ) -> None:
        super().__init__()
        parse_match(list(selectors))  # refuse bad selectors before deferring
        self.selectors = list(selectors)
        self.since_ms = int(since_ms)
        self.deadline_ms = int(deadline_ms)
        self.kafka_config_id = kafka_config_id
        self.topic = topic
        self.min_clients = int(min_clients)
        self.poll_interval = float(poll_interval)
        self._consumer: Consumer | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "selectors": self.selectors,
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
        return open_arrival_consumer(config, self.topic, self.since_ms)

    def _event(self, status: str, watch: ArrivalWatch, **extra: Any) -> TriggerEvent:
        return TriggerEvent(
            {
                "status": status,
                "selectors": self.selectors,
                "clients": watch.clients(),
                "topic": self.topic,
                **extra,
            }
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        watch = ArrivalWatch(self.selectors, self.since_ms)
        try:
            self._consumer = await asyncio.to_thread(self._open)
            while True:
                messages = await asyncio.to_thread(self._consumer.consume, 500, self.poll_interval)
                for message in messages:
                    error = message.error()
                    if error is not None and error.code() != KafkaError._PARTITION_EOF and error.fatal():
                        yield self._event(STATUS_ERROR, watch, error=str(error))
                        return
                    watch.observe(message)
                if len(watch.seen) >= self.min_clients:
                    yield self._event(STATUS_ARRIVED, watch)
                    return
                if time.time() * 1000 >= self.deadline_ms:
                    yield self._event(STATUS_TIMEOUT, watch)
                    return
        finally:
            await self.cleanup()

    async def cleanup(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            await asyncio.to_thread(consumer.close)
