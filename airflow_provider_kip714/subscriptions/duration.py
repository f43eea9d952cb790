"""Human durations such as ``30m``, ``1h30m``, ``20s``, ``2d`` (CLI ``--window``, operator ``window``)."""

from __future__ import annotations

import re
from datetime import timedelta

from airflow_provider_kip714.exceptions import SubscriptionValidationError

_PART = re.compile(r"(\d+)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: str | int | float | timedelta, field: str = "window") -> timedelta:
    """Return a positive timedelta; numbers are seconds; strings are ``<n><unit>`` parts (ms,s,m,h,d)."""
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, bool):
        raise SubscriptionValidationError(field, "must be a duration such as 30m, 1h30m or 20s", value)
    elif isinstance(value, int | float):
        result = timedelta(seconds=value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if text.isdigit():
            result = timedelta(seconds=int(text))
        else:
            position = 0
            seconds = 0.0
            for part in _PART.finditer(text):
                if part.start() != position:
                    break
                seconds += int(part.group(1)) * _UNIT_SECONDS[part.group(2)]
                position = part.end()
            if not text or position != len(text):
                raise SubscriptionValidationError(
                    field, "must be a duration such as 30m, 1h30m or 20s (units ms, s, m, h, d)", value
                )
            result = timedelta(seconds=seconds)
    else:
        raise SubscriptionValidationError(field, "must be a duration such as 30m, 1h30m or 20s", value)
    if result <= timedelta(0):
        raise SubscriptionValidationError(field, "must be longer than zero", value)
    return result
