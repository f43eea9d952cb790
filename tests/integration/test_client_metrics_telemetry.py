"""What clients are told and what they push, observed on the real broker with the KIP-714 plugin loaded.

The broker-side view comes from ``TelemetryProbe`` (a GetTelemetrySubscriptions exactly like a client
sends); the push side from a real librdkafka producer and the ``_client_telemetry`` topic.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.telemetry_probe import TelemetryProbe, TelemetrySubscriptionView
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import DEFAULT_INTERVAL_MS, Subscription

PRODUCER_PREFIXES = ("org.apache.kafka.producer.connection.", "org.apache.kafka.producer.request.")


@pytest.fixture
def plugin_cluster(kafka_cluster: LocalKafkaCluster) -> LocalKafkaCluster:
    if not kafka_cluster.plugin_loaded:
        pytest.fail("broker_plugin/target/kip714-broker-plugin.jar is not loaded; build it (make install)")
    return kafka_cluster


@pytest.fixture
def admin(plugin_cluster: LocalKafkaCluster) -> Iterator[ClientMetricsAdmin]:
    created: list[str] = []
    with ClientMetricsAdmin(to_kafka_python_kwargs(plugin_cluster.client_config())) as opened:
        opened.created = created  # type: ignore[attr-defined]
        yield opened
        for name in created:
            opened.delete(name)


def subscribe(admin: ClientMetricsAdmin, prefix: str, **spec: object) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin.upsert(Subscription.from_spec(name, **spec))  # type: ignore[arg-type]
    admin.created.append(name)  # type: ignore[attr-defined]
    return name


def eventually(
    probe: TelemetryProbe, wanted: Callable[[TelemetrySubscriptionView], bool]
) -> TelemetrySubscriptionView:
    """Subscription changes reach the broker's cache through the metadata log: ask until it shows."""
    deadline = time.monotonic() + 30
    view = probe.get_subscription()
    while not wanted(view) and time.monotonic() < deadline:
        time.sleep(0.3)
        view = probe.get_subscription()
    return view


def test_overlapping_windows_give_union_of_metrics_and_minimum_interval(
    plugin_cluster: LocalKafkaCluster, admin: ClientMetricsAdmin
) -> None:
    client_id = f"probe-{uuid.uuid4().hex[:8]}"
    with TelemetryProbe(plugin_cluster.bootstrap_servers, client_id=client_id) as probe:
        nothing = probe.get_subscription()
        assert nothing.requested_metrics == ()
        assert nothing.push_interval_ms == DEFAULT_INTERVAL_MS  # unmatched clients ask again after 5 min

        first = subscribe(admin, "overlap-a", metrics="org.apache.kafka.producer.", interval_ms=5000,
                          match=f"client_id={client_id}")  # fmt: skip
        one = eventually(probe, lambda view: view.requested_metrics != ())
        assert set(one.requested_metrics) == {"org.apache.kafka.producer."}
        assert one.push_interval_ms == 5000

        subscribe(admin, "overlap-b", metrics="org.apache.kafka.consumer.", interval_ms=2000,
                  match=f"client_id={client_id},client_software_name=kip714-probe")  # fmt: skip
        both = eventually(probe, lambda view: len(view.requested_metrics) == 2)
        assert set(both.requested_metrics) == {"org.apache.kafka.producer.", "org.apache.kafka.consumer."}
        assert both.push_interval_ms == 2000
        assert both.subscription_id != one.subscription_id

        admin.delete(first)
        after = eventually(probe, lambda view: len(view.requested_metrics) == 1)
        assert set(after.requested_metrics) == {"org.apache.kafka.consumer."}
        assert after.push_interval_ms == 2000


def test_standing_empty_subscription_shortens_the_idle_reask_interval(
    plugin_cluster: LocalKafkaCluster, admin: ClientMetricsAdmin
) -> None:
    client_id = f"idle-{uuid.uuid4().hex[:8]}"
    with TelemetryProbe(plugin_cluster.bootstrap_servers, client_id=client_id) as probe:
        assert probe.get_subscription().push_interval_ms == DEFAULT_INTERVAL_MS
        subscribe(admin, "standing", block=True, interval_ms=1000, match=f"client_id={client_id}")
        standing = eventually(probe, lambda view: view.push_interval_ms != DEFAULT_INTERVAL_MS)
        assert standing.requested_metrics == ()  # still told to push nothing...
        assert standing.push_interval_ms == 1000  # ...but to ask again every second


