"""The client-metrics subscription model and Kafka's validation rules for it.

A ``Subscription`` can only exist in a valid state: every rule of KIP714-FACTS.md is checked in
``__post_init__``, so bad input is rejected with the field and the rule before the cluster is touched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from airflow_provider_kip714.contract.selectors import SELECTORS, MatchInput, MatchSelector, parse_match
from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.subscriptions.window_name import try_parse_window_name

METRICS_KEY = "metrics"
INTERVAL_KEY = "interval.ms"
MATCH_KEY = "match"
CONFIG_KEYS = (METRICS_KEY, INTERVAL_KEY, MATCH_KEY)
__all__ = [
    "SELECTORS",
    "MatchSelector",
    "Subscription",
    "SubscriptionChange",
    "parse_match",
    "parse_metrics",
]  # selectors: re-exported

MetricsInput = str | Iterable[str] | None
"""What callers may pass as metric-name prefixes: a comma list ``"a.,b."`` or an iterable of prefixes."""
IntervalInput = int | str | None
"""What callers may pass as ``interval_ms``: milliseconds as an int or its text; None for the default."""

MIN_INTERVAL_MS = 100
MAX_INTERVAL_MS = 3_600_000
DEFAULT_INTERVAL_MS = 300_000
ALL_METRICS = "*"
MAX_NAME_LENGTH = 255


def prefix_matches(metric_name: str, prefixes: Iterable[str]) -> bool:
    """Kafka's rule: a metric is sent when its name starts with a prefix; ``*`` or ``""`` is every metric."""
    return any(prefix in (ALL_METRICS, "") or metric_name.startswith(prefix) for prefix in prefixes)


