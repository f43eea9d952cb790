"""Human durations such as ``30m``, ``1h30m``, ``20s``, ``2d`` (CLI ``--window``, operator ``window``).

Only ASCII digits count (``²`` or ``٣`` are refused, not converted), and a value too large for a
``timedelta`` is refused with the field's name instead of overflowing.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.subscriptions.limits import MAX_WINDOW, MIN_WINDOW, format_limit

_PART = re.compile(r"([0-9]{1,15})(ms|s|m|h|d)", re.ASCII)
_SECONDS = re.compile(r"[0-9]{1,15}", re.ASCII)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_HINT = "must be a duration such as 30m, 1h30m or 20s (units ms, s, m, h, d)"
_LARGEST_S = 10**12  # far beyond any limit, far below timedelta's overflow


def _string_seconds(value: str, field: str) -> float:
    text = value.strip().lower()
    if _SECONDS.fullmatch(text):
        return float(int(text))
    position = 0
    seconds = 0.0
    previous_unit = math.inf
    for part in _PART.finditer(text):
        if part.start() != position:
            break
        unit = _UNIT_SECONDS[part.group(2)]
        if unit >= previous_unit:  # "1h1h" or "30m1h": a typo, not a sum to guess at
            raise SubscriptionValidationError(field, f"{_HINT}, each unit once, largest first", value)
        previous_unit = unit
        seconds += int(part.group(1)) * unit
        position = part.end()
    if not text or position != len(text):
        raise SubscriptionValidationError(field, _HINT, value)
    return seconds


def parse_duration(
    value: str | int | float | timedelta, field: str = "window", maximum: timedelta | None = None
) -> timedelta:
    """A positive timedelta, at most ``maximum``; numbers are seconds; strings ``<n><unit>`` parts."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise SubscriptionValidationError(field, _HINT, value)
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _string_seconds(value, field)
    else:
        raise SubscriptionValidationError(field, _HINT, value)
    if math.isnan(seconds) or seconds <= 0:
        raise SubscriptionValidationError(field, "must be longer than zero", value)
    limit = maximum.total_seconds() if maximum is not None else _LARGEST_S
    if seconds > limit:
        shown = format_limit(maximum) if maximum is not None else f"{_LARGEST_S} s"
        raise SubscriptionValidationError(field, f"must be at most {shown}", value)
    return timedelta(seconds=seconds)


def parse_window_length(value: str | int | float | timedelta, field: str = "window") -> timedelta:
    """A window's length: a duration from ``MIN_WINDOW`` (1 s: its name holds its expiry to the second)
    to ``MAX_WINDOW`` (24 h)."""
    window = parse_duration(value, field=field, maximum=MAX_WINDOW)
    if window < MIN_WINDOW:
        raise SubscriptionValidationError(field, f"must be at least {format_limit(MIN_WINDOW)}", value)
    return window