@dataclass
class PushedRecord:
    metric_names: set[str]
    subscription_id: str


class TelemetryReader:
    """Reads ``_client_telemetry`` from its current end, keeping one client's pushes."""

    def __init__(self, cluster: LocalKafkaCluster, client_id: str) -> None:
        self.client_id = client_id
        self.consumer = Consumer(
            {"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"reader-{client_id}",
             "enable.auto.commit": False, "enable.metrics.push": False}
        )  # fmt: skip
        metadata = self.consumer.list_topics(cluster.telemetry_topic, timeout=10)
        partitions = metadata.topics[cluster.telemetry_topic].partitions
        assigned = []
        for partition in partitions:
            _, high = self.consumer.get_watermark_offsets(
                TopicPartition(cluster.telemetry_topic, partition), timeout=10
            )
            assigned.append(TopicPartition(cluster.telemetry_topic, partition, high))
        self.consumer.assign(assigned)

    def read(self, seconds: float) -> list[PushedRecord]:
        found: list[PushedRecord] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self.consumer.poll(0.2)
            if message is None or message.error():
                continue
            headers = {key: (value or b"").decode() for key, value in message.headers() or []}
            if headers.get(Header.CLIENT_ID) != self.client_id:
                continue
            data = MetricsData.FromString(message.value())
            names = {
                metric.name
                for resource in data.resource_metrics
                for scope in resource.scope_metrics
                for metric in scope.metrics
            }
            found.append(PushedRecord(names, headers.get(Header.SUBSCRIPTION_ID, "")))
        return found

    def close(self) -> None:
        self.consumer.close()


def test_librdkafka_producer_pushes_exactly_the_window_and_stops_after_it(
    plugin_cluster: LocalKafkaCluster, admin: ClientMetricsAdmin
) -> None:
    client_id = f"pusher-{uuid.uuid4().hex[:8]}"
    # A standing "no metrics, 1 s" subscription makes the idle producer re-ask every second.
    subscribe(admin, "standing", block=True, interval_ms=1000, match=f"client_id={client_id}")
    reader = TelemetryReader(plugin_cluster, client_id)
    producer = Producer({"bootstrap.servers": plugin_cluster.bootstrap_servers, "client.id": client_id})
    # A bystander that no subscription matches at all, running alongside for the whole test.
    bystander_id = f"bystander-{uuid.uuid4().hex[:8]}"
    bystander_reader = TelemetryReader(plugin_cluster, bystander_id)
    bystander = Producer({"bootstrap.servers": plugin_cluster.bootstrap_servers, "client.id": bystander_id})
    try:
        producer.list_topics(timeout=10)  # connect and fetch metadata
        bystander.list_topics(timeout=10)
        assert reader.read(6) == []  # subscribed to nothing: pushes nothing

        window = subscribe(admin, "window", metrics=",".join(PRODUCER_PREFIXES), interval_ms=1000,
                           match=f"client_id={client_id}")  # fmt: skip
        pushed: list[PushedRecord] = []
        deadline = time.monotonic() + 60
        while len(pushed) < 2 and time.monotonic() < deadline:
            pushed += reader.read(1)
        assert len(pushed) >= 2, "the producer did not push within 60 s of the window opening"
        all_names = set().union(*(record.metric_names for record in pushed))
        assert all_names, "pushes carried no metrics"
        assert all(name.startswith(PRODUCER_PREFIXES) for name in all_names), all_names

        admin.delete(window)
        quiet_needed, deadline = 6.0, time.monotonic() + 60
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < quiet_needed:
            assert time.monotonic() < deadline, "the producer kept pushing 60 s after the window closed"
            if reader.read(1):
                quiet_since = time.monotonic()
        assert bystander_reader.read(2) == []  # never matched, never pushed (reads from the test's start)
    finally:
        producer.flush(5)
        bystander.flush(5)
        reader.close()
        bystander_reader.close()
