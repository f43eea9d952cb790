"""Landing benchmark: records/s topic -> Parquet landing zone against the floor loop, same run.

All loops read the same records from the same local broker. The floor assigns every partition from
the beginning and reads every field landing keeps of a record (topic, partition, offset, timestamp,
key, headers, value) and nothing else: the least any landing on confluent-kafka's Python API does,
since the topic contract puts a record's labels in 14 headers. The product is ``land_topic`` (decode
to datapoints, raw + datapoints Parquet, fsync unless --no-fsync, atomic commits), default settings:
its native topic reader unless ``--reader python`` (confluent-kafka's consumer, landing's fallback);
the target is product/floor >= 0.7 on wall clock. ``--rounds N`` runs N floor-then-landing pairs, so
each ratio compares two neighbouring runs on a shared machine. The bare loop that reads values only
(the baseline) is printed once, for reference.
Starts its own local Kafka (``kip714 local-kafka``'s cluster factory) unless --bootstrap-server is given.

``--writers hand,crate`` lands each round once per writer (the hand-written Parquet writer and the
arrow-rs ``parquet`` crate prototype, an extension built with ``bench_native_writer.py --build``), in
alternating order after the round's floor, and prints each writer's medians at the end.

Also prints the CPU seconds each side used (this process's threads; for landing also the consuming
thread alone): on a shared machine the wall-clock ratio partly measures how much CPU the other
tenants left, the CPU figures say what the work costs.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

from bench_native_writer import use as use_writer
from otlp_payloads import client_headers, producer_like_payload

from airflow_provider_kip714.native_switches import READER_ENV
from airflow_provider_kip714.telemetry.landing import land_topic
from airflow_provider_kip714.telemetry.landing_fetch import CONSUME_BATCH, NATIVE_CONSUME_BATCH


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
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int,
    *,
    read_everything: bool = False,
    batch: int = CONSUME_BATCH,
) -> tuple[float, float]:
    """The bare consume loop (each message's value only); returns (wall seconds, CPU seconds).

    ``read_everything`` makes it the floor: it also reads every other field landing keeps of a
    record (topic, partition, offset, timestamp, key, headers), and nothing more. That is the least
    any landing built on confluent-kafka's Python API has to do per record, since the topic contract
    puts a record's labels in its headers. ``batch`` messages per consume() call, landing's own by
    default: the CPU per record depends on it (about 3x between 100 and 2,000 on this machine).
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
        for message in consumer.consume(num_messages=batch, timeout=1.0):
            if message.error() is None:
                size += len(message.value())
                seen += 1
                if read_everything:
                    message.topic()
                    message.partition()
                    message.offset()
                    message.timestamp()
                    message.key()
                    message.headers()
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds() - cpu_started
    consumer.close()
    return elapsed, cpu


def land(bootstrap: str, topic: str, workers: int | None, fsync: bool) -> dict[str, float]:
    """One ``land_topic`` run into a fresh zone: wall and CPU seconds (all threads, consuming thread)."""
    with tempfile.TemporaryDirectory(prefix="kip714-bench-zone-") as out:
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        cpu_started = cpu_seconds()
        thread_started = time.thread_time()  # land_topic consumes on the calling thread
        result = land_topic(
            {"bootstrap.servers": bootstrap, "enable.metrics.push": False},
            topic,
            out,
            workers=workers,
            fsync=fsync,
        )
        return {
            "wall": time.perf_counter() - started,
            "thread_cpu": time.thread_time() - thread_started,
            "cpu": cpu_seconds() - cpu_started,
            "records": result.records,
            "points": result.points,
            "load_before": load_before,
            "load_after": os.getloadavg()[0],
        }


def print_round(
    number: int, records: int, baseline_s: float, floor: tuple[float, float], landing: dict, writer: str = ""
) -> None:
    floor_s, floor_cpu = floor
    wall = landing["wall"]
    print(f"round {number}" + (f", writer {writer}" if writer else ""))
    print(
        f"  floor   consume + every kept field : {records / floor_s:10,.0f} records/s, CPU {floor_cpu:.2f} s"
        f" ({baseline_s / floor_s:.2f}x the baseline's rate)"
    )
    print(
        f"  product land_topic -> Parquet      : {records / wall:10,.0f} records/s, "
        f"{landing['points'] / wall:,.0f} points/s"
    )
    print(
        f"          CPU {landing['cpu']:.2f} s all threads, "
        f"{landing['thread_cpu']:.2f} s on the consuming thread"
    )
    print(f"  ratio product/floor (wall clock)   : {floor_s / wall:.2f}  (target >= 0.70)")
    print(f"  ratio product/baseline             : {baseline_s / wall:.2f}")
    print(
        f"  load average (1 min) around landing: {landing['load_before']:.2f} -> "
        f"{landing['load_after']:.2f} on {os.cpu_count()} CPUs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-server")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--points-per-record", type=int, default=10)
    parser.add_argument("--workers", type=int, help="landing staging threads (default: up to 2)")
    parser.add_argument("--no-fsync", action="store_true", help="land without fsync (default: fsync on)")
    parser.add_argument("--rounds", type=int, default=1, help="floor-then-landing pairs on the same topic")
    parser.add_argument(
        "--reader",
        choices=("native", "python"),
        default="native",
        help="landing's topic reader (default: native, the product's default)",
    )
    parser.add_argument(
        "--floor-batch",
        type=int,
        default=CONSUME_BATCH,
        help=f"messages per consume() call, floor and baseline loops (default: {CONSUME_BATCH})",
    )
    parser.add_argument(
        "--writers",
        default="",
        help="comma-separated native writers to land with in each round, alternating: hand, crate",
    )
    args = parser.parse_args()
    if not (
        1 <= args.records <= 10_000_000
        and 1 <= args.partitions <= 64
        and 1 <= args.points_per_record <= 1000
        and 1 <= args.rounds <= 100
        and 1 <= args.floor_batch <= 100_000
        and (args.workers is None or 1 <= args.workers <= 64)
    ):
        parser.error(
            "--records 1..10000000, --partitions 1..64, --points-per-record 1..1000, --rounds 1..100, "
            "--floor-batch 1..100000, --workers 1..64"
        )
    writers = [w for w in args.writers.split(",") if w]
    if any(w not in ("hand", "crate") for w in writers):
        parser.error("--writers: hand and/or crate")
    os.environ[READER_ENV] = args.reader
    landing_batch = NATIVE_CONSUME_BATCH if args.reader == "native" else CONSUME_BATCH
    logging.basicConfig(level=logging.WARNING)
    records = args.records

    with broker(args.bootstrap_server) as bootstrap:
        topic = fill_topic(bootstrap, records, args.partitions, args.points_per_record)
        warm = min(records, 20_000)
        baseline_consume(bootstrap, topic, warm, args.partitions, batch=args.floor_batch)  # page cache
        baseline_s, baseline_cpu = baseline_consume(
            bootstrap, topic, records, args.partitions, batch=args.floor_batch
        )
        print(
            f"records={records} partitions={args.partitions} points/record={args.points_per_record} "
            f"fsync={'off' if args.no_fsync else 'on'} staging threads={args.workers or 'default (2)'} "
            f"landing reader: {args.reader} ({landing_batch} messages per call); "
            f"floor and baseline: {args.floor_batch} per consume()"
        )
        print(
            f"baseline  bare consume, value only : {records / baseline_s:10,.0f} records/s, "
            f"CPU {baseline_cpu:.2f} s"
        )
        by_writer: dict[str, list[tuple[float, float]]] = {w: [] for w in writers or [""]}
        for number in range(1, args.rounds + 1):
            floor = baseline_consume(
                bootstrap, topic, records, args.partitions, read_everything=True, batch=args.floor_batch
            )
            for writer in (writers if number % 2 else writers[::-1]) or [""]:
                if writer:
                    use_writer(writer)
                landing = land(bootstrap, topic, args.workers, not args.no_fsync)
                assert landing["records"] == records, landing
                print_round(number, records, baseline_s, floor, landing, writer)
                by_writer[writer].append((floor[0] / landing["wall"], landing["cpu"]))
        for writer, runs in by_writer.items():
            print(
                f"median{f', writer {writer}' if writer else ''}: ratio product/floor "
                f"{statistics.median(r for r, _ in runs):.2f} (target >= 0.70), landing CPU "
                f"{statistics.median(c for _, c in runs):.2f} s all threads ({len(runs)} rounds)"
            )


if __name__ == "__main__":
    from kip714_dev.signals import exit_on_sigterm

    exit_on_sigterm()  # a kill still stops the local brokers this script started
    main()
