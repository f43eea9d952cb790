"""Reading what the broker plugin wrote: records of the telemetry topic and the broker-metric records."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC, BrokerMetric, Header
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription, parse_match
from airflow_provider_kip714.telemetry.topic_consumer import partitions_of, watermarks


@dataclass(frozen=True)
class TopicRecord:
    key: str
    value: bytes
    headers: dict[str, str]
    timestamp_ms: int
    partition: int = 0
    offset: int = 0

    @property
    def is_broker(self) -> bool:
        return self.headers.get(Header.TYPE) == "broker"

    def metrics(self) -> MetricsData:
        data = MetricsData()
        data.ParseFromString(self.value)
        return data

    def metric_names(self) -> set[str]:
        return {
            metric.name
            for resource in self.metrics().resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }

    def metric_total(self, name: str, **attributes: str) -> float:
        """Sum of a sum/gauge metric's points whose attributes include ``attributes``."""
        total = 0.0
        for resource in self.metrics().resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    points = metric.sum.data_points if metric.HasField("sum") else metric.gauge.data_points
                    for point in points:
                        labels = {kv.key: kv.value.string_value for kv in point.attributes}
                        if all(labels.get(k) == v for k, v in attributes.items()):
                            total += point.as_int if point.HasField("as_int") else point.as_double
        return total


def read_topic(
    bootstrap: str,
    until: Callable[[list[TopicRecord]], bool],
    timeout_s: float = 60.0,
    topic: str = DEFAULT_TELEMETRY_TOPIC,
) -> list[TopicRecord]:
    """Read the topic from the start until ``until(records)`` holds; fail with what was seen if not."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"plugin-test-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.metrics.push": False,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    records: list[TopicRecord] = []
    try:
        deadline = time.monotonic() + timeout_s
        assigned = False
        while time.monotonic() < deadline:
            if not assigned:
                metadata = consumer.list_topics(topic, timeout=5)
                partitions = metadata.topics.get(topic)
                if partitions is None or partitions.error is not None or not partitions.partitions:
                    time.sleep(0.5)
                    continue
                consumer.assign([TopicPartition(topic, p, 0) for p in partitions.partitions])
                assigned = True
            for message in consumer.consume(500, timeout=0.5):
                if message.error():
                    continue
                records.append(
                    TopicRecord(
                        key=(message.key() or b"").decode(),
                        value=message.value() or b"",
                        headers={k: (v or b"").decode() for k, v in (message.headers() or [])},
                        timestamp_ms=message.timestamp()[1],
                        partition=message.partition(),
                        offset=message.offset(),
                    )
                )
            if until(records):
                return records
    finally:
        consumer.close()
    kinds = {(r.headers.get(Header.TYPE), r.headers.get(Header.CLIENT_ID)) for r in records}
    raise AssertionError(f"condition not met within {timeout_s}s; saw {len(records)} records of {kinds}")


def read_to_end(
    bootstrap: str, timeout_s: float = 30.0, topic: str = DEFAULT_TELEMETRY_TOPIC
) -> list[TopicRecord]:
    """Every record up to the end offsets taken before the read begins.

    A topic clients keep pushing to has no end to wait for, and one consume round (``until`` always true)
    stops wherever its batch of 500 ends: a test looking for the newest pushes needs a fixed end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"plugin-test-ends-{uuid.uuid4().hex[:8]}",
            "enable.metrics.push": False,
        }
    )
    try:
        partitions = partitions_of(consumer, topic, timeout_s=10, servers=bootstrap)
        ends = {p: high for p, (_, high) in watermarks(consumer, topic, partitions, timeout_s=10).items()}
    finally:
        consumer.close()

    def reached(records: list[TopicRecord]) -> bool:
        last: dict[int, int] = {}
        for record in records:
            last[record.partition] = max(last.get(record.partition, -1), record.offset)
        return all(last.get(partition, -1) >= end - 1 for partition, end in ends.items() if end > 0)

    return read_topic(bootstrap, until=reached, timeout_s=timeout_s, topic=topic)


def client_records(records: list[TopicRecord], client_id: str) -> list[TopicRecord]:
    return [r for r in records if not r.is_broker and r.headers.get(Header.CLIENT_ID) == client_id]


def broker_records(records: list[TopicRecord], after_ms: int = 0) -> list[TopicRecord]:
    return [r for r in records if r.is_broker and r.timestamp_ms > after_ms]


def latest_broker_value(records: list[TopicRecord], metric: BrokerMetric | str, **attributes: str) -> float:
    latest = max(broker_records(records), key=lambda r: r.timestamp_ms, default=None)
    return 0.0 if latest is None else latest.metric_total(str(metric), **attributes)


@contextmanager
def subscription(
    bootstrap: str, name: str, match: str, metrics: tuple[str, ...] = ("*",), interval_ms: int = 1000
) -> Iterator[Subscription]:
    """A client-metrics subscription for the duration of a test, deleted afterwards."""
    spec = Subscription(name=name, metrics=metrics, interval_ms=interval_ms, match=parse_match(match))
    with ClientMetricsAdmin(to_kafka_python_kwargs({"bootstrap.servers": bootstrap})) as admin:
        admin.upsert(spec)
        try:
            yield spec
        finally:
            admin.delete(name)


def headers_complete(record: TopicRecord) -> bool:
    return all(str(header) in record.headers for header in Header)


def wait_for(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
