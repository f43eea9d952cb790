"""Active client-metrics subscriptions as the page shows them, read live from the cluster.

The expiry comes from the window name (``window_name.py``); subscriptions outside that pattern are
shown as standing ones. A cluster that cannot be reached is a message on the page, never a 500.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.hooks.client_metrics import DEFAULT_CONN_ID, ClientMetricsHook
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.subscriptions.window_name import try_parse_window_name

CONN_ID_ENV = "KIP714_UI_KAFKA_CONN_ID"
UI_CONNECT_TIMEOUT_MS = 5_000
"""A page should not hang for the admin client's 15 s default when the cluster is down."""


def configured_conn_id() -> str:
    """``$KIP714_UI_KAFKA_CONN_ID``, else ``[kip714] ui_kafka_conn_id``, else ``kafka_default``."""
    from_env = os.environ.get(CONN_ID_ENV)
    if from_env:
        return from_env
    from airflow.configuration import conf

    return conf.get("kip714", "ui_kafka_conn_id", fallback=DEFAULT_CONN_ID) or DEFAULT_CONN_ID


@dataclass(frozen=True)
class SubscriptionRow:
    name: str
    metrics: str
    interval_ms: int
    match: str
    expires_at: datetime | None

    def remaining(self, now: datetime) -> str:
        """'expires in 12 min', 'expired 3 min ago' (the reaper removes it) or 'no expiry'."""
        if self.expires_at is None:
            return "no expiry (not a time-boxed window)"
        seconds = int((self.expires_at - now).total_seconds())
        if seconds <= 0:
            return f"expired {describe_seconds(-seconds)} ago, awaiting the reaper"
        return f"expires in {describe_seconds(seconds)}"

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at


@dataclass
class SubscriptionsView:
    conn_id: str
    rows: list[SubscriptionRow] = field(default_factory=list)
    error: str | None = None


def describe_seconds(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 2 * 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} days"


def to_row(subscription: Subscription) -> SubscriptionRow:
    window = try_parse_window_name(subscription.name)
    return SubscriptionRow(
        name=subscription.name,
        metrics=", ".join(subscription.metrics) or "(none: clients blocked)",
        interval_ms=subscription.interval_ms,
        match=", ".join(selector.render() for selector in subscription.match) or "(all clients)",
        expires_at=window.expires_at if window else subscription.expires_at,
    )


def _sort_key(row: SubscriptionRow) -> tuple[int, datetime, str]:
    far_future = datetime.max.replace(tzinfo=UTC)
    return (row.expires_at is None, row.expires_at or far_future, row.name)


def _ui_config(conn_id: str) -> dict[str, Any]:
    from airflow.sdk import BaseHook

    extra = dict(BaseHook.get_connection(conn_id).extra_dejson)
    extra.setdefault("socket.connection.setup.timeout.ms", UI_CONNECT_TIMEOUT_MS)
    extra.setdefault("request.timeout.ms", UI_CONNECT_TIMEOUT_MS)
    return extra


def load_subscriptions(conn_id: str | None = None) -> SubscriptionsView:
    """Describe every subscription on the connection's cluster; errors become ``view.error``."""
    conn_id = conn_id or configured_conn_id()
    view = SubscriptionsView(conn_id=conn_id)
    try:
        with ClientMetricsHook(kafka_config_id=conn_id, config=_ui_config(conn_id)) as hook:
            view.rows = sorted((to_row(s) for s in hook.describe_all()), key=_sort_key)
    except Kip714Error as err:
        view.error = str(err)
    except Exception as err:  # a missing connection is an AirflowNotFoundException, among others
        view.error = f"{type(err).__name__}: {err}"
    return view
