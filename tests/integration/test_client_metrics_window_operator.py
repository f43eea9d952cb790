"""The window operator's clean-up paths against the real local Kafka, driven in-process.

dag.test() has no deferral timeout and cannot kill a task politely, so these paths are driven by
calling the operator the way Airflow's task runner does: ``resume_execution("__fail__", ...)`` for a
trigger timeout, ``on_kill()`` for a stopped task. The only stand-in is the execution-timeout signal,
raised where Airflow's alarm would interrupt ``execute`` (between creating and deferring).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk.bases.operator import TRIGGER_FAIL_REPR, TriggerFailureReason
from airflow.sdk.exceptions import AirflowTaskTimeout, TaskDeferralTimeout, TaskDeferred
from dag_test_env import use_kafka_connection
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

from airflow_provider_kip714.clock import ManualClock
from airflow_provider_kip714.exceptions import ClientMetricsAdminError, SubscriptionValidationError
from airflow_provider_kip714.operators.client_metrics import (
    ClientMetricsTroubleshootingWindowOperator,
    CreateClientMetricsSubscriptionOperator,
)
from airflow_provider_kip714.sensors.client_metrics_window import ClientMetricsWindowSensor
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.subscriptions.window_name import (
    format_window_name,
    parse_window_name,
    try_parse_window_name,
)
from airflow_provider_kip714.triggers.client_metrics_window import ClientMetricsWindowTrigger

CONN_ID = "kip714_operator_test"


@pytest.fixture
def admin(kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[ClientMetricsAdmin]:
    extra = kafka_cluster.client_config()
    use_kafka_connection(monkeypatch, CONN_ID, extra)
    # The reaper's environment lists this cluster, so opening a window needs no Variable (no task context).
    monkeypatch.setenv("KIP714_REAPER_CONN_IDS", CONN_ID)
    with ClientMetricsAdmin(to_kafka_python_kwargs(extra)) as opened:
        yield opened


def context_for(task_id: str, run_id: str = "manual__test") -> dict[str, Any]:
    return {"ti": SimpleNamespace(dag_id="ops_dag", task_id=task_id, map_index=-1), "run_id": run_id}


def window_operator(label: str, **kwargs: Any) -> ClientMetricsTroubleshootingWindowOperator:
    return ClientMetricsTroubleshootingWindowOperator(
        task_id=f"window_{label}",
        kafka_config_id=CONN_ID,
        window="10m",
        window_label=label,
        metrics="org.apache.kafka.producer.",
        interval_ms=1000,
        match=f"client_id=nobody-{label}",
        **kwargs,
    )


def labelled(admin: ClientMetricsAdmin, label: str) -> list[str]:
    return [name for name in admin.list_names() if (w := try_parse_window_name(name)) and w.label == label]


def defer_now(operator: ClientMetricsTroubleshootingWindowOperator, label: str) -> TaskDeferred:
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context_for(operator.task_id))
    return deferred.value


def test_execute_defers_with_a_serializable_trigger_and_completion_deletes(admin: ClientMetricsAdmin) -> None:
    label = f"op-{uuid.uuid4().hex[:6]}"
    operator = window_operator(label)
    deferred = defer_now(operator, label)
    assert isinstance(deferred.trigger, ClientMetricsWindowTrigger)
    name = deferred.kwargs["name"]
    assert labelled(admin, label) == [name]
    assert deferred.trigger.serialize()[1]["name"] == name
    assert "password" not in json.dumps(deferred.trigger.serialize()[1])

    # Airflow resumes the task (in a fresh operator object) with the trigger's event.
    resumed = window_operator(label)
    result = resumed.resume_execution(
        "execute_complete", {"name": name, "event": {"status": "window_ended"}}, {}
    )
    assert result == name
    assert labelled(admin, label) == []


def test_deferral_timeout_deletes_the_subscription(admin: ClientMetricsAdmin) -> None:
    label = f"op-{uuid.uuid4().hex[:6]}"
    name = defer_now(window_operator(label), label).kwargs["name"]
    failing = window_operator(label)
    with pytest.raises(TaskDeferralTimeout):
        failing.resume_execution(
            TRIGGER_FAIL_REPR, {"error": TriggerFailureReason.TRIGGER_TIMEOUT, "name": name}, {}
        )
    assert labelled(admin, label) == []


def test_on_kill_deletes_the_subscription(admin: ClientMetricsAdmin) -> None:
    label = f"op-{uuid.uuid4().hex[:6]}"
    operator = window_operator(label)
    defer_now(operator, label)
    assert len(labelled(admin, label)) == 1
    operator.on_kill()
    assert labelled(admin, label) == []


def test_timeout_inside_execute_deletes_the_subscription(
    admin: ClientMetricsAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    label = f"op-{uuid.uuid4().hex[:6]}"
    operator = window_operator(label)
    created: list[str] = []

    def alarm(**_: Any) -> None:
        created.extend(labelled(admin, label))
        raise AirflowTaskTimeout("execution_timeout reached")

    monkeypatch.setattr(operator, "defer", alarm)
    with pytest.raises(AirflowTaskTimeout):
        operator.execute(context_for(operator.task_id))
    assert len(created) == 1  # it existed when the timeout hit...
    assert labelled(admin, label) == []  # ...and is gone afterwards


def test_retry_reuses_the_window_and_create_operator_is_idempotent(admin: ClientMetricsAdmin) -> None:
    label = f"op-{uuid.uuid4().hex[:6]}"
    first = defer_now(window_operator(label), label).kwargs["name"]
    second = defer_now(window_operator(label), label).kwargs["name"]  # a new try of the same task instance
    assert first == second and labelled(admin, label) == [first]
    other_run = window_operator(label)
    with pytest.raises(TaskDeferred) as deferred:
        other_run.execute(context_for(other_run.task_id, run_id="manual__other"))
    assert deferred.value.kwargs["name"] != first  # another run is another window
    assert len(labelled(admin, label)) == 2
    for name in labelled(admin, label):
        admin.delete(name)

    create = CreateClientMetricsSubscriptionOperator(
        task_id="create", kafka_config_id=CONN_ID, window="5m", window_label=label, block=True,
        match=f"client_id=nobody-{label}",
    )  # fmt: skip
    one = create.execute(context_for("create"))
    two = create.execute(context_for("create"))
    assert one == two and labelled(admin, label) == [one["name"]]
    window = parse_window_name(one["name"])
    assert window.label == label and one["kafka_config_id"] == CONN_ID
    start, end = datetime.fromisoformat(one["start"]), datetime.fromisoformat(one["end"])
    assert end == window.expires_at and end - start == timedelta(minutes=5)
    admin.delete(one["name"])


def test_window_sensor_defers_until_the_end_and_pokes_for_deletion(admin: ClientMetricsAdmin) -> None:
    label = f"sensor-{uuid.uuid4().hex[:6]}"
    now = datetime.now(UTC).replace(microsecond=0)
    name = format_window_name(label, now + timedelta(minutes=10), "0000000c")
    admin.upsert(Subscription.from_spec(name, block=True, match=f"client_id=nobody-{label}"))

    deferrable = ClientMetricsWindowSensor(
        task_id="wait", name=name, kafka_config_id=CONN_ID, poke_interval=5
    )
    with pytest.raises(TaskDeferred) as deferred:
        deferrable.execute({})
    assert isinstance(deferred.value.trigger, ClientMetricsWindowTrigger)
    assert deferred.value.trigger.name == name
    assert deferrable.execute_complete({}, {"status": "window_ended", "name": name}) == name

    clock = ManualClock(now)
    poking = ClientMetricsWindowSensor(
        task_id="poke", name=name, kafka_config_id=CONN_ID, deferrable=False, clock=clock
    )
    assert poking.poke({}) is False  # window open, subscription present
    admin.delete(name)
    assert poking.poke({}) is True  # deleted early
    clock.advance(timedelta(minutes=10))
    quiet = ClientMetricsWindowSensor(
        task_id="end", name=name, kafka_config_id=CONN_ID, clock=clock, watch_deletion=False
    )
    assert quiet.poke({}) is True
    assert quiet.execute({}) == name  # already over: no deferral


@pytest.mark.parametrize("window", ["3650d", "24h1s", "99999999999999", "²"])
def test_operators_refuse_windows_beyond_the_maximum_before_touching_the_cluster(
    admin: ClientMetricsAdmin, window: str
) -> None:
    label = f"toolong-{uuid.uuid4().hex[:6]}"
    create = CreateClientMetricsSubscriptionOperator(
        task_id="create", kafka_config_id=CONN_ID, window=window, window_label=label, block=True
    )
    with pytest.raises(SubscriptionValidationError) as refused:
        create.execute(context_for("create"))
    assert refused.value.field == "window"
    with pytest.raises(SubscriptionValidationError):
        ClientMetricsTroubleshootingWindowOperator(
            task_id="w", kafka_config_id=CONN_ID, window=window, window_label=label
        ).execute(context_for("w"))
    assert labelled(admin, label) == []


def test_a_create_that_fails_after_the_broker_call_deletes_its_window(
    admin: ClientMetricsAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An alter that times out after the broker applied it: the task survives, so it deletes the window
    it announced (before: the name was never known and the window stayed until the reaper)."""
    label = f"failcreate-{uuid.uuid4().hex[:6]}"
    create = CreateClientMetricsSubscriptionOperator(
        task_id="create", kafka_config_id=CONN_ID, window="5m", window_label=label, block=True,
        match=f"client_id=nobody-{label}",
    )  # fmt: skip
    real_create = create.hook.create
    pushed: dict[str, str] = {}

    def create_then_time_out(subscription: Subscription) -> None:
        real_create(subscription)
        assert labelled(admin, label) == [subscription.name]  # the broker has it
        raise ClientMetricsAdminError("writing subscription: KafkaTimeoutError (simulated)")

    monkeypatch.setattr(create.hook, "create", create_then_time_out)
    context = context_for("create")
    context["ti"].xcom_push = lambda key, value: pushed.__setitem__(key, value)
    with pytest.raises(ClientMetricsAdminError):
        create.execute(context)
    assert parse_window_name(pushed["window_name"]).label == label  # announced before the call
    assert labelled(admin, label) == []
