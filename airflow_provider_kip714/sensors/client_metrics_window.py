"""``ClientMetricsWindowSensor``: wait for a time-boxed subscription's window to end.

Deferrable by default: the wait happens in the triggerer, so no worker slot is held for a window
that may last hours. The end is read from the name (``kip714-<label>-exp<UTC>-<8 hex>``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from airflow.sdk import BaseSensorOperator

from airflow_provider_kip714.clock import Clock, SystemClock
from airflow_provider_kip714.hooks.client_metrics import DEFAULT_CONN_ID, ClientMetricsHook
from airflow_provider_kip714.subscriptions.window_name import parse_window_name
from airflow_provider_kip714.triggers.client_metrics_window import STATUS_DELETED, ClientMetricsWindowTrigger


class ClientMetricsWindowSensor(BaseSensorOperator):
    """Succeed once the window ``name`` has ended, or (with ``watch_deletion``) its subscription is gone.

    :param name: the window subscription name (templated; often ``{{ ti.xcom_pull(...) }}``).
    :param kafka_config_id: connection used to watch for early deletion.
    :param deferrable: wait in the triggerer (default) instead of poking from a worker.
    :param watch_deletion: also end when the subscription was deleted early.
    """

    template_fields: Sequence[str] = ("name", "kafka_config_id")

    def __init__(
        self,
        *,
        name: str,
        kafka_config_id: str = DEFAULT_CONN_ID,
        deferrable: bool = True,
        watch_deletion: bool = True,
        clock: Clock | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.kafka_config_id = kafka_config_id
        self.deferrable = deferrable
        self.watch_deletion = watch_deletion
        self.clock: Clock = clock or SystemClock()

    def poke(self, context: Any) -> bool:
        if self.clock.now() >= parse_window_name(self.name).expires_at:
            return True
        if not self.watch_deletion:
            return False
        with ClientMetricsHook(kafka_config_id=self.kafka_config_id) as hook:
            return self.name not in hook.list()

    def execute(self, context: Any) -> Any:
        expires_at = parse_window_name(self.name).expires_at
        if not self.deferrable:
            return super().execute(context)
        if self.clock.now() >= expires_at:
            self.log.info("Window %s ended at %s", self.name, expires_at.isoformat())
            return self.name
        remaining = expires_at - datetime.now(UTC)
        self.defer(
            trigger=ClientMetricsWindowTrigger(
                name=self.name,
                kafka_config_id=self.kafka_config_id,
                poll_interval=min(float(self.poke_interval), max(remaining.total_seconds(), 1.0)),
                watch_deletion=self.watch_deletion,
            ),
            method_name="execute_complete",
            timeout=self.execution_timeout,
        )

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> str:
        status = (event or {}).get("status")
        if status == STATUS_DELETED:
            self.log.info("Subscription %s was deleted before its window ended", self.name)
        else:
            self.log.info("Window %s ended", self.name)
        return self.name
