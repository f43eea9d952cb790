"""``ClientTelemetryArrivalSensor``: wait until matching clients' telemetry reaches the topic.

Typical use: after creating a troubleshooting subscription, wait until the targeted clients actually
push (a new subscription can take up to one default interval, 5 minutes, to reach an idle client).
Clients are chosen with the six KIP-714 selectors, or by naming a subscription whose ``match`` is
reused. Returns which clients were seen, with their software name and version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowSensorTimeout, AirflowSkipException

from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.hooks.base import DEFAULT_CONN_ID
from airflow_provider_kip714.subscriptions.model import parse_match
from airflow_provider_kip714.triggers.telemetry_arrival import (
    STATUS_ARRIVED,
    STATUS_TIMEOUT,
    ArrivalWatch,
    ClientTelemetryArrivalTrigger,
)


def subscription_match(kafka_config_id: str, name: str) -> list[str]:
    """The ``match`` of an existing subscription, as ``selector=regex`` strings."""
    from airflow_provider_kip714.hooks.client_metrics import ClientMetricsHook

    with ClientMetricsHook(kafka_config_id=kafka_config_id) as hook:
        subscription = hook.describe(name)
    if subscription is None:
        raise Kip714Error(f"subscription_name: no client-metrics subscription named {name!r}")
    return [selector.render() for selector in subscription.match]


def _to_datetime(value: datetime | str | None) -> datetime:
    if value is None:
        return datetime.now(UTC)
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _whole_number(field: str, value: object, low: int) -> int:
    text = str(value).strip() if isinstance(value, str) else None
    if text is not None and text.isascii() and text.isdigit():
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise Kip714Error(f"{field}: must be a whole number >= {low} (got {value!r})")
    return value


def _seconds(field: str, value: object) -> float:
    try:
        seconds = float(value.total_seconds() if isinstance(value, timedelta) else value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise Kip714Error(f"{field}: must be a number of seconds (got {value!r})") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise Kip714Error(f"{field}: must be a finite number of seconds >= 0 (got {value!r})")
    return seconds


class ClientTelemetryArrivalSensor(BaseSensorOperator):
    """Succeed once telemetry from ``min_clients`` matching clients arrived after ``since``.

    :param match: KIP-714 selectors: ``{"client_id": "orders-.*"}``,
        ``"client_id=a.*,client_software_name=j.*"`` or a list of ``selector=regex``;
        every regex must match the whole value. Empty = any client.
    :param subscription_name: instead of ``match``, reuse this subscription's ``match``.
    :param since: only records at or after this time (templated; ISO string or datetime; default: task start).
    :param min_clients: distinct client instances to wait for.
    :param kafka_config_id: Airflow ``kafka`` connection (librdkafka extra).
    :param topic: the telemetry topic.
    :param timeout: seconds to wait before failing (or skipping with ``soft_fail``); templated.
    :param deferrable: wait in the triggerer (default) instead of poking from a worker.

    ``min_clients`` and ``timeout`` are templated (e.g. from a run's Params) and checked when rendered.
    """

    template_fields: Sequence[str] = (
        "match",
        "subscription_name",
        "since",
        "kafka_config_id",
        "topic",
        "min_clients",
        "timeout",
    )

    def __init__(
        self,
        *,
        match: Mapping[str, str] | Sequence[str] | str | None = None,
        subscription_name: str | None = None,
        since: datetime | str | None = None,
        min_clients: int | str = 1,
        kafka_config_id: str = DEFAULT_CONN_ID,
        topic: str = DEFAULT_TELEMETRY_TOPIC,
        deferrable: bool = True,
        **kwargs: Any,
    ) -> None:
        timeout = kwargs.pop("timeout", 600)
        kwargs.setdefault("poke_interval", 5)
        # A template string cannot pass the base class's numeric check: validate it once rendered.
        super().__init__(timeout=timeout if not isinstance(timeout, str) else 600, **kwargs)
        self.timeout = timeout
        if match is not None and subscription_name is not None:
            raise Kip714Error("match: give either match or subscription_name, not both")
        if not isinstance(min_clients, str):
            _whole_number("min_clients", min_clients, low=1)
        self.match = match
        self.subscription_name = subscription_name
        self.since = since
        self.min_clients = min_clients
        self.kafka_config_id = kafka_config_id
        self.topic = topic
        self.deferrable = deferrable
        self._watch: ArrivalWatch | None = None

    def resolved_match(self) -> list[str]:
        if self.subscription_name:
            return subscription_match(self.kafka_config_id, self.subscription_name)
        return [selector.render() for selector in parse_match(self.match)]

    def _rendered_limits(self) -> None:
        """``min_clients`` >= 1 and ``timeout`` >= 0 seconds, finite, after templating."""
        self.min_clients = _whole_number("min_clients", self.min_clients, low=1)
        self.timeout = _seconds("timeout", self.timeout)

    def execute(self, context: Any) -> Any:
        self._rendered_limits()
        selectors = self.resolved_match()
        since = _to_datetime(self.since)
        self.log.info(
            "Waiting for telemetry from %d client(s) matching %s since %s on %s",
            self.min_clients,
            selectors or "any client",
            since.isoformat(),
            self.topic,
        )
        if not self.deferrable:
            if self.since is None:
                self.since = since.isoformat()  # every poke scans from the same start
            return super().execute(context)
        # A retry first looks at what already arrived: a trigger that fires seconds after the deferral can
        # lose Airflow 3.3.2's requeue race (apache/airflow #67287, #72716), the retry being the remedy,
        # and a retry whose pushes are all there would fire at once and meet the race again (seen: all
        # three tries lost under load). The first try defers as before.
        if context["ti"].try_number > 1:
            arrived = self._scan(selectors, since)
            if arrived.is_done:
                return arrived.xcom_value
        deadline = datetime.now(UTC) + timedelta(seconds=float(self.timeout))
        self.defer(
            trigger=ClientTelemetryArrivalTrigger(
                match=selectors,
                since_ms=int(since.timestamp() * 1000),
                deadline_ms=int(deadline.timestamp() * 1000),
                kafka_config_id=self.kafka_config_id,
                topic=self.topic,
                min_clients=self.min_clients,
                poll_interval=min(float(self.poke_interval), 2.0),
            ),
            method_name="execute_complete",
        )

    def poke(self, context: Any) -> PokeReturnValue:
        """Scan from ``since`` up to the end offsets read now (used when ``deferrable=False``)."""
        return self._scan(self.resolved_match(), _to_datetime(self.since))

    def _scan(self, selectors: list[str], since: datetime) -> PokeReturnValue:
        """Done once ``min_clients`` matching clients pushed since ``since``, up to the end offsets now."""
        from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook

        watch = ArrivalWatch(selectors, int(since.timestamp() * 1000))
        hook = TelemetryTopicHook(kafka_config_id=self.kafka_config_id, topic=self.topic)
        for item in hook.iter_records(since, decode=False, timeout_s=max(float(self.poke_interval), 5.0)):
            watch.observe_record(item.record.headers, item.record.timestamp_ms)
            if len(watch.seen) >= self.min_clients:
                return PokeReturnValue(True, self._result(selectors, watch.clients()))
        return PokeReturnValue(False)

    def _result(self, selectors: list[str], clients: list[dict[str, Any]]) -> dict[str, Any]:
        for client in clients:
            self.log.info(
                "Seen %s (%s %s, instance %s) at %s",
                printable(client["client_id"]),
                printable(client["client_software_name"]),
                printable(client["client_software_version"]),
                printable(client["client_instance_id"]),
                client["first_seen"],
            )
        return {"match": selectors, "clients": clients}

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        self._rendered_limits()
        event = event or {}
        status = event.get("status")
        clients = event.get("clients", [])
        if status == STATUS_ARRIVED:
            return self._result(event.get("match", []), clients)
        if status == STATUS_TIMEOUT:
            message = (
                f"Timed out after {self.timeout}s waiting for {self.min_clients} client(s) matching "
                f"{event.get('match') or 'any client'} on {self.topic}; saw {len(clients)}"
            )
            if self.soft_fail:
                raise AirflowSkipException(message)
            raise AirflowSensorTimeout(message)
        raise Kip714Error(f"telemetry arrival watch failed: {event.get('error') or event!r}")
