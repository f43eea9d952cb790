"""``ClientMetricsWindowTrigger``: wait, in the triggerer, until a time-boxed subscription's window ends.

The end comes from the subscription name, so the trigger needs no state beyond ``(classpath, kwargs)``.
It can also watch the cluster and end early when someone deleted the subscription. Cluster calls run
in a thread (kafka-python is blocking) and the admin client is closed in ``cleanup``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_kip714.hooks.client_metrics import DEFAULT_CONN_ID, ClientMetricsHook
from airflow_provider_kip714.subscriptions.window_name import parse_window_name

STATUS_ENDED = "window_ended"
STATUS_DELETED = "deleted"


class ClientMetricsWindowTrigger(BaseTrigger):
    """Fire once the window named ``name`` has ended (or its subscription vanished).

    :param name: a ``kip714-<label>-exp<UTC>-<8 hex>`` subscription name.
    :param kafka_config_id: connection used to watch for early deletion.
    :param poll_interval: seconds between checks.
    :param watch_deletion: also end early when the subscription no longer exists.
    """

    def __init__(
        self,
        name: str,
        kafka_config_id: str = DEFAULT_CONN_ID,
        poll_interval: float = 30.0,
        watch_deletion: bool = True,
    ) -> None:
        super().__init__()
        parse_window_name(name)  # refuse a name without an end before the task defers
        self.name = name
        self.kafka_config_id = kafka_config_id
        self.poll_interval = float(poll_interval)
        self.watch_deletion = watch_deletion
        self._hook: ClientMetricsHook | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "name": self.name,
                "kafka_config_id": self.kafka_config_id,
                "poll_interval": self.poll_interval,
                "watch_deletion": self.watch_deletion,
            },
        )

    def _subscription_exists(self) -> bool:
        if self._hook is None:
            self._hook = ClientMetricsHook(kafka_config_id=self.kafka_config_id)
        return self.name in self._hook.list()

    async def run(self) -> AsyncIterator[TriggerEvent]:
        expires_at = parse_window_name(self.name).expires_at
        while True:
            remaining = (expires_at - datetime.now(UTC)).total_seconds()
            if remaining <= 0:
                await self.cleanup()
                yield TriggerEvent({"status": STATUS_ENDED, "name": self.name})
                return
            if self.watch_deletion:
                try:
                    exists = await asyncio.to_thread(self._subscription_exists)
                except Exception as err:
                    # The window ends by the clock; an unreachable cluster only stops the early-exit check.
                    self.log.warning("Could not check subscription %s: %s", self.name, err)
                else:
                    if not exists:
                        await self.cleanup()
                        yield TriggerEvent({"status": STATUS_DELETED, "name": self.name})
                        return
            await asyncio.sleep(max(0.0, min(self.poll_interval, remaining)))

    async def cleanup(self) -> None:
        """Close the admin client; also called before the final event, since ``dag.test()`` never calls it."""
        hook, self._hook = self._hook, None
        if hook is not None:
            await asyncio.to_thread(hook.close)
