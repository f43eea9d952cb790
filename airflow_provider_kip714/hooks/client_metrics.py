"""``ClientMetricsHook``: CLIENT_METRICS subscriptions through an Airflow ``kafka`` connection.

The connection's JSON extra is the librdkafka-style dict the apache-kafka provider uses
(``bootstrap.servers``, ``security.protocol``, ``sasl.*``, ``ssl.*``); it is translated for
kafka-python, whose admin client is the only Python client that speaks CLIENT_METRICS.

Registration: the apache-kafka provider owns the ``kafka`` connection type, and Airflow keeps one
hook per connection type (and would pick ours first, alphabetically). So the hook registers under
its own type ``kafka_client_metrics`` for ``airflow providers hooks`` and the UI, while reading any
connection whose extra holds librdkafka settings, ``kafka_default`` (type ``kafka``) included.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from airflow_provider_kip714.clock import Clock
from airflow_provider_kip714.contract.selectors import MatchInput
from airflow_provider_kip714.hooks.base import DEFAULT_CONN_ID, Kip714KafkaBaseHook
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin, UpsertResult
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import (
    IntervalInput,
    MetricsInput,
    Subscription,
    SubscriptionChange,
)
from airflow_provider_kip714.subscriptions.window_name import WindowName

CONN_TYPE = "kafka_client_metrics"
__all__ = ["CONN_TYPE", "DEFAULT_CONN_ID", "ClientMetricsHook"]


class ClientMetricsHook(Kip714KafkaBaseHook):
    """Create, describe, alter, delete and reap KIP-714 client-metrics subscriptions.

    :param kafka_config_id: Airflow connection whose extra is librdkafka-style config.
    :param config: use this librdkafka-style dict instead of a connection (CLI, tests).
    :param clock: time source for ``reap``; the system clock by default.
    """

    conn_name_attr = "kafka_config_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = CONN_TYPE
    hook_name = "Kafka client metrics (KIP-714)"

    def __init__(
        self,
        kafka_config_id: str = DEFAULT_CONN_ID,
        config: Mapping[str, Any] | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(kafka_config_id, config)
        self._clock = clock

    def _create_client(self) -> ClientMetricsAdmin:
        return ClientMetricsAdmin(
            to_kafka_python_kwargs(self.client_config(require_bootstrap=False)), clock=self._clock
        )

    def get_conn(self) -> ClientMetricsAdmin:
        """The admin wrapper (kept until ``close()``); it connects lazily on first use."""
        return super().get_conn()  # type: ignore[no-any-return]

    @property
    def admin(self) -> ClientMetricsAdmin:
        return self.get_conn()

    def list(self) -> list[str]:
        return self.admin.list_names()

    def describe(self, name: str) -> Subscription | None:
        return self.admin.describe(name)

    def describe_all(self) -> list[Subscription]:
        return self.admin.describe_all()

    def create(self, subscription: Subscription) -> UpsertResult:
        """Idempotent create/upsert: the same content changes nothing."""
        return self.admin.upsert(subscription)

    def alter(
        self,
        name: str,
        add_metrics: MetricsInput = None,
        remove_metrics: MetricsInput = None,
        interval_ms: IntervalInput = None,
        match: MatchInput = None,
    ) -> Subscription:
        """Add/remove metric prefixes and optionally change interval or match; returns the new state."""
        change = SubscriptionChange.of(
            name, add_metrics=add_metrics, remove_metrics=remove_metrics, interval_ms=interval_ms, match=match
        )
        return self.admin.alter(change)

    def delete(self, name: str) -> bool:
        """Delete; False when it did not exist (not an error)."""
        return self.admin.delete(name)

    def reap(self, now: datetime | None = None, dry_run: bool = False) -> list[str]:
        """Delete expired window subscriptions; returns the names deleted."""
        return self.admin.reap(now=now, dry_run=dry_run)

    def find_window(self, label: str, suffix: str) -> WindowName | None:
        return self.admin.find_window(label, suffix)

    def test_connection(self) -> tuple[bool, str]:
        try:
            admin = self.admin
        except Exception as err:
            return False, str(err)
        return admin.test_connection()
