"""``TelemetryTopicHook``: read the telemetry topic with confluent-kafka, decode it, land it as Parquet.

The connection is the apache-kafka provider's format: a ``kafka`` connection (``kafka_default``)
whose JSON extra is the librdkafka config (see ``hooks.base``). Reading goes through
``telemetry.topic_consumer``: partitions assigned explicitly, no consumer-group offsets, no silent offset
reset, fatal errors end the read with one line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer

from airflow_provider_kip714 import native_switches
from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from airflow_provider_kip714.decoding.decoder import TopicRecord, ValueFormat, decode_one
from airflow_provider_kip714.hooks.base import DEFAULT_CONN_ID, Kip714KafkaBaseHook
from airflow_provider_kip714.telemetry import topic_consumer
from airflow_provider_kip714.telemetry.landing import LandingResult, land_topic
from airflow_provider_kip714.telemetry.topic_consumer import StartAt

__all__ = ["DEFAULT_CONN_ID", "DecodedRecord", "StartAt", "TelemetryTopicHook"]


@dataclass(frozen=True)
class DecodedRecord:
    """A record with its metadata, plus its datapoint rows, or the reason it could not be decoded."""

    record: TopicRecord
    rows: list[dict[str, Any]]
    error: str | None


class TelemetryTopicHook(Kip714KafkaBaseHook):
    """Iterate and land the KIP-714 telemetry topic.

    :param kafka_config_id: Airflow ``kafka`` connection; its extra is the librdkafka config.
    :param config: use this librdkafka config instead of a connection (CLI, tests).
    :param topic: the telemetry topic.
    :param value_format: ``otlp_proto`` (default), ``otlp_json`` or ``auto`` (JSON if it starts with ``{``).
    """

    hook_name = "Kafka telemetry topic (KIP-714)"

    def __init__(
        self,
        kafka_config_id: str = DEFAULT_CONN_ID,
        config: Mapping[str, Any] | None = None,
        topic: str = DEFAULT_TELEMETRY_TOPIC,
        value_format: ValueFormat = "otlp_proto",
    ) -> None:
        super().__init__(kafka_config_id, config)
        self.topic = topic
        self.value_format = value_format

    def _create_client(self) -> Consumer:
        return topic_consumer.open_consumer(self.client_config(), topic_consumer.ErrorPolicy(self.topic))

    def get_conn(self) -> Consumer:
        """The hook's reader consumer, nothing assigned (kept until ``close()``).

        A read (``iter_records``) opens its own consumer with its own error policy and closes it when
        the read ends, so two reads of one hook never share an assignment; a landing run
        (``land``) owns its reader likewise.
        """
        return super().get_conn()  # type: ignore[no-any-return]

    # ---- reading -------------------------------------------------------------------------------

    def assign(
        self,
        consumer: Consumer,
        start: StartAt,
        timeout_s: float = topic_consumer.DEFAULT_METADATA_TIMEOUT_S,
        policy: topic_consumer.ErrorPolicy | None = None,
    ) -> dict[int, tuple[int, int]]:
        """Assign every partition from ``start``; return partition -> (start offset, end offset read now).

        ``policy``: the one ``get_conn`` was given, so a refused login or TLS handshake fails at once."""
        topic_consumer.check_duration("timeout_s", timeout_s, allow_none=False)
        servers = str(self.client_config().get("bootstrap.servers"))
        return topic_consumer.assign_from(consumer, self.topic, start, timeout_s, servers, policy)

    def iter_records(
        self,
        start: StartAt = "earliest",
        *,
        max_records: int | None = None,
        timeout_s: float | None = 30.0,
        stop_at_end: bool = True,
        decode: bool = True,
    ) -> Iterator[DecodedRecord]:
        """Yield records (with decoded rows) from ``start``.

        Stops at the end offsets read at the start (unless ``stop_at_end`` is false), after
        ``max_records``, or after ``timeout_s`` seconds, whichever comes first. A fatal client error
        (no authorization, topic deleted, brokers gone for longer than the metadata timeout) raises
        ``TopicReadError``.
        """
        topic_consumer.check_duration("timeout_s", timeout_s)
        native_switches.check()  # a misspelt switch is refused before connecting
        policy = topic_consumer.ErrorPolicy(self.topic)
        consumer = topic_consumer.open_consumer(self.client_config(), policy)
        try:
            metadata_timeout = topic_consumer.DEFAULT_METADATA_TIMEOUT_S
            ranges = self.assign(
                consumer, start, min(metadata_timeout, timeout_s or metadata_timeout), policy
            )
            pending = {p for p, (first, end) in ranges.items() if first < end} if stop_at_end else set(ranges)
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            yielded = 0
            while pending and (deadline is None or time.monotonic() < deadline):
                message = consumer.poll(0.2)
                policy.raise_pending()
                if message is None:
                    continue
                error = message.error()
                if error is not None:
                    policy.check(error)
                    continue
                policy.progress()
                partition = message.partition()
                if stop_at_end and topic_consumer.past_end(
                    message.offset(), ranges[partition][1], partition, pending
                ):
                    continue
                record = TopicRecord(
                    self.topic,
                    partition,
                    message.offset(),
                    max(message.timestamp()[1], 0),
                    message.key(),
                    message.headers(),
                    message.value(),
                )
                yield self._decode(record) if decode else DecodedRecord(record, [], None)
                yielded += 1
                if max_records is not None and yielded >= max_records:
                    return
        finally:
            policy.silence()
            consumer.close()

    def _decode(self, record: TopicRecord) -> DecodedRecord:
        rows, error = decode_one(record, self.value_format)
        return DecodedRecord(record, rows, error)

    # ---- landing -------------------------------------------------------------------------------

    def land(self, out_dir: str | os.PathLike[str], **options: Any) -> LandingResult:
        """Land the topic into ``out_dir`` exactly once; options as ``landing.TopicLander``."""
        options.setdefault("value_format", self.value_format)
        return land_topic(self.client_config(), self.topic, out_dir, **options)

    def test_connection(self) -> tuple[bool, str]:
        policy = topic_consumer.ErrorPolicy(self.topic)
        try:
            consumer = topic_consumer.open_consumer(self.client_config(), policy)
        except Exception as err:
            return False, str(err)
        try:
            servers = str(self.client_config().get("bootstrap.servers"))
            partitions = topic_consumer.partitions_of(consumer, self.topic, 10.0, servers, policy)
            return True, f"topic {self.topic!r}: {len(partitions)} partitions"
        except Exception as err:
            return False, str(err)
        finally:
            consumer.close()
