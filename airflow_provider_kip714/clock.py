"""An injectable clock, so expiry decisions (reaper, windows) can be tested without waiting.

Everything that asks "what time is it?" for a subscription window takes a ``Clock``; production
code uses ``SystemClock``, tests use ``ManualClock`` and move time by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Source of the current time as an aware UTC datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


def _require_aware_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"clock time must be timezone-aware, got naive {moment.isoformat()}")
    return moment.astimezone(UTC)


class ManualClock:
    """A clock that only moves when told to; for tests and simulations."""

    def __init__(self, start: datetime) -> None:
        self._now = _require_aware_utc(start)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> datetime:
        """Move time forward (or back, with a negative delta) and return the new time."""
        self._now = self._now + delta
        return self._now

    def set(self, moment: datetime) -> None:
        self._now = _require_aware_utc(moment)


class FixedClock(ManualClock):
    """A clock stuck at one instant."""

    def advance(self, delta: timedelta) -> datetime:
        raise TypeError("FixedClock does not move; use ManualClock")


@dataclass(frozen=True)
class TimeSpan:
    """``[start, end)`` in aware UTC, start before end: what a report or an analysis covers.

    Checked once where it is made; the report's reads clip to it, its headline and title show it."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        start, end = _require_aware_utc(self.start), _require_aware_utc(self.end)
        if not start < end:
            raise ValueError(f"time span: start {start.isoformat()} must be before end {end.isoformat()}")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
