"""Live mode's knobs, from the environment of the DAG processor and workers, checked once.

| variable | default | what |
|---|---|---|
| ``KIP714_LIVE_LOOKBACK`` | ``3m`` | the trailing window each cycle analyses |
| ``KIP714_LIVE_BUCKET`` | ``10s`` | rollup bucket of the live tables (must divide an hour) |
| ``KIP714_LIVE_BASELINE_FOR`` | ``30s`` | how long a baseline breach must last to be an anomaly |
| ``KIP714_LIVE_HISTORY`` | ``1h`` | own-baseline history, read from the hourly rollups table |
| ``KIP714_UI_BASE_URL`` | unset | the API server's URL, for the link a finding carries |
| ``KIP714_LIVE_EVERY`` | ``continuous`` | back to back, or one cycle per interval: 10 s to lookback - 15 s |
| ``KIP714_LIVE_CAPABILITIES_EVERY`` | ``10m`` | how often a cycle refreshes capabilities (10 s-24 h) |

The lookback bounds a cycle's work: each cycle reads the landing chunks of the last lookback (plus one
cycle of slack), never the whole hour, so its cost does not grow with the minute of the hour. It must
cover a few push intervals of the clients (silent-client detection) and the breach duration.

A cycle costs what its lookback holds (at 1,000 instances on 2 cores, 17 s of CPU with almost nothing
in it, 37-48 s with a full one, docs/benchmarks.md): back to back, cycles keep most of a small machine
busy. ``KIP714_LIVE_EVERY`` trades freshness for that CPU: one cycle per interval (docs/live.md, "Sizing").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from airflow_provider_kip714.contract.client_text import safe_link
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.subscriptions.duration import parse_duration

LOOKBACK_ENV: Final = "KIP714_LIVE_LOOKBACK"
BUCKET_ENV: Final = "KIP714_LIVE_BUCKET"
BASELINE_FOR_ENV: Final = "KIP714_LIVE_BASELINE_FOR"
HISTORY_ENV: Final = "KIP714_LIVE_HISTORY"
UI_BASE_URL_ENV: Final = "KIP714_UI_BASE_URL"
EVERY_ENV: Final = "KIP714_LIVE_EVERY"
CAPABILITIES_EVERY_ENV: Final = "KIP714_LIVE_CAPABILITIES_EVERY"
CONTINUOUS: Final = "continuous"
_SECONDS_PER_HOUR: Final = 3600
SCHEDULING_MARGIN: Final = timedelta(seconds=15)
"""How much shorter than the lookback a paced interval (``KIP714_LIVE_EVERY``) must be. A cycle analyses
``[now - lookback, now)`` and the last one's window ended when it began, so the windows meet only if cycles
begin at most a lookback apart. An interval as long as the lookback never meets it: the bench's exactly
paced 1m cycles with a 1m lookback each left under a millisecond in no live window (docs/benchmarks.md,
session 28). Airflow starts a timed run's task some seconds after its interval ends, by an amount that
varies from run to run; 15 s is an allowance for that variation, not a measurement of it. Cycles must
also finish within the interval: ``kip714_live`` runs one at a time, so a late one delays the next."""


@dataclass(frozen=True)
class LiveSettings:
    lookback: timedelta = timedelta(minutes=3)
    bucket: timedelta = timedelta(seconds=10)
    baseline_for: timedelta = timedelta(seconds=30)
    history: timedelta = timedelta(hours=1)
    ui_base_url: str | None = None
    every: timedelta | None = None
    """None: cycles back to back (``@continuous``); else one cycle per this interval."""
    capabilities_every: timedelta = timedelta(minutes=10)
    """Which metrics each library pushes changes with a deployment, not within minutes: the first cycle of
    each such period refreshes the capabilities table, the others skip that step (about 4 s of a
    30-second cycle's task CPU at 1,000 instances, docs/benchmarks.md)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> LiveSettings:
        """The settings, each variable checked: a bad one raises naming the variable and the rule."""
        defaults = cls()

        def duration(name: str, default: timedelta, maximum: timedelta) -> timedelta:
            text = environ.get(name, "").strip()
            return parse_duration(text, name, maximum) if text else default

        settings = cls(
            lookback=duration(LOOKBACK_ENV, defaults.lookback, timedelta(hours=1)),
            bucket=duration(BUCKET_ENV, defaults.bucket, timedelta(hours=1)),
            baseline_for=duration(BASELINE_FOR_ENV, defaults.baseline_for, timedelta(hours=1)),
            history=duration(HISTORY_ENV, defaults.history, timedelta(days=7)),
            ui_base_url=environ.get(UI_BASE_URL_ENV, "").strip().rstrip("/") or None,
            every=_every(environ.get(EVERY_ENV, "").strip()),
            capabilities_every=duration(
                CAPABILITIES_EVERY_ENV, defaults.capabilities_every, timedelta(hours=24)
            ),
        )
        if settings.ui_base_url is not None and safe_link(settings.ui_base_url) is None:
            raise Kip714Error(
                f"{UI_BASE_URL_ENV}: must be an http:// or https:// URL (the link findings carry)"
            )
        bucket_seconds = settings.bucket.total_seconds()
        if bucket_seconds != int(bucket_seconds) or _SECONDS_PER_HOUR % int(bucket_seconds):
            raise Kip714Error(f"{BUCKET_ENV}: must divide one hour (e.g. 10s, 30s, 1m)")
        if settings.capabilities_every < timedelta(seconds=10):
            raise Kip714Error(f"{CAPABILITIES_EVERY_ENV}: must be at least 10s")
        if settings.lookback < 2 * settings.bucket:
            raise Kip714Error(f"{LOOKBACK_ENV}: must be at least two buckets ({BUCKET_ENV})")
        if settings.every is not None and (problem := interval_problem(settings.every, settings.lookback)):
            raise Kip714Error(f"{EVERY_ENV}: {problem}")
        return settings

    @property
    def schedule(self) -> str | timedelta:
        """The ``kip714_live`` DAG's schedule."""
        return "@continuous" if self.every is None else self.every

    @property
    def bucket_flag(self) -> str:
        return f"{int(self.bucket.total_seconds())}s"


def interval_problem(every: timedelta, lookback: timedelta, lookback_name: str = LOOKBACK_ENV) -> str | None:
    """Why one cycle per ``every`` would leave pushes in no live window with this ``lookback``, or None."""
    if every + SCHEDULING_MARGIN <= lookback:
        return None
    return (
        f"must be at least {seconds_text(SCHEDULING_MARGIN)} shorter than {lookback_name} "
        f"({seconds_text(lookback)}), or pushes between cycles fall in no live window "
        f"(got {seconds_text(every)})"
    )


def seconds_text(duration: timedelta) -> str:
    """A duration as the settings take it, in seconds (``90s``), for messages."""
    return f"{duration.total_seconds():g}s"


def _every(text: str) -> timedelta | None:
    if text in ("", CONTINUOUS):
        return None
    every = parse_duration(text, EVERY_ENV, timedelta(hours=1))
    if every < timedelta(seconds=10):
        raise Kip714Error(f"{EVERY_ENV}: must be {CONTINUOUS} or at least 10s (got {text[:40]!r})")
    return every
