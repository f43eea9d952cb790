"""Both hooks share one lifetime (as apache-kafka's ``KafkaBaseHook``): a cached client, ``close()``,
and a context manager that closes it."""

from __future__ import annotations

import pytest

from airflow_provider_kip714.hooks.base import DEFAULT_CONN_ID
from airflow_provider_kip714.hooks.client_metrics import ClientMetricsHook
from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook
from airflow_provider_kip714.operators.telemetry import LandClientTelemetryOperator
from airflow_provider_kip714.settings import DEFAULT_KAFKA_CONN_ID
from airflow_provider_kip714.triggers.telemetry_arrival import ClientTelemetryArrivalTrigger

UNREACHABLE = {"bootstrap.servers": "127.0.0.1:1"}


def test_the_admin_hook_keeps_one_client_until_closed() -> None:
    with ClientMetricsHook(config=UNREACHABLE) as hook:
        admin = hook.get_conn()
        assert hook.get_conn() is admin and hook.admin is admin
    assert hook.get_conn() is not admin  # closed on exit; a new one on the next use
    hook.close()
    hook.close()  # closing twice is harmless


def test_the_admin_hooks_alter_refuses_a_bad_piece_before_it_connects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The change is validated where it enters: no client is made for a change that cannot be sent."""
    from airflow_provider_kip714.exceptions import SubscriptionValidationError

    def no_client() -> None:
        raise AssertionError("the hook made a client for an invalid change")

    with ClientMetricsHook(config=UNREACHABLE) as hook:
        monkeypatch.setattr(hook, "_create_client", no_client)
        with pytest.raises(SubscriptionValidationError) as refused:
            hook.alter("orders", add_metrics="a b.")
    assert refused.value.field == "metrics"


def test_the_topic_hook_keeps_one_consumer_until_closed() -> None:
    with TelemetryTopicHook(config=UNREACHABLE) as hook:
        consumer = hook.get_conn()
        assert hook.get_conn() is consumer
    with pytest.raises(RuntimeError, match="closed"):
        consumer.assignment()  # confluent-kafka refuses a closed consumer
    assert hook.get_conn() is not consumer
    hook.close()


def test_the_config_is_read_once_and_handed_out_as_copies() -> None:
    hook = TelemetryTopicHook(config=UNREACHABLE)
    first = hook.client_config()
    first["group.id"] = "changed by a caller"
    assert hook.client_config() == UNREACHABLE


def test_every_kafka_connection_default_is_the_hooks() -> None:
    assert DEFAULT_CONN_ID == DEFAULT_KAFKA_CONN_ID
    trigger = ClientTelemetryArrivalTrigger(match=[], since_ms=0, deadline_ms=1)
    assert trigger.kafka_config_id == DEFAULT_CONN_ID
    operator = LandClientTelemetryOperator(task_id="land", out_dir="/tmp/unused")
    assert operator.kafka_config_id == DEFAULT_CONN_ID
