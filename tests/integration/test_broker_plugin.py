"""The broker plugin on real Apache Kafka: every push becomes one record with the contract's headers,
broker metrics arrive at their interval, and failures to write never hurt the broker or the clients.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kio.schema.errors import ErrorCode
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from kip714_dev.telemetry_probe import TelemetryProbe, TelemetrySubscriptionView
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from plugin_topic import (
    TopicRecord,
    broker_records,
    client_records,
    headers_complete,
    latest_broker_value,
    read_topic,
    subscription,
    wait_for,
)
from telemetry_helpers import run_java_client, run_librdkafka_clients

from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC, BrokerMetric, Header

COMPAT_KAFKA_VERSION = "3.9.2"
PAYLOAD_BASE_TIME_NS = 1_763_800_000_000_000_000


def _payload(counter: int) -> bytes:
    """A small, distinct OTLP MetricsData: a monotonic delta sum whose value is ``counter``."""
    point = m.NumberDataPoint(
        time_unix_nano=PAYLOAD_BASE_TIME_NS + counter,
        as_int=counter,
        attributes=[KeyValue(key="probe", value=AnyValue(string_value="yes"))],
    )
    metric = m.Metric(
        name="org.apache.kafka.probe.pushes",
        sum=m.Sum(
            data_points=[point],
            aggregation_temporality=m.AGGREGATION_TEMPORALITY_DELTA,
            is_monotonic=True,
        ),
    )
    data = m.MetricsData(
        resource_metrics=[m.ResourceMetrics(scope_metrics=[m.ScopeMetrics(metrics=[metric])])]
    )
    return data.SerializeToString()


def _subscribed(probe: TelemetryProbe, what: str = "the subscription") -> TelemetrySubscriptionView:
    """The probe's subscription once the broker gives it one (a new subscription takes a moment)."""
    return wait_for(lambda: (v := probe.get_subscription()).subscribed and v, 30, what)


@contextmanager
def _subscribed_probe(
    bootstrap: str, name: str, client_id: str, interval_ms: int = 200
) -> Iterator[tuple[TelemetryProbe, TelemetrySubscriptionView]]:
    """A probe client under a subscription of its own, yielded once the broker has given it one.

    The default interval is short: pushes a quarter of a second apart are not throttled.
    """
    with (
        subscription(bootstrap, name, f"client_id={client_id}", interval_ms=interval_ms),
        TelemetryProbe(bootstrap, client_id=client_id) as probe,
    ):
        yield probe, _subscribed(probe)


def _push_probes(bootstrap: str, client_id: str, count: int, interval_ms: int) -> tuple[str, list[bytes]]:
    """Push ``count`` distinct payloads as one client, respecting the interval; the last one terminates."""
    payloads = [_payload(index) for index in range(count)]
    with TelemetryProbe(bootstrap, client_id=client_id, software_name="kip714-probe") as probe:
        view = _subscribed(probe, f"a subscription to reach {client_id}")
        for index, payload in enumerate(payloads):
            time.sleep(interval_ms / 1000 * 1.2)
            terminating = index == count - 1
            assert probe.push(view.subscription_id, payload, terminating=terminating) is ErrorCode.none
    return view.client_instance_id, payloads


@pytest.fixture(scope="module")
def compat_cluster(kafka_cluster_factory: LocalKafkaClusterFactory) -> Iterator[LocalKafkaCluster]:
    cluster = kafka_cluster_factory.start(kafka_version=COMPAT_KAFKA_VERSION, name="compat-3.9")
    yield cluster
    cluster.stop()


@pytest.fixture(params=["pinned", "compat"])
def any_cluster(request: pytest.FixtureRequest, kafka_cluster: LocalKafkaCluster) -> LocalKafkaCluster:
    """The plugin must behave the same on the pinned 4.x and on the latest 3.9."""
    if request.param == "pinned":
        return kafka_cluster
    return request.getfixturevalue("compat_cluster")


