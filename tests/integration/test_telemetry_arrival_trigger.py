"""The arrival trigger against the real broker: serialization, matching rules, events, cleanup."""

from __future__ import annotations

import asyncio
import importlib
import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from dag_test_env import use_kafka_connection
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from telemetry_helpers import client_headers, create_topic, produce_records, producer_like_payload

from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.triggers.telemetry_arrival import ClientTelemetryArrivalTrigger

pytestmark = pytest.mark.integration


def headers_for(client_id: str, instance_id: str, software: str) -> list[tuple[str, bytes]]:
    return client_headers(
        instance_id=instance_id, client_id=client_id, **{Header.CLIENT_SOFTWARE_NAME: software}
    )


async def first_event(trigger: ClientTelemetryArrivalTrigger) -> dict:
    generator = trigger.run()
    try:
        event = await generator.__anext__()
    finally:
        await generator.aclose()
    return event.payload


def connected_topic(
    kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch, name: str, partitions: int
) -> tuple[dict[str, Any], str, str]:
    """The set-up of every test that watches a topic through a connection: the cluster's client
    config, an Airflow connection ``kafka_<name>_test`` to it, and a fresh topic ``<name>-...``."""
    config = kafka_cluster.client_config()
    conn_id = use_kafka_connection(monkeypatch, f"kafka_{name}_test", config)
    return config, conn_id, create_topic(config, partitions=partitions, prefix=name)


def test_trigger_round_trips_and_refuses_bad_selectors() -> None:
    trigger = ClientTelemetryArrivalTrigger(
        match=["client_id=orders-.*"], since_ms=1, deadline_ms=2, topic="t", min_clients=2
    )
    classpath, kwargs = trigger.serialize()
    module_name, _, class_name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module_name), class_name)(**json.loads(json.dumps(kwargs)))
    assert rebuilt.serialize() == (classpath, kwargs)
    with pytest.raises(SubscriptionValidationError, match="unknown selector"):
        ClientTelemetryArrivalTrigger(match=["client_name=x"], since_ms=1, deadline_ms=2)


