"""The arrival trigger against the real broker: serialization, matching rules, events, cleanup."""

from __future__ import annotations

import asyncio
import importlib
import json
import time
import uuid
from datetime import UTC, datetime

import pytest
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


def test_trigger_round_trips_and_refuses_bad_selectors() -> None:
    trigger = ClientTelemetryArrivalTrigger(
        selectors=["client_id=orders-.*"], since_ms=1, deadline_ms=2, topic="t", min_clients=2
    )
    classpath, kwargs = trigger.serialize()
    module_name, _, class_name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module_name), class_name)(**json.loads(json.dumps(kwargs)))
    assert rebuilt.serialize() == (classpath, kwargs)
    with pytest.raises(SubscriptionValidationError, match="unknown selector"):
        ClientTelemetryArrivalTrigger(selectors=["client_name=x"], since_ms=1, deadline_ms=2)


def test_trigger_reports_matching_clients_only_and_closes_its_consumer(
    kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = kafka_cluster.client_config()
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_TRIGGER_TEST", json.dumps({"conn_type": "kafka", "extra": config}))
    topic = create_topic(config, partitions=2, prefix="arrival")
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
        "kafka_config_id": "kafka_trigger_test",
        "topic": topic,
        "poll_interval": 0.5,
    }
    arrived = ClientTelemetryArrivalTrigger(
        selectors=[f"client_id={prefix}-orders-.*"],
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
        selectors=[f"client_id={prefix}-orders-.*", "client_software_name=apache-kafka-java"],
        deadline_ms=int((time.time() + 60) * 1000),
        **common,
    )
    event = asyncio.run(first_event(two_selectors))
    assert [c["client_id"] for c in event["clients"]] == [f"{prefix}-orders-1"]

    nobody = ClientTelemetryArrivalTrigger(
        selectors=[f"client_id={prefix}-old"], deadline_ms=int((time.time() + 3) * 1000), **common
    )
    event = asyncio.run(first_event(nobody))
    assert event["status"] == "timeout" and event["clients"] == []
    assert nobody._consumer is None


def test_sensor_poke_mode_scans_from_since(
    kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_kip714.sensors.telemetry_arrival import ClientTelemetryArrivalSensor

    config = kafka_cluster.client_config()
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_POKE_TEST", json.dumps({"conn_type": "kafka", "extra": config}))
    topic = create_topic(config, partitions=1, prefix="poke")
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
            selectors=selectors,
            since=since.isoformat(),
            kafka_config_id="kafka_poke_test",
            topic=topic,
            deferrable=False,
            poke_interval=1,
        )

    found = sensor({"client_id": f"{prefix}-.*", "client_software_name": "librdkafka"}).poke({})
    assert found.is_done
    assert [client["client_id"] for client in found.xcom_value["clients"]] == [f"{prefix}-a"]
    assert not sensor({"client_id": f"{prefix}-b"}).poke({}).is_done
