"""Helpers shared by the telemetry integration tests: topics, producing kip714 records, reading zones."""

from __future__ import annotations

import sys
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from otlp_payloads import T0_NS, client_headers, every_kind_payload, producer_like_payload

__all__ = ["T0_NS", "client_headers", "every_kind_payload", "producer_like_payload"]  # re-exported for tests


def create_topic(config: dict[str, Any], partitions: int, prefix: str = "telemetry") -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(config)
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    futures[topic].result(30)
    return topic


def produce_records(
    config: dict[str, Any],
    topic: str,
    records: list[tuple[int, bytes | None, list[tuple[str, bytes]] | None]],
    *,
    timestamp_ms: int = 0,
) -> None:
    """Produce (partition, value, headers) records, stamped ``timestamp_ms`` if given (0: now); waits
    for every delivery."""
    producer = Producer({**config, "enable.metrics.push": False, "linger.ms": 20})
    failures: list[str] = []

    def on_delivery(err, _msg) -> None:
        if err is not None:
            failures.append(str(err))

    for index, (partition, value, headers) in enumerate(records):
        producer.produce(
            topic,
            value=value,
            key=f"key-{index}".encode(),
            headers=headers,
            partition=partition,
            timestamp=timestamp_ms,
            on_delivery=on_delivery,
        )
        if index % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0, "records left undelivered"
    assert not failures, failures[:3]


def good_records(
    count: int, partitions: int, points: int = 6
) -> list[tuple[int, bytes, list[tuple[str, bytes]]]]:
    headers = client_headers()
    return [
        (index % partitions, producer_like_payload(points, seed=index), headers) for index in range(count)
    ]


def read_dir(directory: Path) -> Any:
    files = sorted(path for path in directory.rglob("*.parquet") if not path.name.startswith("."))
    tables = [pq.read_table(path) for path in files]
    if not tables:
        return None
    import pyarrow as pa

    return pa.concat_tables(tables)


def offsets_by_partition(table: Any) -> dict[int, list[int]]:
    result: dict[int, list[int]] = {}
    for partition, offset in zip(
        table.column("partition").to_pylist(), table.column("offset").to_pylist(), strict=True
    ):
        result.setdefault(partition, []).append(offset)
    return {partition: sorted(offsets) for partition, offsets in result.items()}


def points_per_offset(table: Any) -> Counter[tuple[int, int]]:
    return Counter(
        zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(), strict=True)
    )


REPO_ROOT = Path(__file__).resolve().parents[2]
JAVA_CLIENT_JAR = REPO_ROOT / "tests" / "java_client" / "target" / "kip714-java-client.jar"


def run_librdkafka_clients(
    config: dict[str, Any], client_prefix: str, seconds: float, stop: threading.Event | None = None
) -> dict[str, str]:
    """Run a real librdkafka producer and consumer (metrics push on) for ``seconds`` (or until ``stop``
    is set, when given), then close them.

    Returns role -> client.id. Closing sends librdkafka's final (terminating) push.
    """
    import time

    from confluent_kafka import Consumer

    topic = create_topic(config, partitions=1, prefix="traffic")
    producer_id, consumer_id = f"{client_prefix}-producer", f"{client_prefix}-consumer"
    producer = Producer({**config, "client.id": producer_id, "linger.ms": 5})
    consumer = Consumer(
        {
            **config,
            "client.id": consumer_id,
            "group.id": f"{client_prefix}-group",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + seconds
    sent = 0
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        producer.produce(topic, value=f"message-{sent}".encode())
        sent += 1
        producer.poll(0)
        consumer.poll(0.1)
    producer.flush(30)
    consumer.close()
    producer.flush(5)
    del producer  # destroying the handle sends the terminating push
    return {"producer": producer_id, "consumer": consumer_id}


def run_java_client(bootstrap: str, client_id: str, seconds: float) -> list[dict[str, Any]]:
    """Run the Java client harness (producer and consumer); returns its JSON lines."""
    import json
    import subprocess

    completed = subprocess.run(
        [
            "java",
            "-cp",
            str(JAVA_CLIENT_JAR),
            "io.kip714.javaclient.TelemetryClient",
            "--bootstrap-server",
            bootstrap,
            "--client-id",
            client_id,
            "--seconds",
            str(seconds),
            "--mode",
            "both",
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return [json.loads(line) for line in completed.stdout.splitlines() if line.startswith("{")]