def test_each_push_is_one_record_with_every_header(any_cluster: LocalKafkaCluster) -> None:
    assert any_cluster.plugin_loaded, "build the plugin first: make plugin"
    bootstrap = any_cluster.bootstrap_servers
    client_id = f"probe-one-record-{any_cluster.kafka_version}"
    with subscription(bootstrap, "plugin-test-one-record", f"client_id={client_id}", interval_ms=200):
        instance_id, payloads = _push_probes(bootstrap, client_id, count=3, interval_ms=200)

    records = read_topic(bootstrap, lambda rs: len(client_records(rs, client_id)) >= 3)
    mine = client_records(records, client_id)
    assert [r.value for r in mine] == payloads, (
        "values must be the pushed bytes, one record per push, in order"
    )
    for record in mine:
        assert headers_complete(record), sorted(record.headers)
        assert record.key == instance_id
        assert record.headers[Header.CLIENT_INSTANCE_ID] == instance_id
        assert record.headers[Header.TYPE] == "client"
        assert record.headers[Header.CLIENT_SOFTWARE_NAME] == "kip714-probe"
        assert record.headers[Header.CLIENT_SOFTWARE_VERSION] == "1.0"
        assert record.headers[Header.CLIENT_SOURCE_ADDRESS] == "127.0.0.1"
        assert int(record.headers[Header.CLIENT_SOURCE_PORT]) > 0
        assert record.headers[Header.PRINCIPAL] == "User:ANONYMOUS"
        assert record.headers[Header.LISTENER] == "PLAINTEXT"
        assert record.headers[Header.NODE_ID] == str(any_cluster.node_id)
        assert record.headers[Header.CLUSTER_ID]
        # No receiver API hands the plugin the request's subscription id (docs/broker-plugin.md).
        assert record.headers[Header.SUBSCRIPTION_ID] == ""
    assert [r.headers[Header.TERMINATING] for r in mine] == ["false", "false", "true"]
    if any_cluster.kafka_version.startswith("3."):
        assert mine[0].headers[Header.PUSH_INTERVAL_MS] == "", "3.x exporters do not receive the interval"
    else:
        assert mine[0].headers[Header.PUSH_INTERVAL_MS] == "200"


def test_librdkafka_clients_push_their_subscribed_metrics(kafka_cluster: LocalKafkaCluster) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    with subscription(
        bootstrap, "plugin-test-rdkafka", "client_id=plugin-rdk-.*", metrics=("org.apache.kafka.",)
    ):
        ids = run_librdkafka_clients(kafka_cluster.client_config(), "plugin-rdk", seconds=6)
    records = read_topic(
        bootstrap,
        lambda rs: all(client_records(rs, client_id) for client_id in ids.values()),
    )
    for role, client_id in ids.items():
        mine = client_records(records, client_id)
        names = set().union(*(r.metric_names() for r in mine))
        assert names, f"{role} pushed empty payloads"
        assert all(name.startswith(f"org.apache.kafka.{role}.") for name in names), names
        assert all(headers_complete(r) for r in mine)
        assert {r.headers[Header.CLIENT_SOFTWARE_NAME] for r in mine} == {"confluent-kafka-python"}
        assert len({r.key for r in mine}) == 1, "one client instance, one key"
    # Closing the client sends librdkafka's final push, flagged terminating.
    assert client_records(records, ids["producer"])[-1].headers[Header.TERMINATING] == "true"


def test_java_client_pushes_land(kafka_cluster: LocalKafkaCluster) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    client_id = "plugin-java-client"
    with subscription(
        bootstrap, "plugin-test-java", f"client_id={client_id}.*", metrics=("org.apache.kafka.",)
    ):
        run_java_client(bootstrap, client_id, seconds=6)
    records = read_topic(
        bootstrap, lambda rs: any(r.headers.get(Header.CLIENT_ID, "").startswith(client_id) for r in rs)
    )
    mine = [r for r in records if r.headers.get(Header.CLIENT_ID, "").startswith(client_id)]
    assert {r.headers[Header.CLIENT_SOFTWARE_NAME] for r in mine} == {"apache-kafka-java"}
    assert {r.headers[Header.CLIENT_SOFTWARE_VERSION] for r in mine} == {"4.4.0"}
    names = set().union(*(r.metric_names() for r in mine))
    assert any(name.startswith("org.apache.kafka.producer.") for name in names), sorted(names)[:10]
    assert all(headers_complete(r) for r in mine)


def test_sasl_principal_and_listener_are_in_the_headers(kafka_cluster: LocalKafkaCluster) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    client_id = "plugin-sasl-alice"
    with subscription(
        bootstrap, "plugin-test-sasl", f"client_id={client_id}", metrics=("org.apache.kafka.",)
    ):
        producer = Producer(kafka_cluster.client_config(sasl_user="alice", **{"client.id": client_id}))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            producer.produce("plugin-sasl-topic", b"hello")
            producer.poll(0.2)
        producer.flush(10)
        del producer
    records = read_topic(bootstrap, lambda rs: bool(client_records(rs, client_id)))
    mine = client_records(records, client_id)
    assert {r.headers[Header.PRINCIPAL] for r in mine} == {"User:alice"}
    assert {r.headers[Header.LISTENER] for r in mine} == {"SASL_PLAINTEXT"}