def _split_list(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")] if value.strip() else []
    return [str(part).strip() for part in value]


def parse_metrics(value: MetricsInput) -> tuple[str, ...]:
    """Metric-name prefixes from a comma list or an iterable (validated by ``Subscription``)."""
    return tuple(_split_list(value))


def prefix_problem(prefix: str) -> str | None:
    """Why a metric-name prefix cannot be sent (Kafka splits the list on ','; names have no spaces or
    control characters), or None."""
    if "," in prefix or any(ch.isspace() or not ch.isprintable() for ch in prefix):
        return "a prefix cannot contain ',', whitespace or control characters"
    return None


def parse_interval_ms(value: IntervalInput) -> int:
    if value is None:
        return DEFAULT_INTERVAL_MS
    if isinstance(value, bool):
        raise SubscriptionValidationError("interval.ms", "must be an integer number of milliseconds", value)
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if re.fullmatch(r"-?[0-9]{11,}", text, re.ASCII):  # an integer, but far out of range
        raise SubscriptionValidationError(
            "interval.ms", f"must be between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} ms", value
        )
    if not re.fullmatch(r"-?[0-9]{1,10}", text, re.ASCII):
        raise SubscriptionValidationError(
            "interval.ms",
            f"must be an integer number of milliseconds between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS}",
            value,
        )
    return int(text)


def validate_name(name: str) -> None:
    if not isinstance(name, str) or not name:
        raise SubscriptionValidationError("name", "must be a non-empty string", name)
    if len(name) > MAX_NAME_LENGTH:
        raise SubscriptionValidationError("name", f"must be at most {MAX_NAME_LENGTH} characters", name)
    if any(ch.isspace() or not ch.isprintable() for ch in name):
        raise SubscriptionValidationError("name", "must not contain whitespace or control characters", name)


def _unchecked_selector(entry: str) -> MatchSelector:
    """A broker-held ``selector=regex`` entry kept verbatim, even where our rules would refuse it."""
    selector, _, pattern = entry.partition("=")
    unchecked = object.__new__(MatchSelector)
    object.__setattr__(unchecked, "selector", selector.strip())
    object.__setattr__(unchecked, "pattern", pattern.strip())
    return unchecked


@dataclass(frozen=True)
class Subscription:
    """One CLIENT_METRICS resource: which clients, which metric prefixes, how often.

    ``block`` means "these clients push nothing" (an empty metric list; there is no separate key).
    ``expires_at`` is set exactly when the name is a time-boxed window name, and must agree with it.
    """

    name: str
    metrics: tuple[str, ...] = ()
    interval_ms: int = DEFAULT_INTERVAL_MS
    match: tuple[MatchSelector, ...] = ()
    block: bool = False
    expires_at: datetime | None = field(default=None)
    problems: tuple[str, ...] = field(default=(), compare=False)
    """Set only on subscriptions read from a broker that this product's rules would refuse
    (someone else made them): they are shown and deletable, never a reason to fail a listing."""

    def __post_init__(self) -> None:
        validate_name(self.name)
        self._validate_metrics()
        self._validate_interval()
        self._validate_match()
        self._validate_expiry()

    def _validate_metrics(self) -> None:
        if isinstance(self.metrics, str):
            raise SubscriptionValidationError(
                "metrics", "must be a tuple of prefixes, not a string", self.metrics
            )
        seen: set[str] = set()
        for prefix in self.metrics:
            if not isinstance(prefix, str) or not prefix:
                raise SubscriptionValidationError(
                    "metrics", "prefixes must be non-empty strings (use '*' for every metric)", prefix
                )
            if (problem := prefix_problem(prefix)) is not None:
                raise SubscriptionValidationError("metrics", problem, prefix)
            if prefix in seen:
                raise SubscriptionValidationError("metrics", "duplicate prefix", prefix)
            seen.add(prefix)
        if ALL_METRICS in seen and len(seen) > 1:
            raise SubscriptionValidationError(
                "metrics",
                "'*' already means every metric; do not mix it with prefixes",
                ",".join(self.metrics),
            )
        if self.block and self.metrics:
            raise SubscriptionValidationError(
                "block",
                "a blocking subscription has no metrics; drop --metrics or --block",
                ",".join(self.metrics),
            )

    def _validate_interval(self) -> None:
        if isinstance(self.interval_ms, bool) or not isinstance(self.interval_ms, int):
            raise SubscriptionValidationError("interval.ms", "must be an integer", self.interval_ms)
        if not MIN_INTERVAL_MS <= self.interval_ms <= MAX_INTERVAL_MS:
            raise SubscriptionValidationError(
                "interval.ms", f"must be between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} ms", self.interval_ms
            )

    def _validate_match(self) -> None:
        seen: set[str] = set()
        for selector in self.match:
            if not isinstance(selector, MatchSelector):
                raise SubscriptionValidationError("match", "entries must be MatchSelector", selector)
            if selector.selector in seen:
                raise SubscriptionValidationError(
                    "match", "each selector may appear once (all selectors must match)", selector.selector
                )
            seen.add(selector.selector)

    def _validate_expiry(self) -> None:
        window = try_parse_window_name(self.name)
        if self.expires_at is None:
            if window is not None:
                object.__setattr__(self, "expires_at", window.expires_at)
            return
        if self.expires_at.tzinfo is None or self.expires_at.utcoffset() is None:
            raise SubscriptionValidationError("expires_at", "must be timezone-aware", self.expires_at)
        if window is None:
            raise SubscriptionValidationError(
                "expires_at",
                "Kafka stores no expiry key; only window names (kip714-<label>-exp<UTC>-<8 hex>) can expire",
                self.name,
            )
        wanted = self.expires_at.astimezone(UTC).replace(microsecond=0)
        if wanted != window.expires_at:
            raise SubscriptionValidationError(
                "expires_at",
                f"disagrees with the expiry in the name ({window.expires_at.isoformat()})",
                wanted,
            )
        object.__setattr__(self, "expires_at", window.expires_at)

    @classmethod
    def from_spec(
        cls,
        name: str,
        metrics: MetricsInput = None,
        interval_ms: IntervalInput = None,
        match: MatchInput = None,
        block: bool = False,
        expires_at: datetime | None = None,
    ) -> Subscription:
        """Build from loose user input (comma lists, strings, mappings)."""
        return cls(
            name=name,
            metrics=parse_metrics(metrics),
            interval_ms=parse_interval_ms(interval_ms),
            match=parse_match(match),
            block=block,
            expires_at=expires_at,
        )

    @classmethod
    def from_configs(cls, name: str, configs: Mapping[str, str | None]) -> Subscription:
        """Build from the key/values a broker describes; never raises for a foreign subscription.

        What the broker holds is valid by the broker's rules; where ours are stricter (``*`` mixed with
        prefixes, duplicates, a selector twice, an odd name) the entry is kept as the broker has it,
        with ``problems`` saying what our validation refused.
        """
        unknown = sorted(set(configs) - set(CONFIG_KEYS))
        if unknown:  # Kafka allows no other key: a contract break, not a foreign subscription
            raise SubscriptionValidationError("configs", f"unknown keys; Kafka allows {CONFIG_KEYS}", unknown)
        try:
            return cls._checked_from_configs(name, configs)
        except SubscriptionValidationError as err:
            return cls._foreign(name, configs, str(err))

    @classmethod
    def _checked_from_configs(cls, name: str, configs: Mapping[str, str | None]) -> Subscription:
        metrics = parse_metrics(configs.get(METRICS_KEY) or "")
        return cls.from_spec(
            name=name,
            metrics=metrics,
            interval_ms=configs.get(INTERVAL_KEY) or DEFAULT_INTERVAL_MS,
            match=configs.get(MATCH_KEY) or "",
            block=not metrics,
        )

    @classmethod
    def _foreign(cls, name: str, configs: Mapping[str, str | None], problem: str) -> Subscription:
        """An unchecked instance holding the broker's values as they are (see ``from_configs``)."""
        metrics = parse_metrics(configs.get(METRICS_KEY) or "")
        try:
            interval_ms = int(str(configs.get(INTERVAL_KEY) or DEFAULT_INTERVAL_MS).strip())
        except ValueError:
            interval_ms = DEFAULT_INTERVAL_MS
        window = try_parse_window_name(name) if isinstance(name, str) else None
        values = {
            "name": str(name),
            "metrics": metrics,
            "interval_ms": interval_ms,
            "match": tuple(_unchecked_selector(entry) for entry in parse_metrics(configs.get(MATCH_KEY))),
            "block": not metrics,
            "expires_at": window.expires_at if window else None,
            "problems": (problem,),
        }
        subscription = object.__new__(cls)
        for key, value in values.items():
            object.__setattr__(subscription, key, value)
        return subscription

    def to_configs(self) -> dict[str, str]:
        """The three keys as Kafka stores them (comma lists, milliseconds as text)."""
        return {
            METRICS_KEY: ",".join(self.metrics),
            INTERVAL_KEY: str(self.interval_ms),
            MATCH_KEY: ",".join(selector.render() for selector in self.match),
        }

    def same_content(self, other: Subscription) -> bool:
        """True when both would make the broker behave the same (names and list order aside)."""
        return (
            set(self.metrics) == set(other.metrics)
            and self.interval_ms == other.interval_ms
            and set(self.match) == set(other.match)
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready view for the CLI and XCom (no secrets live here)."""
        extra = {"problems": list(self.problems)} if self.problems else {}
        return {
            **extra,
            "name": self.name,
            "metrics": list(self.metrics),
            "interval_ms": self.interval_ms,
            "match": [selector.render() for selector in self.match],
            "block": not self.metrics,
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
        }


@dataclass(frozen=True)
class SubscriptionChange:
    """An alteration of one subscription, validated where it enters (``of``) and applied later to what
    the broker holds (``applied_to``): prefixes added and removed, and a new interval or match if any.

    Added prefixes, the interval and the match follow ``Subscription``'s rules. A prefix to remove need
    only be non-empty: removing one our rules would refuse is how a foreign subscription's is cleaned up.
    """

    name: str
    add_metrics: tuple[str, ...] = ()
    remove_metrics: tuple[str, ...] = ()
    interval_ms: int | None = None
    match: tuple[MatchSelector, ...] | None = None

    def __post_init__(self) -> None:
        """Built directly (not through ``of``), the pieces must at least have their types: a string where
        a tuple belongs would be taken apart character by character."""
        validate_name(self.name)
        for prefixes in (self.add_metrics, self.remove_metrics):
            if not isinstance(prefixes, tuple) or not all(isinstance(p, str) and p for p in prefixes):
                raise SubscriptionValidationError(
                    "metrics", "must be a tuple of non-empty prefixes", prefixes
                )
        if self.interval_ms is not None and (
            isinstance(self.interval_ms, bool) or not isinstance(self.interval_ms, int)
        ):
            raise SubscriptionValidationError(
                "interval.ms", "must be an integer number of milliseconds", self.interval_ms
            )
        if self.match is not None and not (
            isinstance(self.match, tuple) and all(isinstance(s, MatchSelector) for s in self.match)
        ):
            raise SubscriptionValidationError("match", "must be a tuple of selectors", self.match)

    @classmethod
    def of(
        cls,
        name: str,
        *,
        add_metrics: MetricsInput = None,
        remove_metrics: MetricsInput = None,
        interval_ms: IntervalInput = None,
        match: MatchInput = None,
    ) -> SubscriptionChange:
        """From loose user input, each piece checked before anything connects (the name with the first)."""
        added = Subscription.from_spec(name, metrics=add_metrics).metrics
        removed = parse_metrics(remove_metrics)
        if "" in removed:
            raise SubscriptionValidationError("metrics", "a prefix to remove cannot be empty", remove_metrics)
        interval = Subscription.from_spec(name, interval_ms=interval_ms).interval_ms
        selectors = Subscription.from_spec(name, match=match).match
        return cls(
            name,
            added,
            removed,
            None if interval_ms is None else interval,
            None if match is None else selectors,
        )

    def applied_to(self, current: Subscription) -> Subscription:
        """The end state: ``current``'s prefixes less the removed, then the added ones not already there."""
        if current.name != self.name:
            raise SubscriptionValidationError("name", f"the change is for {self.name!r}", current.name)
        removed = set(self.remove_metrics)
        metrics = tuple(prefix for prefix in current.metrics if prefix not in removed)
        metrics += tuple(prefix for prefix in self.add_metrics if prefix not in metrics)
        return Subscription(
            name=self.name,
            metrics=metrics,
            interval_ms=current.interval_ms if self.interval_ms is None else self.interval_ms,
            match=current.match if self.match is None else self.match,
        )
