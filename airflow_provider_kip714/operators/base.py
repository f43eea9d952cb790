"""Shared base of the client-metrics operators: one place that builds (and closes) the hook."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from airflow.sdk import BaseOperator

from airflow_provider_kip714.clock import Clock, SystemClock
from airflow_provider_kip714.hooks.client_metrics import DEFAULT_CONN_ID, ClientMetricsHook


class ClientMetricsBaseOperator(BaseOperator):
    """Owns ``kafka_config_id`` (templated), the injectable clock and the hook's lifetime.

    :param kafka_config_id: Airflow connection with a librdkafka-style extra.
    :param clock: time source (tests inject a ``ManualClock``); the system clock by default.
    """

    template_fields: Sequence[str] = ("kafka_config_id",)

    def __init__(
        self, *, kafka_config_id: str = DEFAULT_CONN_ID, clock: Clock | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.kafka_config_id = kafka_config_id
        self.clock: Clock = clock or SystemClock()

    @cached_property
    def hook(self) -> ClientMetricsHook:
        return ClientMetricsHook(kafka_config_id=self.kafka_config_id, clock=self.clock)

    def close_hook(self) -> None:
        if "hook" in self.__dict__:
            self.hook.close()
            del self.__dict__["hook"]