def test_broker_metrics_arrive_at_their_interval_and_count_a_throttled_push(
    kafka_cluster: LocalKafkaCluster,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    client_id = "plugin-throttled-probe"
    with _subscribed_probe(bootstrap, "plugin-test-throttle", client_id, interval_ms=60_000) as (probe, view):
        assert probe.push(view.subscription_id, _payload(1)) is ErrorCode.none
        # A second push long before the 60 s interval is what a misbehaving client does.
        assert probe.push(view.subscription_id, _payload(2)) is ErrorCode.throttling_quota_exceeded
        throttled_at_ms = int(time.time() * 1000)
        instance = view.client_instance_id
        records = read_topic(
            bootstrap,
            lambda rs: (
                len(broker_records(rs)) >= 2  # a fresh cluster may have written none before
                and any(
                    r.metric_total(BrokerMetric.THROTTLES, client_instance_id=instance) >= 1
                    for r in broker_records(rs, after_ms=throttled_at_ms)
                )
            ),
            timeout_s=45,
        )
    later = broker_records(records, after_ms=throttled_at_ms)
    assert any(r.metric_total(BrokerMetric.PLUGIN_EXPORTS, client_instance_id=instance) >= 1 for r in later)
    assert any(r.metric_total(BrokerMetric.INSTANCE_COUNT) >= 1 for r in later)
    # Only the accepted push reached the topic.
    assert [r.value for r in client_records(records, client_id)] == [_payload(1)]
    brokers = broker_records(records)
    assert all(r.key == f"broker-{kafka_cluster.node_id}" for r in brokers)
    assert all(
        str(metric) in r.metric_names()
        for r in brokers[-1:]
        for metric in (
            BrokerMetric.INSTANCE_COUNT,
            BrokerMetric.UNKNOWN_SUBSCRIPTION_REQUESTS,
            BrokerMetric.PLUGIN_DROPS,
        )
    )
    gaps_ms = [b.timestamp_ms - a.timestamp_ms for a, b in itertools.pairwise(brokers)]
    interval_ms = kafka_cluster.settings.broker_metrics_interval_ms
    assert gaps_ms, "need at least two broker-metric records"
    assert 0.5 * interval_ms <= statistics.median(gaps_ms) <= 2 * interval_ms, gaps_ms


def _set_max_message_bytes(bootstrap: str, topic: str, value: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("max.message.bytes", str(value), incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)


def _pushes_without_blocking(probe: TelemetryProbe, subscription_id: int, count: int) -> None:
    """Push ``count`` times: each is accepted and answered within a second, whatever the plugin's target.

    A blocking exporter would hold the request thread for the producer's max.block.ms (10 s).
    """
    durations = []
    for index in range(count):
        time.sleep(0.25)
        started = time.perf_counter()
        code = probe.push(subscription_id, _payload(index))
        durations.append(time.perf_counter() - started)
        assert code is ErrorCode.none, f"push {index} answered {code.name}: the plugin must drop, not fail"
    assert max(durations) < 1.0, durations


def test_unwritable_topic_drops_and_counts_without_failing_clients(
    kafka_cluster_factory: LocalKafkaClusterFactory,
) -> None:
    cluster = kafka_cluster_factory.start(
        name="plugin-unwritable",
        overrides={
            "kip714.producer.delivery.timeout.ms": "3000",
            "kip714.producer.request.timeout.ms": "1000",
        },
    )
    try:
        bootstrap = cluster.bootstrap_servers
        # Let the plugin create its topic, then make every record too large for it.
        read_topic(bootstrap, lambda rs: bool(broker_records(rs)), timeout_s=40)
        _set_max_message_bytes(bootstrap, DEFAULT_TELEMETRY_TOPIC, 64)
        client_id = "plugin-unwritable-probe"
        with _subscribed_probe(bootstrap, "plugin-test-unwritable", client_id) as (probe, view):
            _pushes_without_blocking(probe, view.subscription_id, count=5)
            time.sleep(4)  # past the delivery timeout, the failed records are counted as drops
            _set_max_message_bytes(bootstrap, DEFAULT_TELEMETRY_TOPIC, 1_048_588)
            after_ms = int(time.time() * 1000)
            records = read_topic(
                bootstrap,
                lambda rs: any(
                    r.metric_total(BrokerMetric.PLUGIN_DROPS) >= 5 for r in broker_records(rs, after_ms)
                ),
                timeout_s=45,
            )
            # The client keeps pushing and the broker never reported a plugin error.
            assert probe.push(view.subscription_id, _payload(99), terminating=True) is ErrorCode.none
            instance = view.client_instance_id
            assert latest_broker_value(records, BrokerMetric.PLUGIN_ERRORS, client_instance_id=instance) == 0
            assert latest_broker_value(records, BrokerMetric.PLUGIN_EXPORTS, client_instance_id=instance) >= 5
        records = read_topic(
            bootstrap, lambda rs: any(r.value == _payload(99) for r in client_records(rs, client_id))
        )
        assert not [r for r in client_records(records, client_id) if r.value != _payload(99)], (
            "records written while the topic was unwritable must have been dropped"
        )
    finally:
        cluster.stop()


def test_unreachable_target_drops_and_counts_and_clients_keep_pushing(
    kafka_cluster_factory: LocalKafkaClusterFactory,
) -> None:
    target = kafka_cluster_factory.start(name="plugin-target", with_plugin=False)
    source = kafka_cluster_factory.start(
        name="plugin-source",
        overrides={
            "kip714.bootstrap.servers": target.bootstrap_servers,
            "kip714.producer.delivery.timeout.ms": "3000",
            "kip714.producer.request.timeout.ms": "1000",
            "kip714.producer.reconnect.backoff.max.ms": "500",
            # Without this the sender waits up to 10 s for metadata and an outage that short loses
            # nothing (the bounded buffer holds the pushes); here every push must be dropped.
            "kip714.producer.max.block.ms": "500",
        },
    )
    try:
        read_topic(target.bootstrap_servers, lambda rs: bool(broker_records(rs)), timeout_s=40)
        target.stop()
        bootstrap = source.bootstrap_servers
        client_id = "plugin-unreachable-probe"
        with _subscribed_probe(bootstrap, "plugin-test-unreachable", client_id) as (probe, view):
            _pushes_without_blocking(probe, view.subscription_id, count=5)
            time.sleep(4)
            target.restart()
            after_ms = int(time.time() * 1000)
            instance = view.client_instance_id
            records: list[TopicRecord] = read_topic(
                target.bootstrap_servers,
                lambda rs: any(
                    r.metric_total(BrokerMetric.PLUGIN_DROPS) >= 5 for r in broker_records(rs, after_ms)
                ),
                timeout_s=60,
            )
            assert latest_broker_value(records, BrokerMetric.PLUGIN_EXPORTS, client_instance_id=instance) >= 5
            assert latest_broker_value(records, BrokerMetric.PLUGIN_ERRORS, client_instance_id=instance) == 0
            assert probe.push(view.subscription_id, _payload(7), terminating=True) is ErrorCode.none
        landed = read_topic(
            target.bootstrap_servers,
            lambda rs: any(r.value == _payload(7) for r in client_records(rs, client_id)),
        )
        assert [r.value for r in client_records(landed, client_id)] == [_payload(7)]
    finally:
        source.stop()
        target.stop()


def test_broker_records_split_by_client_instances_each_series_once(
    kafka_cluster_factory: LocalKafkaClusterFactory, tmp_path
) -> None:
    from telemetry_helpers import read_dir

    from airflow_provider_kip714.telemetry.landing import land_topic

    cluster = kafka_cluster_factory.start(
        name="plugin-split", overrides={"kip714.broker.metrics.instances.per.record": "1"}
    )
    bootstrap = cluster.bootstrap_servers
    with (
        subscription(bootstrap, "plugin-test-split", "client_id=plugin-split-.*", interval_ms=1000),
        TelemetryProbe(bootstrap, client_id="plugin-split-a") as first,
        TelemetryProbe(bootstrap, client_id="plugin-split-b") as second,
    ):
        instances = []
        for probe in (first, second):
            view = _subscribed(probe)
            assert probe.push(view.subscription_id, _payload(1)) is ErrorCode.none
            instances.append(view.client_instance_id)
        pushed_at_ms = int(time.time() * 1000)

        def both_reported(records: list) -> bool:
            later = broker_records(records, after_ms=pushed_at_ms)
            return all(
                any(r.metric_total(BrokerMetric.PLUGIN_EXPORTS, client_instance_id=i) >= 1 for r in later)
                for i in instances
            )

        records = read_topic(bootstrap, both_reported, timeout_s=60)
    by_interval: dict[int, list] = {}
    for record in broker_records(records, after_ms=pushed_at_ms):
        by_interval.setdefault(record.timestamp_ms, []).append(record)
    complete = [group for group in by_interval.values() if len(group) >= 2]  # one per instance
    assert complete, {ts: len(group) for ts, group in by_interval.items()}
    for group in complete:  # broker-wide series in the first record only; each instance in one record
        assert sum(BrokerMetric.INSTANCE_COUNT in r.metric_names() for r in group) == 1
        for instance in instances:
            holders = [
                r for r in group if r.metric_total(BrokerMetric.PLUGIN_EXPORTS, client_instance_id=instance)
            ]
            assert len(holders) == 1, instance
    # The split records land like any other broker record.
    result = land_topic({"bootstrap.servers": bootstrap}, DEFAULT_TELEMETRY_TOPIC, tmp_path / "zone")
    assert result.quarantined == 0
    landed = read_dir(tmp_path / "zone" / "datapoints").to_pylist()
    exports = {
        row["attributes"][0][1]
        for row in landed
        if row["record_type"] == "broker" and row["metric_name"] == str(BrokerMetric.PLUGIN_EXPORTS)
    }
    assert set(instances) <= exports
