"""``TelemetryTopicHook``: read the telemetry topic with confluent-kafka, decode it, land it as Parquet.

The connection is the apache-kafka provider's format: a ``kafka`` connection (``kafka_default``)
whose JSON extra is the librdkafka config. Reading never uses consumer-group offsets: partitions are
assigned explicitly, so reading has no side effects on the cluster and landing resumes from the
landed files (see ``landing_zone``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from airflow.sdk import BaseHook
from confluent_kafka import Consumer, KafkaError, TopicPartition

from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from airflow_provider_kip714.decoding.decoder import TopicRecord, ValueFormat, decode_batch
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.telemetry.landing import LandingResult, land_topic

DEFAULT_CONN_ID = "kafka_default"
_SECRET_KEYS = (
    "sasl.password",
    "ssl.key.password",
    "ssl.keystore.password",
    "sasl.oauthbearer.client.secret",
)


@dataclass(frozen=True)
class DecodedRecord:
    """A record with its metadata, plus its datapoint rows, or the reason it could not be decoded."""

    record: TopicRecord
    rows: list[dict[str, Any]]
    error: str | None


StartAt = Literal["earliest", "latest"] | datetime


class TelemetryTopicHook(BaseHook):
    """Iterate and land the KIP-714 telemetry topic.

    :param kafka_config_id: Airflow ``kafka`` connection; its extra is the librdkafka config.
    :param config: use this librdkafka config instead of a connection (CLI, tests).
    :param topic: the telemetry topic.
    :param value_format: ``otlp_proto`` (default), ``otlp_json`` or ``auto`` (JSON if it starts with ``{``).
    """

    conn_name_attr = "kafka_config_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "kafka"
    hook_name = "Kafka telemetry topic (KIP-714)"

    def __init__(
        self,
        kafka_config_id: str = DEFAULT_CONN_ID,
        config: Mapping[str, Any] | None = None,
        topic: str = DEFAULT_TELEMETRY_TOPIC,
        value_format: ValueFormat = "otlp_proto",
    ) -> None:
        super().__init__()
        self.kafka_config_id = kafka_config_id
        self._explicit_config = dict(config) if config is not None else None
        self.topic = topic
        self.value_format = value_format

    def client_config(self) -> dict[str, Any]:
        """The librdkafka config from the connection extra (or the explicit ``config``)."""
        if self._explicit_config is not None:
            config = dict(self._explicit_config)
        else:
            config = dict(self.get_connection(self.kafka_config_id).extra_dejson)
            _mask_secrets(config)
        if not config.get("bootstrap.servers"):
            source = "config" if self._explicit_config is not None else f"connection {self.kafka_config_id!r}"
            raise Kip714Error(f"bootstrap.servers: must be set in the {source} extra")
        return config

    def get_conn(self) -> Consumer:
        """A consumer with nothing assigned; the caller closes it."""
        config = self.client_config()
        config.setdefault("group.id", "kip714-telemetry-reader")
        config.update({"enable.auto.commit": False, "enable.auto.offset.store": False})
        return Consumer(config)

    # ---- reading -------------------------------------------------------------------------------

    def assign(
        self, consumer: Consumer, start: StartAt, timeout_s: float = 15.0
    ) -> dict[int, tuple[int, int]]:
        """Assign every partition from ``start``; return partition -> (start offset, end offset read now)."""
        metadata = consumer.list_topics(self.topic, timeout=timeout_s)
        topic_metadata = metadata.topics.get(self.topic)
        if topic_metadata is None or topic_metadata.error is not None:
            reason = "not found" if topic_metadata is None else str(topic_metadata.error)
            raise Kip714Error(f"topic: {self.topic!r} cannot be read ({reason})")
        partitions = sorted(topic_metadata.partitions)
        watermarks = {
            partition: consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=timeout_s, cached=False
            )
            for partition in partitions
        }
        if isinstance(start, datetime):
            millis = int(start.timestamp() * 1000)
            found = consumer.offsets_for_times(
                [TopicPartition(self.topic, partition, millis) for partition in partitions], timeout=timeout_s
            )
            starts = {
                tp.partition: (tp.offset if tp.offset >= 0 else watermarks[tp.partition][1]) for tp in found
            }
        elif start == "earliest":
            starts = {partition: low for partition, (low, _) in watermarks.items()}
        elif start == "latest":
            starts = {partition: high for partition, (_, high) in watermarks.items()}
        else:
            raise Kip714Error(f"start: must be 'earliest', 'latest' or a datetime (got {start!r})")
        consumer.assign(
            [TopicPartition(self.topic, partition, starts[partition]) for partition in partitions]
        )
        return {partition: (starts[partition], watermarks[partition][1]) for partition in partitions}

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
        ``max_records``, or after ``timeout_s`` seconds, whichever comes first.
        """
        consumer = self.get_conn()
        try:
            ranges = self.assign(consumer, start)
            pending = {p for p, (first, end) in ranges.items() if first < end} if stop_at_end else set(ranges)
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            yielded = 0
            while pending and (deadline is None or time.monotonic() < deadline):
                message = consumer.poll(0.2)
                if message is None:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF or not error.fatal():
                        continue
                    raise Kip714Error(f"consumer: {error}")
                partition = message.partition()
                end = ranges[partition][1]
                if stop_at_end and message.offset() >= end - 1:
                    pending.discard(partition)
                    if message.offset() >= end:
                        continue
                _, timestamp_ms = message.timestamp()
                record = TopicRecord(
                    self.topic,
                    partition,
                    message.offset(),
                    max(timestamp_ms, 0),
                    message.key(),
                    message.headers(),
                    message.value(),
                )
                yield self._decode(record) if decode else DecodedRecord(record, [], None)
                yielded += 1
                if max_records is not None and yielded >= max_records:
                    return
        finally:
            consumer.close()

    def _decode(self, record: TopicRecord) -> DecodedRecord:
        batch = decode_batch([record], self.value_format)
        if batch.failures:
            return DecodedRecord(record, [], batch.failures[0][1])
        return DecodedRecord(record, batch.datapoints.to_pylist(), None)

    # ---- landing -------------------------------------------------------------------------------

    def land(self, out_dir: str | os.PathLike[str], **options: Any) -> LandingResult:
        """Land the topic into ``out_dir`` exactly once; options as ``landing.TopicLander``."""
        options.setdefault("value_format", self.value_format)
        return land_topic(self.client_config(), self.topic, out_dir, **options)

    def test_connection(self) -> tuple[bool, str]:
        consumer = self.get_conn()
        try:
            metadata = consumer.list_topics(self.topic, timeout=10)
            topic = metadata.topics.get(self.topic)
            if topic is None or topic.error is not None:
                return False, f"topic {self.topic!r} is not readable"
            return True, f"topic {self.topic!r}: {len(topic.partitions)} partitions"
        except Exception as err:
            return False, str(err)
        finally:
            consumer.close()


def _mask_secrets(config: Mapping[str, Any]) -> None:
    from airflow.sdk.log import mask_secret

    for key in _SECRET_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value:
            mask_secret(value)
