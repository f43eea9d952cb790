"""CLIENT_METRICS subscriptions over kafka-python's admin client, without any Airflow dependency.

The Airflow hook, the operators and the ``kip714 subscriptions`` CLI all go through this class, so
the rules (idempotent create, delete-missing-is-fine, reap-only-our-names) live in one place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import kafka.errors as kafka_errors
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

from airflow_provider_kip714.clock import Clock, SystemClock
from airflow_provider_kip714.exceptions import (
    ClientMetricsAdminError,
    ClusterUnreachableError,
    SubscriptionValidationError,
)
from airflow_provider_kip714.subscriptions.bootstrap_refusals import BootstrapRefusals, tls_refusal
from airflow_provider_kip714.subscriptions.model import (
    CONFIG_KEYS,
    INTERVAL_KEY,
    MATCH_KEY,
    METRICS_KEY,
    Subscription,
    SubscriptionChange,
)
from airflow_provider_kip714.subscriptions.tls_probe import refused_certificate
from airflow_provider_kip714.subscriptions.window_name import (
    WindowName,
    creation_problem,
    try_parse_window_name,
)

log = logging.getLogger(__name__)

DEFAULT_BOOTSTRAP_TIMEOUT_MS = 15_000
DEFAULT_REQUEST_TIMEOUT_MS = 15_000
VISIBILITY_TIMEOUT_S = 10.0
_UNREACHABLE: tuple[type[Exception], ...] = tuple(
    getattr(kafka_errors, name)
    for name in ("KafkaConnectionError", "KafkaTimeoutError", "NoBrokersAvailable")
    if hasattr(kafka_errors, name)  # kafka-python 3 has no NoBrokersAvailable
)
"""kafka-python's errors that mean the cluster could not be reached (names differ across versions; an
``except`` naming a missing one fails with AttributeError whenever any error reaches it)."""


class UpsertOutcome(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class UpsertResult:
    name: str
    outcome: UpsertOutcome


class _DropAdminConfigLog(logging.Filter):
    """kafka-python logs its whole configuration (password included) at DEBUG when an admin starts."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Starting KafkaAdminClient with configuration")


_admin_logger = logging.getLogger("kafka.admin.client")
if not any(isinstance(existing, _DropAdminConfigLog) for existing in _admin_logger.filters):
    _admin_logger.addFilter(_DropAdminConfigLog())


def describe_target(kwargs: Mapping[str, Any]) -> str:
    """Where we connect, for error messages: servers and protocol, never credentials."""
    servers = kwargs.get("bootstrap_servers", "?")
    shown = ",".join(servers) if isinstance(servers, list | tuple) else str(servers)
    return f"{shown} ({kwargs.get('security_protocol', 'PLAINTEXT')})"


def _error_text(err: BaseException) -> str:
    kind = type(err).__name__
    text = str(err)
    return text if text.startswith(kind) else f"{kind}: {text}"


def _connect(kwargs: Mapping[str, Any]) -> KafkaAdminClient:
    settings = {
        "bootstrap_timeout_ms": DEFAULT_BOOTSTRAP_TIMEOUT_MS,
        "request_timeout_ms": DEFAULT_REQUEST_TIMEOUT_MS,
        "client_id": "kip714-client-metrics-admin",
        **kwargs,
    }
    target = describe_target(settings)
    refused = refused_certificate(settings)
    if refused is not None:
        raise ClusterUnreachableError(tls_refusal(target, refused))
    refusals = BootstrapRefusals()
    kafka_log = logging.getLogger("kafka")
    level, propagate = kafka_log.level, kafka_log.propagate
    if kafka_log.getEffectiveLevel() > logging.WARNING:
        # silenced (the CLI does): hear its warnings for the connect, still show them to no one else
        kafka_log.setLevel(logging.WARNING)
        kafka_log.propagate = False
    kafka_log.addHandler(refusals)
    try:
        return KafkaAdminClient(**settings, kafka_client=refusals.client_factory)
    except kafka_errors.KafkaConfigurationError as err:
        raise ClusterUnreachableError(f"bad client settings for {target}: {err}") from None
    except (kafka_errors.KafkaError, OSError) as err:
        if refusals.tls is not None:
            raise ClusterUnreachableError(tls_refusal(target, refusals.tls)) from None
        if refusals.login is not None:
            raise ClusterUnreachableError(f"authentication to {target} failed: {refusals.login}") from None
        kind = type(err).__name__.lower()
        if "auth" in kind or "sasl" in kind:
            raise ClusterUnreachableError(f"authentication to {target} failed: {_error_text(err)}") from None
        raise ClusterUnreachableError(
            f"cannot reach Kafka at {target} within {settings['bootstrap_timeout_ms']} ms: {_error_text(err)}"
        ) from None
    finally:
        kafka_log.removeHandler(refusals)
        kafka_log.setLevel(level)
        kafka_log.propagate = propagate


