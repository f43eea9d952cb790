"""Landing benchmark: records/s topic -> Parquet landing zone vs a bare confluent-kafka consume loop.

Both read the same records from the same local broker in the same run. The baseline assigns every
partition from the beginning and only touches each message's value; the product is ``land_topic``
(decode to datapoints, raw + datapoints Parquet, fsync, atomic commits), default settings. A third
loop reads every field landing keeps (headers included) and nothing else: the floor for any landing
on confluent-kafka's Python API, printed with its own ratios.
Starts its own local Kafka (``kip714 local-kafka``'s cluster factory) unless --bootstrap-server is given.

Also prints the CPU seconds each side used (this process's threads) and records per CPU second:
on a shared machine the wall-clock ratio mostly measures how much CPU the other tenants left, the
CPU figures say what the work costs.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

from otlp_payloads import client_headers, producer_like_payload

from airflow_provider_kip714.telemetry.landing import land_topic


@contextlib.contextmanager
def broker(bootstrap: str | None) -> Iterator[str]:
    if bootstrap:
        yield bootstrap
        return
    from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory

    with tempfile.TemporaryDirectory(prefix="kip714-bench-") as work:
        factory = LocalKafkaClusterFactory(Path(work))
        try:
            yield factory.start(name="bench").bootstrap_servers
        finally:
            factory.stop_all()


def fill_topic(bootstrap: str, records: int, partitions: int, points: int) -> str:
    topic = f"bench-telemetry-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "enable.metrics.push": False,
            "compression.type": "lz4",
        }
    )
    headers = client_headers()
    payloads = [producer_like_payload(points, seed=seed) for seed in range(64)]
    for index in range(records):
        while True:
            try:
                producer.produce(
                    topic, value=payloads[index % 64], key=b"client-%02d" % (index % 64), headers=headers
                )
                break
            except BufferError:
                producer.poll(0.1)
        if index % 5000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    return topic


def cpu_seconds() -> float:
    """CPU time of this process, all threads (landing's staging threads included; not the broker)."""
    return time.process_time()


def baseline_consume(
    bootstrap: str, topic: str, records: int, partitions: int, *, read_everything: bool = False
) -> tuple[float, float]:
    """The bare consume loop (the issue's baseline: each message's value only).

    ``read_everything`` also reads what landing must keep of every record (headers, key, offset,
    partition, timestamp), and nothing more: the floor of any landing built on confluent-kafka's
    Python API, since the topic contract puts a record's labels in its headers.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "enable.metrics.push": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    started = time.perf_counter()
    cpu_started = cpu_seconds()
    seen = 0
    size = 0
    while seen < records:
        for message in consumer.consume(num_messages=2000, timeout=1.0):
            if message.error() is None:
                size += len(message.value())
                seen += 1
                if read_everything:
                    message.headers()
                    message.key()
                    message.offset()
                    message.partition()
                    message.timestamp()
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_started
    consumer.close()
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-server")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--points-per-record", type=int, default=10)
    parser.add_argument("--workers", type=int, help="landing staging threads (default: up to 2)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    with broker(args.bootstrap_server) as bootstrap:
        topic = fill_topic(bootstrap, args.records, args.partitions, args.points_per_record)
        baseline_consume(bootstrap, topic, min(args.records, 20_000), args.partitions)  # warm the page cache
        baseline_s, baseline_cpu = baseline_consume(bootstrap, topic, args.records, args.partitions)
        floor_s, _ = baseline_consume(bootstrap, topic, args.records, args.partitions, read_everything=True)
        load_before = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="kip714-bench-zone-") as out:
            started = time.perf_counter()
            cpu_started = cpu_seconds()
            result = land_topic(
                {"bootstrap.servers": bootstrap, "enable.metrics.push": False},
                topic,
                out,
                workers=args.workers,
            )
            landing_s = time.perf_counter() - started
            landing_cpu = cpu_seconds() - cpu_started
        load_after = os.getloadavg()[0]
        assert result.records == args.records, result.as_dict()

    baseline_rate = args.records / baseline_s
    landing_rate = args.records / landing_s
    print(
        f"records={args.records} partitions={args.partitions} points/record={args.points_per_record} "
        f"datapoints={result.points}"
    )
    floor_rate = args.records / floor_s
    print(f"baseline  bare confluent-kafka consume : {baseline_rate:12,.0f} records/s")
    print(
        f"floor     consume + headers/key/offset : {floor_rate:12,.0f} records/s  (ratio to baseline "
        f"{floor_rate / baseline_rate:.2f}: the most any confluent-kafka landing can reach)"
    )
    points_rate = result.points / landing_s
    print(f"product   land_topic -> Parquet        : {landing_rate:12,.0f} records/s")
    print(f"          (datapoints written)         : {points_rate:12,.0f} points/s")
    print(f"ratio (product/baseline)               : {landing_rate / baseline_rate:.2f}  (target >= 0.70)")
    print(f"ratio (product/floor)                  : {landing_rate / floor_rate:.2f}")
    print(
        f"CPU seconds: baseline {baseline_cpu:.2f}, landing {landing_cpu:.2f} (all threads); "
        f"records per CPU second: baseline {args.records / baseline_cpu:,.0f}, "
        f"landing {args.records / landing_cpu:,.0f}"
    )
    print(
        f"load average (1 min) around the landing run: {load_before:.2f} -> {load_after:.2f} "
        f"on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
