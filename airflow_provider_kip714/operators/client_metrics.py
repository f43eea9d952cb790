"""Operators for KIP-714 client-metrics subscriptions.

``ClientMetricsTroubleshootingWindowOperator`` is the all-in-one form: create, wait in the triggerer,
delete; it deletes on failure, kill and timeout, and a retry finds its own subscription again because
the name's suffix is derived from the task instance and the window spec. A worker killed with
SIGKILL runs no code at all: the ``kip714_reaper`` DAG deletes such windows after their expiry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from airflow.sdk.exceptions import TaskDeferred

from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.hooks.client_metrics import ClientMetricsHook
from airflow_provider_kip714.operators.base import ClientMetricsBaseOperator
from airflow_provider_kip714.subscriptions.duration import parse_duration
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.subscriptions.window_name import derive_suffix, format_window_name, slugify_label
from airflow_provider_kip714.triggers.client_metrics_window import STATUS_DELETED, ClientMetricsWindowTrigger

SPEC_TEMPLATE_FIELDS = ("window_label", "window", "metrics", "interval_ms", "match")


@dataclass(frozen=True)
class OpenedWindow:
    name: str
    reused: bool
    already_expired: bool


def window_suffix(context: Mapping[str, Any], label: str, window: timedelta) -> str:
    """Same task instance + same window spec -> same suffix, across retries and worker crashes."""
    ti = context["ti"]
    return derive_suffix(
        ti.dag_id, ti.task_id, context["run_id"], ti.map_index, label, int(window.total_seconds())
    )


def open_window(
    hook: ClientMetricsHook,
    label: str,
    suffix: str,
    window: timedelta,
    spec: Mapping[str, Any],
) -> OpenedWindow:
    """Reuse the window a previous try created (same label and suffix) or create it; idempotent."""
    now = hook.admin.clock.now()
    existing = hook.find_window(label, suffix)
    if existing is not None:
        name = str(existing)
        if existing.is_expired(now):
            return OpenedWindow(name=name, reused=True, already_expired=True)
        hook.create(Subscription.from_spec(name=name, **spec))
        return OpenedWindow(name=name, reused=True, already_expired=False)
    name = format_window_name(label, now + window, suffix)
    hook.create(Subscription.from_spec(name=name, **spec))
    return OpenedWindow(name=name, reused=False, already_expired=False)


class _SpecMixin:
    """Holds the subscription spec arguments and validates them before any cluster call."""

    metrics: str | Iterable[str] | None
    interval_ms: int | str | None
    match: str | Iterable[str] | Mapping[str, str] | None
    block: bool

    def _set_spec(
        self,
        window: str | int | float | timedelta | None,
        window_label: str | None,
        metrics: str | Iterable[str] | None,
        interval_ms: int | str | None,
        match: str | Iterable[str] | Mapping[str, str] | None,
        block: bool,
    ) -> None:
        self.window = window
        self.window_label = window_label
        self.metrics = metrics
        self.interval_ms = interval_ms
        self.match = match
        self.block = block

    def spec(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "interval_ms": self.interval_ms,
            "match": self.match,
            "block": self.block,
        }


class CreateClientMetricsSubscriptionOperator(_SpecMixin, ClientMetricsBaseOperator):
    """Create (idempotently) a subscription; pushes its name to XCom (``return_value``).

    Give ``name`` for a plain subscription, or ``window`` (``"30m"``, seconds, timedelta) for a
    time-boxed one named ``kip714-<window_label>-exp<UTC>-<8 hex>`` (label defaults to
    ``<dag_id>-<task_id>``); a retry finds the same window.
    """

    template_fields: Sequence[str] = (
        *ClientMetricsBaseOperator.template_fields,
        "name",
        *SPEC_TEMPLATE_FIELDS,
    )

    def __init__(
        self,
        *,
        name: str | None = None,
        window: str | int | float | timedelta | None = None,
        window_label: str | None = None,
        metrics: str | Iterable[str] | None = None,
        interval_ms: int | str | None = None,
        match: str | Iterable[str] | Mapping[str, str] | None = None,
        block: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self._set_spec(window, window_label, metrics, interval_ms, match, block)

    def execute(self, context: Any) -> str:
        if (self.name is None) == (self.window is None):
            raise SubscriptionValidationError("name/window", "give exactly one of name or window")
        try:
            if self.name is not None:
                subscription = Subscription.from_spec(name=self.name, **self.spec())
                result = self.hook.create(subscription)
                self.log.info("Subscription %s: %s", subscription.name, result.outcome.value)
                return subscription.name
            window = parse_duration(self.window)
            label = slugify_label(self.window_label or f"{self.dag_id}-{self.task_id}")
            Subscription.from_spec(name="validation-only", **self.spec())
            opened = open_window(self.hook, label, window_suffix(context, label, window), window, self.spec())
            self.log.info(
                "Window subscription %s (%s)", opened.name, "reused" if opened.reused else "created"
            )
            return opened.name
        finally:
            self.close_hook()


class DeleteClientMetricsSubscriptionOperator(ClientMetricsBaseOperator):
    """Delete a subscription; a missing one is not an error. Returns whether it existed."""

    template_fields: Sequence[str] = (*ClientMetricsBaseOperator.template_fields, "name")

    def __init__(self, *, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name = name

    def execute(self, context: Any) -> bool:
        try:
            return self.hook.delete(self.name)
        finally:
            self.close_hook()


class ReapExpiredClientMetricsSubscriptionsOperator(ClientMetricsBaseOperator):
    """Delete every ``kip714-...-exp<UTC>-...`` subscription whose expiry passed; returns their names."""

    template_fields: Sequence[str] = (*ClientMetricsBaseOperator.template_fields, "report_only")

    def __init__(self, *, report_only: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.report_only = report_only

    def execute(self, context: Any) -> list[str]:
        try:
            names = self.hook.reap(now=self.clock.now(), dry_run=bool(self.report_only))
        finally:
            self.close_hook()
        self.log.info(
            "%s %d expired subscription(s): %s",
            "Would reap" if self.report_only else "Reaped",
            len(names),
            names,
        )
        return names


class ClientMetricsTroubleshootingWindowOperator(_SpecMixin, ClientMetricsBaseOperator):
    """Open a time-boxed subscription, wait for its end without a worker slot, then delete it.

    Deletes on failure, on kill (``on_kill``) and on deferral timeout. Returns the subscription name.
    """

    template_fields: Sequence[str] = (*ClientMetricsBaseOperator.template_fields, *SPEC_TEMPLATE_FIELDS)

    def __init__(
        self,
        *,
        window: str | int | float | timedelta,
        window_label: str | None = None,
        metrics: str | Iterable[str] | None = None,
        interval_ms: int | str | None = None,
        match: str | Iterable[str] | Mapping[str, str] | None = None,
        block: bool = False,
        poll_interval: float = 30.0,
        watch_deletion: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._set_spec(window, window_label, metrics, interval_ms, match, block)
        self.poll_interval = poll_interval
        self.watch_deletion = watch_deletion
        self.subscription_name: str | None = None

    def execute(self, context: Any) -> str:
        window = parse_duration(self.window)
        label = slugify_label(self.window_label or f"{self.dag_id}-{self.task_id}")
        Subscription.from_spec(name="validation-only", **self.spec())  # fail before touching the cluster
        try:
            opened = open_window(self.hook, label, window_suffix(context, label, window), window, self.spec())
            self.subscription_name = opened.name
            if opened.already_expired:
                self.log.info("Window %s from an earlier try has already ended; deleting it", opened.name)
                self._delete_quietly()
                return opened.name
            self.log.info(
                "Window %s %s; deferring until it ends", opened.name, "reused" if opened.reused else "opened"
            )
            self.close_hook()
            self.defer(
                trigger=ClientMetricsWindowTrigger(
                    name=opened.name,
                    kafka_config_id=self.kafka_config_id,
                    poll_interval=self.poll_interval,
                    watch_deletion=self.watch_deletion,
                ),
                method_name="execute_complete",
                kwargs={"name": opened.name},
            )
        except TaskDeferred:
            raise
        except BaseException:
            self._delete_quietly()
            raise

    def execute_complete(
        self, context: Any, event: dict[str, Any] | None = None, name: str | None = None
    ) -> str:
        self.subscription_name = name or (event or {}).get("name")
        status = (event or {}).get("status")
        if status == STATUS_DELETED:
            self.log.info("Subscription %s was deleted before its window ended", self.subscription_name)
        self._delete_quietly(raise_errors=True)
        return str(self.subscription_name)

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None, context: Any) -> Any:
        """Also delete when the deferral failed or timed out (Airflow then never calls our method)."""
        self.subscription_name = (next_kwargs or {}).get("name", self.subscription_name)
        try:
            return super().resume_execution(next_method, next_kwargs, context)
        except BaseException:
            self._delete_quietly()
            raise

    def on_kill(self) -> None:
        self._delete_quietly()

    def _delete_quietly(self, raise_errors: bool = False) -> None:
        name = self.subscription_name
        if not name:
            return
        try:
            deleted = self.hook.delete(name)
            self.log.info("Subscription %s %s", name, "deleted" if deleted else "was already gone")
        except Exception:
            if raise_errors:
                raise
            self.log.exception("Could not delete %s; the kip714_reaper DAG will remove it after expiry", name)
        finally:
            self.close_hook()
