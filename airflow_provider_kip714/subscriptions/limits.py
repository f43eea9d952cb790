"""The limits a time-boxed window lives by, with their numbers (docs/production.md, "Limits and guarantees").

- ``MAX_WINDOW``: the longest window any entry point opens (CLI ``--window``, the operators' ``window``,
  the troubleshooting form's ``window_seconds``). The troubleshooting DAG's ``execution_timeout`` (25 h)
  covers one maximal window plus landing and analysis.
- ``CLOCK_SKEW_TOLERANCE``: how far the clocks of Airflow workers, triggerers and the machine running
  the CLI may be from true UTC. Expiries are judged by the deleting machine's clock, so as long as every
  clock is within this tolerance a window is never deleted earlier than its expiry minus the tolerance.
- ``REAPER_PERIOD``: how often ``kip714_reaper`` runs; an orphaned window (killed worker, failed
  create) is gone within one period after its expiry.
- A window name whose expiry lies further ahead than ``MAX_WINDOW`` plus twice the tolerance cannot
  have been opened by this product (or was opened before the limit existed): it is refused on create
  and reaped on sight, like a name whose expiry is before ``MIN_EXPIRY_YEAR``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

MAX_WINDOW: Final = timedelta(hours=24)
MIN_WINDOW: Final = timedelta(seconds=1)
CLOCK_SKEW_TOLERANCE: Final = timedelta(seconds=60)
REAPER_PERIOD: Final = timedelta(minutes=5)
MIN_EXPIRY_YEAR: Final = 2000
FURTHEST_EXPIRY: Final = MAX_WINDOW + 2 * CLOCK_SKEW_TOLERANCE


def expiry_problem(expires_at: datetime, now: datetime) -> str | None:
    """Why an expiry is out of range for a window made now (None when it is a possible one)."""
    if expires_at.year < MIN_EXPIRY_YEAR:
        return f"its expiry {expires_at.isoformat()} is before the year {MIN_EXPIRY_YEAR}"
    if expires_at - now > FURTHEST_EXPIRY:
        return (
            f"its expiry {expires_at.isoformat()} is more than the maximum window "
            f"({format_limit(MAX_WINDOW)}) plus clock-skew tolerance away"
        )
    return None


def format_limit(delta: timedelta) -> str:
    """``24h``, ``90s``: how limits appear in messages."""
    seconds = int(delta.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"
