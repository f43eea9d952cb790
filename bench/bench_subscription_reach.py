"""How long a new window takes to reach an idle librdkafka client, with and without a standing subscription.

A client that matches no subscription is told "no metrics, ask again in 300000 ms"; a window opened
meanwhile reaches it only at that next ask. A standing "no metrics, short interval" subscription on
the same clients makes them ask every ``--standing-interval-ms``. Both scenarios run on one real local
Kafka (with the KIP-714 plugin) in the same run; each prints the time from creating the window to the
client's first pushed record in ``_client_telemetry``. Ratio = without / with.
"""

from __future__ import annotations

import argparse
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from kip714_dev.signals import exit_on_sigterm

from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription


def first_push_after(
    cluster: LocalKafkaCluster, client_id: str, cap_s: float, start_reading: Consumer
) -> float | None:
    """Seconds until a record from ``client_id`` appears, or None when ``cap_s`` passed."""
    started = time.monotonic()
    while time.monotonic() - started < cap_s:
        message = start_reading.poll(0.2)
        if message is None or message.error():
            continue
        headers = {key: (value or b"").decode() for key, value in message.headers() or []}
        if headers.get(Header.CLIENT_ID) == client_id:
            return time.monotonic() - started
    return None


def tail_consumer(cluster: LocalKafkaCluster) -> Consumer:
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"bench-{uuid.uuid4().hex[:6]}",
         "enable.auto.commit": False, "enable.metrics.push": False}
    )  # fmt: skip
    topic = cluster.telemetry_topic
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    assigned = []
    for partition in partitions:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        assigned.append(TopicPartition(topic, partition, high))
    consumer.assign(assigned)
    return consumer


def measure(
    cluster: LocalKafkaCluster,
    admin: ClientMetricsAdmin,
    standing_interval_ms: int | None,
    idle_s: float,
    cap_s: float,
) -> float | None:
    client_id = f"reach-{uuid.uuid4().hex[:8]}"
    names = []
    if standing_interval_ms is not None:
        standing = f"standing-{client_id}"
        admin.upsert(Subscription.from_spec(standing, block=True, interval_ms=standing_interval_ms,
                                            match=f"client_id={client_id}"))  # fmt: skip
        names.append(standing)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id})
    consumer = tail_consumer(cluster)
    try:
        producer.list_topics(timeout=10)
        time.sleep(idle_s)  # the client has asked once and is now idle
        window = f"window-{client_id}"
        admin.upsert(Subscription.from_spec(window, metrics="org.apache.kafka.producer.", interval_ms=1000,
                                            match=f"client_id={client_id}"))  # fmt: skip
        names.append(window)
        return first_push_after(cluster, client_id, cap_s, consumer)
    finally:
        consumer.close()
        producer.flush(5)
        for name in names:
            admin.delete(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--standing-interval-ms", type=int, default=1000)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--cap-seconds", type=float, default=330.0)
    args = parser.parse_args()

    with LocalKafkaClusterFactory() as factory:
        cluster = factory.start(name="bench-reach")
        if not cluster.plugin_loaded:
            raise SystemExit("the KIP-714 broker plugin jar is not built; run make install")
        with ClientMetricsAdmin(to_kafka_python_kwargs(cluster.client_config())) as admin:
            with_standing = measure(
                cluster, admin, args.standing_interval_ms, args.idle_seconds, args.cap_seconds
            )
            without = measure(cluster, admin, None, args.idle_seconds, args.cap_seconds)

    def shown(value: float | None) -> str:
        return f"{value:.1f} s" if value is not None else f"> {args.cap_seconds:.0f} s (cap)"

    print(f"idle producer, window opened {args.idle_seconds:.0f} s after it connected")
    standing = f"standing 'no metrics, {args.standing_interval_ms} ms' subscription"
    print(f"  with {standing}: first push after {shown(with_standing)}")
    print(f"  without (baseline, default re-ask 300000 ms): first push after {shown(without)}")
    if with_standing and without:
        print(f"  ratio without/with: {without / with_standing:.1f}x")


if __name__ == "__main__":
    exit_on_sigterm()  # a kill still stops the local brokers this script started
    main()
