"""Operators for KIP-714 client-metrics subscriptions.

``ClientMetricsTroubleshootingWindowOperator`` is the all-in-one form: create, wait in the triggerer,
delete; it deletes on failure, kill and timeout, and a retry finds its own subscription again because
the name's suffix is derived from the task instance and the window spec.

Before a window's create call reaches the broker, the operator (1) records its connection for the
``kip714_reaper`` DAG (``settings.record_window_cluster``) and (2) pushes the window's name to XCom
(key ``window_name``). So a create that succeeds on the broker while its task fails (an alter
timeout, a worker killed before the result is pushed) still leaves a window the reaper sweeps within
one reaper period after its expiry; when the task survives the failure it deletes the window itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk.exceptions import TaskDeferred

from airflow_provider_kip714.contract.selectors import MatchInput
from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.hooks.client_metrics import ClientMetricsHook
from airflow_provider_kip714.operators.base import ClientMetricsBaseOperator
from airflow_provider_kip714.settings import record_window_cluster
from airflow_provider_kip714.subscriptions.duration import parse_window_length
from airflow_provider_kip714.subscriptions.model import IntervalInput, MetricsInput, Subscription
from airflow_provider_kip714.subscriptions.window_name import derive_suffix, format_window_name, slugify_label
from airflow_provider_kip714.triggers.client_metrics_window import STATUS_DELETED, ClientMetricsWindowTrigger
from airflow_provider_kip714.troubleshooting.guardrails import check_subscription

SPEC_TEMPLATE_FIELDS = ("window_label", "window", "metrics", "interval_ms", "match")
WINDOW_NAME_XCOM_KEY = "window_name"


@dataclass(frozen=True)
class OpenedWindow:
    """A window on the cluster: what the create operator returns (as ``as_xcom()``)."""

    name: str
    start: datetime
    end: datetime
    reused: bool
    already_expired: bool

    def as_xcom(self, kafka_config_id: str) -> dict[str, Any]:
        """The XCom downstream tasks use: name, start and end (ISO-8601 UTC) and the connection."""
        return {
            "name": self.name,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "kafka_config_id": kafka_config_id,
        }


def window_suffix(context: Mapping[str, Any], label: str, length: timedelta) -> str:
    """Same task instance + same window spec -> same suffix, across retries and worker crashes."""
    ti = context["ti"]
    return derive_suffix(
        ti.dag_id, ti.task_id, context["run_id"], ti.map_index, label, int(length.total_seconds())
    )


def announce_window_name(context: Mapping[str, Any], name: str) -> None:
    """Push the name to XCom before the broker is asked, so it is known even if the task then dies."""
    push = getattr(context.get("ti"), "xcom_push", None)
    if push is not None:
        push(key=WINDOW_NAME_XCOM_KEY, value=name)


def open_window(
    hook: ClientMetricsHook,
    label: str,
    suffix: str,
    length: timedelta,
    spec: Mapping[str, Any],
    before_create: Callable[[str], None] = lambda name: None,
) -> OpenedWindow:
    """Reuse the window a previous try created (same label and suffix) or create it; idempotent."""
    now = hook.admin.clock.now()
    existing = hook.find_window(label, suffix)
    if existing is not None:
        name = str(existing)
        start = existing.expires_at - length
        if existing.is_expired(now):
            return OpenedWindow(name, start, existing.expires_at, reused=True, already_expired=True)
        before_create(name)
        hook.create(Subscription.from_spec(name=name, **spec))
        return OpenedWindow(name, start, existing.expires_at, reused=True, already_expired=False)
    name = format_window_name(label, now + length, suffix)
    end = Subscription.from_spec(name=name, **spec).expires_at or now + length  # whole seconds
    # advice before a new window: logs a WARNING per library that pushes none of the prefixes, or whose
    # estimated push exceeds telemetry.max.bytes (troubleshooting/guardrails.py); never blocks the window
    check_subscription(Subscription.from_spec(name=name, **spec), admin=getattr(hook, "admin", None))
    before_create(name)
    hook.create(Subscription.from_spec(name=name, **spec))
    return OpenedWindow(name, end - length, end, reused=False, already_expired=False)


class _SpecMixin:
    """Holds the subscription spec arguments and validates them before any cluster call."""

    metrics: MetricsInput
    interval_ms: IntervalInput
    match: MatchInput
    block: bool

    def _set_spec(
        self,
        window: str | int | float | timedelta | None,
        window_label: str | None,
        metrics: MetricsInput,
        interval_ms: IntervalInput,
        match: MatchInput,
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
    """Create (idempotently) a subscription; returns ``{"name", "start", "end", "kafka_config_id"}``.

    Give ``name`` for a plain subscription (``start``/``end`` are then None), or ``window``, the window's
    length (``"30m"``, seconds, timedelta; at most ``limits.MAX_WINDOW``, 24 h) for a time-boxed one named
    ``kip714-<window_label>-exp<UTC>-<8 hex>`` (label defaults to ``<dag_id>-<task_id>``); a retry
    finds the same window. Downstream tasks read the window's bounds from this XCom, never recompute them.
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
        metrics: MetricsInput = None,
        interval_ms: IntervalInput = None,
        match: MatchInput = None,
        block: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.name = name
        self._set_spec(window, window_label, metrics, interval_ms, match, block)

    def execute(self, context: Any) -> dict[str, Any]:
        if (self.name is None) == (self.window is None):
            raise SubscriptionValidationError("name/window", "give exactly one of name or window")
        try:
            if self.name is not None:
                subscription = Subscription.from_spec(name=self.name, **self.spec())
                result = self.hook.create(subscription)
                self.log.info("Subscription %s: %s", subscription.name, result.outcome.value)
                return {
                    "name": subscription.name,
                    "start": None,
                    "end": None,
                    "kafka_config_id": self.kafka_config_id,
                }
            return self._open(context)
        finally:
            self.close_hook()

    def _open(self, context: Any) -> dict[str, Any]:
        length = parse_window_length(self.window)
        label = slugify_label(self.window_label or f"{self.dag_id}-{self.task_id}")
        Subscription.from_spec(name="validation-only", **self.spec())  # fail before touching the cluster
        record_window_cluster(self.kafka_config_id)
        announced: list[str] = []

        def before_create(name: str) -> None:
            announce_window_name(context, name)
            announced.append(name)

        try:
            opened = open_window(
                self.hook, label, window_suffix(context, label, length), length, self.spec(), before_create
            )
        except BaseException:
            for name in announced:  # the broker may have applied it before the call failed
                delete_quietly(self.hook, name, self.log)
            raise
        self.log.info(
            "Window subscription %s (%s) from %s to %s",
            opened.name,
            "reused" if opened.reused else "created",
            opened.start.isoformat(),
            opened.end.isoformat(),
        )
        return opened.as_xcom(self.kafka_config_id)


def delete_quietly(hook: ClientMetricsHook, name: str, log: Any) -> None:
    """Best effort: the reaper deletes it after its expiry when this fails."""
    try:
        hook.delete(name)
    except Exception:
        log.exception("Could not delete %s; the kip714_reaper DAG will remove it after expiry", name)


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
        metrics: MetricsInput = None,
        interval_ms: IntervalInput = None,
        match: MatchInput = None,
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
        length = parse_window_length(self.window)
        label = slugify_label(self.window_label or f"{self.dag_id}-{self.task_id}")
        Subscription.from_spec(name="validation-only", **self.spec())  # fail before touching the cluster
        record_window_cluster(self.kafka_config_id)

        def before_create(name: str) -> None:
            announce_window_name(context, name)
            self.subscription_name = name

        try:
            opened = open_window(
                self.hook, label, window_suffix(context, label, length), length, self.spec(), before_create
            )
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