class ClientMetricsAdmin:
    """Manage CLIENT_METRICS resources on one cluster. Use as a context manager to close the client."""

    def __init__(
        self,
        kafka_python_kwargs: Mapping[str, Any],
        clock: Clock | None = None,
        connect: Callable[[Mapping[str, Any]], KafkaAdminClient] = _connect,
    ) -> None:
        self._kwargs = dict(kafka_python_kwargs)
        self._connect = connect
        self._client: KafkaAdminClient | None = None
        self.clock: Clock = clock or SystemClock()

    @property
    def target(self) -> str:
        return describe_target(self._kwargs)

    @property
    def client(self) -> KafkaAdminClient:
        if self._client is None:
            self._client = self._connect(self._kwargs)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close()

    def __enter__(self) -> ClientMetricsAdmin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, action: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except ClusterUnreachableError:
            raise
        except _UNREACHABLE as err:
            raise ClusterUnreachableError(f"{action} on {self.target}: {_error_text(err)}") from None
        except kafka_errors.KafkaError as err:
            raise ClientMetricsAdminError(f"{action} on {self.target}: {_error_text(err)}") from None

    # ---- reading -------------------------------------------------------------------------------

    def list_names(self) -> list[str]:
        """Names of every CLIENT_METRICS resource, sorted."""
        listed = self._call(
            "listing client-metrics subscriptions",
            lambda: self.client.list_config_resources([ConfigResourceType.CLIENT_METRICS]),
        )
        return sorted(listed.get("client_metrics", []))

    def exists(self, name: str) -> bool:
        return name in self.list_names()

    def _describe_raw(self, names: list[str]) -> dict[str, dict[str, str]]:
        if not names:
            return {}
        resources = [ConfigResource(ConfigResourceType.CLIENT_METRICS, name) for name in names]
        described = self._call(
            "describing client-metrics subscriptions",
            lambda: self.client.describe_configs(resources, config_filter="all"),
        )
        by_name = described.get("client_metrics", {})
        result: dict[str, dict[str, str]] = {}
        for name in names:
            entries = by_name.get(name, {})
            result[name] = {key: entries[key]["value"] for key in CONFIG_KEYS if key in entries}
        return result

    def describe(self, name: str) -> Subscription | None:
        """The subscription as the broker holds it, or None when it does not exist."""
        if not self.exists(name):
            return None
        return Subscription.from_configs(name, self._describe_raw([name])[name])

    def describe_all(self) -> list[Subscription]:
        names = self.list_names()
        return [
            Subscription.from_configs(name, configs) for name, configs in self._describe_raw(names).items()
        ]

    def windows(self) -> list[WindowName]:
        """Every subscription whose name follows the time-boxed pattern."""
        return [window for window in map(try_parse_window_name, self.list_names()) if window is not None]

    def find_window(self, label: str, suffix: str) -> WindowName | None:
        """The window with this label and suffix (what a retried task derives), if any."""
        matches = [window for window in self.windows() if window.label == label and window.suffix == suffix]
        return max(matches, key=lambda window: window.expires_at) if matches else None

    # ---- writing -------------------------------------------------------------------------------

    def _alter(
        self,
        name: str,
        configs: dict[str, tuple[AlterConfigOp, str | None]],
        action: str,
        validate_only: bool = False,
    ) -> str:
        """Send one IncrementalAlterConfigs; returns "OK" or, with ``validate_only``, the refusal."""
        resource = ConfigResource(ConfigResourceType.CLIENT_METRICS, name, configs)
        outcome = self._call(
            f"{action} {name!r}",
            lambda: self.client.alter_configs(
                [resource], validate_only=validate_only, raise_on_unknown=False, incremental=True
            ),
        )
        result = str(outcome.get("client_metrics", {}).get(name, "missing from the response"))
        if result != "OK" and not validate_only:
            raise ClientMetricsAdminError(f"{action} {name!r} on {self.target}: broker said {result}")
        return result

    def validate(self, subscription: Subscription) -> None:
        """Ask the broker whether it would accept this content (a validate-only alter; nothing changes).

        The broker judges regexes with Java's engine, which differs from Python's (``\\p{L}`` is valid
        Java; ``(?P<x>a)`` is not), so this, not a local compile, decides. Raises
        ``SubscriptionValidationError`` naming the field when the broker refuses.
        """
        configs = {key: (AlterConfigOp.SET, value) for key, value in subscription.to_configs().items()}
        result = self._alter(subscription.name, configs, "validating subscription", validate_only=True)
        if result == "OK":
            return
        lowered = result.lower()
        if "invalidrequest" not in lowered and "invalidconfig" not in lowered:
            raise ClientMetricsAdminError(f"validating {subscription.name!r} on {self.target}: {result}")
        keys = (MATCH_KEY, INTERVAL_KEY, METRICS_KEY)
        field = next((key for key in keys if key in lowered), "subscription")
        raise SubscriptionValidationError(field, f"the broker refused it: {result}")

    def _check_expiry(self, subscription: Subscription, *, creating: bool) -> None:
        problem = creation_problem(subscription.name, self.clock.now(), creating=creating)
        if problem is not None:
            raise SubscriptionValidationError("name", problem, subscription.name)

    def upsert(self, subscription: Subscription) -> UpsertResult:
        """Create or update; the same content changes nothing (no write is sent)."""
        current = self.describe(subscription.name)
        if current is not None and current.same_content(subscription):
            log.info("Subscription %s already up to date", subscription.name)
            return UpsertResult(subscription.name, UpsertOutcome.UNCHANGED)
        self._check_expiry(subscription, creating=current is None)
        self.validate(subscription)
        configs = {key: (AlterConfigOp.SET, value) for key, value in subscription.to_configs().items()}
        self._alter(subscription.name, configs, "writing subscription")
        self._await_visible(
            f"{subscription.name} written",
            lambda: (
                (found := self.describe(subscription.name)) is not None and found.same_content(subscription)
            ),
        )
        outcome = UpsertOutcome.CREATED if current is None else UpsertOutcome.UPDATED
        log.info("Subscription %s %s", subscription.name, outcome.value)
        return UpsertResult(subscription.name, outcome)

    def alter(self, change: SubscriptionChange) -> Subscription:
        """Apply ``change`` to the subscription the broker holds; returns the new state."""
        name = change.name
        current = self.describe(name)
        if current is None:
            raise ClientMetricsAdminError(f"cannot alter {name!r}: no such subscription on {self.target}")
        # Validate the end state before writing anything.
        wanted = change.applied_to(current)
        # Kafka 4.4 refuses APPEND/SUBTRACT on CLIENT_METRICS ("Can't APPEND to key metrics because its
        # type is not LIST"), so the new list is computed here and SET, like kafka-client-metrics.sh does.
        configs: dict[str, tuple[AlterConfigOp, str | None]] = {}
        if set(wanted.metrics) != set(current.metrics):
            configs[METRICS_KEY] = (AlterConfigOp.SET, ",".join(wanted.metrics))
        if wanted.interval_ms != current.interval_ms:
            configs[INTERVAL_KEY] = (AlterConfigOp.SET, str(wanted.interval_ms))
        if set(wanted.match) != set(current.match):
            configs[MATCH_KEY] = (AlterConfigOp.SET, ",".join(selector.render() for selector in wanted.match))
        if configs:
            self.validate(wanted)
            self._alter(name, configs, "altering subscription")
            self._await_visible(
                f"{name} altered",
                lambda: (found := self.describe(name)) is not None and found.same_content(wanted),
            )
        return wanted

    def delete(self, name: str) -> bool:
        """Remove a subscription by deleting every key; False (not an error) when it was not there.

        The delete is always sent: a listing can lag a just-made change by a few milliseconds, and
        the broker accepts deleting keys of a resource that does not exist.
        """
        existed = self.exists(name)
        configs: dict[str, tuple[AlterConfigOp, str | None]] = {
            key: (AlterConfigOp.DELETE, None) for key in CONFIG_KEYS
        }
        self._alter(name, configs, "deleting subscription")
        self._await_visible(f"{name} deleted", lambda: not self.exists(name))
        log.info("Subscription %s %s", name, "deleted" if existed else "did not exist; nothing to delete")
        return existed

    def reap(self, now: datetime | None = None, dry_run: bool = False) -> list[str]:
        """Delete window subscriptions whose expiry has passed, or whose expiry no window of ours can
        have (``limits.expiry_problem``); never touches other names. Deletes use the listed name."""
        moment = now if now is not None else self.clock.now()
        expired = sorted(str(window) for window in self.windows() if window.is_reapable(moment))
        if dry_run:
            return expired
        return [name for name in expired if self.delete(name)]

    def _await_visible(self, change: str, visible: Callable[[], bool]) -> None:
        """Read-your-writes: the broker applies config changes from the metadata log asynchronously,
        so a read right after a write can miss it (about 1 read in 12 on a local broker)."""
        deadline = time.monotonic() + VISIBILITY_TIMEOUT_S
        while not visible():
            if time.monotonic() >= deadline:
                log.warning(
                    "%s on %s but not visible after %.0f s", change, self.target, VISIBILITY_TIMEOUT_S
                )
                return
            time.sleep(0.05)

    def test_connection(self) -> tuple[bool, str]:
        """(ok, message) in Airflow's test-connection shape; never raises for a bad connection."""
        try:
            count = len(self.list_names())
        except (ClusterUnreachableError, ClientMetricsAdminError) as err:
            return False, str(err)
        return True, f"Connected to {self.target}; {count} client-metrics subscription(s)"