def test_trigger_reports_matching_clients_only_and_closes_its_consumer(
    kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, conn_id, topic = connected_topic(kafka_cluster, monkeypatch, "arrival", partitions=2)
    prefix = uuid.uuid4().hex[:6]
    payload = producer_like_payload(2)
    produce_records(
        config, topic, [(0, payload, headers_for(f"{prefix}-old", "AAAAAAAAAAAAAAAAAAAAAQ", "java"))]
    )
    time.sleep(1.1)
    since = datetime.now(UTC)
    produce_records(
        config,
        topic,
        [
            (0, payload, headers_for(f"{prefix}-orders-1", "AAAAAAAAAAAAAAAAAAAAAg", "apache-kafka-java")),
            (
                1,
                payload,
                headers_for(f"{prefix}-orders-2", "AAAAAAAAAAAAAAAAAAAAAw", "confluent-kafka-python"),
            ),
            (1, payload, headers_for(f"x{prefix}-orders-3", "AAAAAAAAAAAAAAAAAAAABA", "apache-kafka-java")),
            (0, payload, headers_for(f"{prefix}-orders-1", "AAAAAAAAAAAAAAAAAAAAAg", "apache-kafka-java")),
        ],
    )
    common = {
        "since_ms": int(since.timestamp() * 1000),
        "kafka_config_id": conn_id,
        "topic": topic,
        "poll_interval": 0.5,
    }
    arrived = ClientTelemetryArrivalTrigger(
        match=[f"client_id={prefix}-orders-.*"],
        deadline_ms=int((time.time() + 60) * 1000),
        min_clients=2,
        **common,
    )
    event = asyncio.run(first_event(arrived))
    assert event["status"] == "arrived"
    assert sorted(c["client_id"] for c in event["clients"]) == [f"{prefix}-orders-1", f"{prefix}-orders-2"]
    assert {c["client_software_name"] for c in event["clients"]} == {
        "apache-kafka-java",
        "confluent-kafka-python",
    }
    assert arrived._consumer is None  # closed by cleanup

    two_selectors = ClientTelemetryArrivalTrigger(
        match=[f"client_id={prefix}-orders-.*", "client_software_name=apache-kafka-java"],
        deadline_ms=int((time.time() + 60) * 1000),
        **common,
    )
    event = asyncio.run(first_event(two_selectors))
    assert [c["client_id"] for c in event["clients"]] == [f"{prefix}-orders-1"]

    nobody = ClientTelemetryArrivalTrigger(
        match=[f"client_id={prefix}-old"], deadline_ms=int((time.time() + 3) * 1000), **common
    )
    event = asyncio.run(first_event(nobody))
    assert event["status"] == "timeout" and event["clients"] == []
    assert nobody._consumer is None


def test_sensor_poke_mode_scans_from_since(
    kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_kip714.sensors.telemetry_arrival import ClientTelemetryArrivalSensor

    config, conn_id, topic = connected_topic(kafka_cluster, monkeypatch, "poke", partitions=1)
    prefix = uuid.uuid4().hex[:6]
    since = datetime.now(UTC)
    produce_records(
        config,
        topic,
        [(0, producer_like_payload(1), headers_for(f"{prefix}-a", "AAAAAAAAAAAAAAAAAAAABQ", "librdkafka"))],
    )

    def sensor(selectors: dict[str, str]) -> ClientTelemetryArrivalSensor:
        return ClientTelemetryArrivalSensor(
            task_id=f"poke_{uuid.uuid4().hex[:6]}",
            match=selectors,
            since=since.isoformat(),
            kafka_config_id=conn_id,
            topic=topic,
            deferrable=False,
            poke_interval=1,
        )

    found = sensor({"client_id": f"{prefix}-.*", "client_software_name": "librdkafka"}).poke({})
    assert found.is_done
    assert [client["client_id"] for client in found.xcom_value["clients"]] == [f"{prefix}-a"]
    assert not sensor({"client_id": f"{prefix}-b"}).poke({}).is_done


def test_catastrophic_regex_does_not_stall_the_event_loop(
    kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``(a+)+$`` against 28 a's and a '!' backtracks ~2**28 steps in Python's re (seconds per record);
    RE2 matches in linear time, so the loop the triggerer shares with every trigger keeps ticking."""
    config, conn_id, topic = connected_topic(kafka_cluster, monkeypatch, "redos", partitions=1)
    hostile = "a" * 28 + "!"
    produce_records(
        config,
        topic,
        [(0, producer_like_payload(1), headers_for(hostile, "AAAAAAAAAAAAAAAAAAAABg", "x"))] * 3,
    )
    trigger = ClientTelemetryArrivalTrigger(
        match=["client_id=(a+)+$"],
        since_ms=0,
        deadline_ms=int((time.time() + 4) * 1000),
        kafka_config_id=conn_id,
        topic=topic,
        poll_interval=0.5,
    )

    async def watch_the_loop() -> tuple[dict, float]:
        gaps: list[float] = []
        event_task = asyncio.ensure_future(first_event(trigger))
        last = time.monotonic()
        while not event_task.done():
            await asyncio.sleep(0.05)
            now = time.monotonic()
            gaps.append(now - last)
            last = now
        return event_task.result(), max(gaps)

    event, worst_gap = asyncio.run(watch_the_loop())
    assert event["status"] == "timeout" and event["clients"] == []
    assert worst_gap < 1.0, f"the event loop stalled for {worst_gap:.1f} s"


def test_selector_regexes_match_whole_values_and_refuse_what_re2_cannot_run() -> None:
    from airflow_provider_kip714.exceptions import Kip714Error
    from airflow_provider_kip714.triggers.telemetry_arrival import ArrivalWatch

    # Java's \w is ASCII unless UNICODE_CHARACTER_CLASS is set, and so is RE2's (Python re: Unicode).
    watch = ArrivalWatch(["client_id=orders-\\w+"], since_ms=0)
    for client_id, seen in (
        ("orders-ab_1", True),
        ("orders-été", False),
        ("xorders-a", False),
        ("orders-ab-", False),
    ):
        headers = [(key, value) for key, value in headers_for(client_id, f"id-{client_id}", "x")]
        watch.observe_record(headers, 1)
        assert (f"id-{client_id}" in watch.seen) is seen, client_id
    with pytest.raises(Kip714Error, match="linear-time matcher"):
        ClientTelemetryArrivalTrigger(match=["client_id=(a)\\1"], since_ms=1, deadline_ms=2)


def test_cancelling_mid_consume_closes_the_consumer_on_its_thread_after_consume_returns(
    kafka_cluster: LocalKafkaCluster,
) -> None:
    import threading

    from confluent_kafka import Consumer

    from airflow_provider_kip714.telemetry import topic_consumer

    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=1, prefix="cancel")
    probe = topic_consumer.open_consumer(config)
    deadline = time.monotonic() + 30
    while topic not in probe.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.2)  # a topic just created reaches the metadata a moment later
    probe.close()
    events: list[tuple[str, int]] = []

    class RecordingConsumer(Consumer):
        def consume(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            events.append(("consume", threading.get_ident()))
            try:
                return super().consume(*args, **kwargs)
            finally:
                events.append(("consume returned", threading.get_ident()))

        def close(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            events.append(("close", threading.get_ident()))
            return super().close(*args, **kwargs)

    class Instrumented(ClientTelemetryArrivalTrigger):
        def _open(self) -> Consumer:
            consumer = RecordingConsumer(topic_consumer.consumer_config(config))
            topic_consumer.assign_from(consumer, topic, "earliest", 10.0)
            return consumer

    trigger = Instrumented(
        match=[], since_ms=0, deadline_ms=int((time.time() + 60) * 1000), topic=topic, poll_interval=3.0
    )

    async def cancel_mid_consume() -> None:
        task = asyncio.ensure_future(first_event(trigger))
        deadline = time.monotonic() + 30
        while not events and not task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert events and not task.done(), task.result() if task.done() else "no consume within 30 s"
        await asyncio.sleep(0.5)  # inside the 3 s consume now
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_mid_consume())
    assert [name for name, _ in events] == ["consume", "consume returned", "close"]
    assert len({thread for _, thread in events}) == 1
    assert trigger._consumer is None
