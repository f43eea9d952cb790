"""The window trigger: serializes to (classpath, kwargs), fires on the window's end or early deletion,
and closes its admin client in cleanup(); run against the real local Kafka."""

from __future__ import annotations

import asyncio
import importlib
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from dag_test_env import use_kafka_connection
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

from airflow_provider_kip714.exceptions import InvalidWindowNameError
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.subscriptions.window_name import format_window_name
from airflow_provider_kip714.triggers.client_metrics_window import (
    STATUS_DELETED,
    STATUS_ENDED,
    ClientMetricsWindowTrigger,
)

CONN_ID = "kip714_trigger_test"


@pytest.fixture
def connection(kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch) -> str:
    return use_kafka_connection(monkeypatch, CONN_ID, kafka_cluster.client_config())


async def first_event(trigger: ClientMetricsWindowTrigger) -> dict:
    try:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("trigger ended without an event")
    finally:
        await trigger.cleanup()


def test_trigger_serializes_to_classpath_and_kwargs() -> None:
    name = format_window_name("ser", datetime(2030, 1, 1, tzinfo=UTC), "abcdef01")
    trigger = ClientMetricsWindowTrigger(
        name=name, kafka_config_id="k", poll_interval=5, watch_deletion=False
    )
    classpath, kwargs = trigger.serialize()
    module_name, _, class_name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module_name), class_name)(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)
    assert json.loads(json.dumps(kwargs)) == kwargs  # plain JSON, no secrets, no objects
    with pytest.raises(InvalidWindowNameError):
        ClientMetricsWindowTrigger(name="not-a-window")


def test_trigger_fires_when_window_ends_and_when_subscription_is_deleted(
    kafka_cluster: LocalKafkaCluster, connection: str
) -> None:
    ended = format_window_name("trg", datetime.now(UTC) - timedelta(seconds=1), "00000001")
    assert asyncio.run(first_event(ClientMetricsWindowTrigger(name=ended, kafka_config_id=connection))) == {
        "status": STATUS_ENDED,
        "name": ended,
    }

    name = format_window_name(
        f"trg-{uuid.uuid4().hex[:6]}", datetime.now(UTC) + timedelta(hours=1), "00000002"
    )
    with ClientMetricsAdmin(to_kafka_python_kwargs(kafka_cluster.client_config())) as admin:
        admin.upsert(Subscription.from_spec(name, block=True, match="client_id=nobody-trigger"))
        trigger = ClientMetricsWindowTrigger(name=name, kafka_config_id=connection, poll_interval=0.5)

        async def watch_then_delete() -> dict:
            task = asyncio.ensure_future(first_event(trigger))
            await asyncio.sleep(2)
            assert not task.done(), "the trigger fired while the window was open"
            assert trigger._hook is not None  # it is watching through its own client
            await asyncio.to_thread(admin.delete, name)
            return await asyncio.wait_for(task, timeout=60)

        assert asyncio.run(watch_then_delete()) == {"status": STATUS_DELETED, "name": name}
    assert trigger._hook is None  # cleanup() closed and dropped the admin client
