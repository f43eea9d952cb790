"""Names of time-boxed subscriptions: ``kip714-<label>-exp<YYYYMMDDTHHMMSSZ>-<8 hex>``.

Kafka accepts only ``metrics``, ``interval.ms`` and ``match`` on a CLIENT_METRICS resource, so the
window's end is carried by the name. This module is the only place that formats or parses it; the
reaper trusts nothing else.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime

from airflow_provider_kip714.exceptions import InvalidWindowNameError
from airflow_provider_kip714.subscriptions.limits import expiry_problem

PREFIX = "kip714"
EXPIRY_FORMAT = "%Y%m%dT%H%M%SZ"
MAX_LABEL_LENGTH = 60

_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_LABEL_RE = re.compile(rf"^{_LABEL}$")
_SUFFIX_RE = re.compile(r"^[0-9a-f]{8}$")
_NAME_RE = re.compile(
    rf"^{PREFIX}-(?P<label>{_LABEL})-exp(?P<expiry>\d{{8}}T\d{{6}}Z)-(?P<suffix>[0-9a-f]{{8}})$"
)


@dataclass(frozen=True)
class WindowName:
    """The parts of a time-boxed subscription name."""

    label: str
    expires_at: datetime
    suffix: str
    text: str = field(default="", compare=False)
    """The name exactly as parsed: deletes use it, never a re-formatted copy (year 0001 stays 0001)."""

    def __str__(self) -> str:
        return self.text or format_window_name(self.label, self.expires_at, self.suffix)

    def is_expired(self, now: datetime) -> bool:
        """True once ``now`` has reached the expiry (expiry is inclusive: the window is over)."""
        return now >= self.expires_at

    def is_reapable(self, now: datetime) -> bool:
        """Expired, or carrying an expiry no window of this product can have (see ``limits``)."""
        return self.is_expired(now) or expiry_problem(self.expires_at, now) is not None


def slugify_label(text: str) -> str:
    """Turn free text (a dag id, a team name) into a valid label: lower case, ``[a-z0-9-]``."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    slug = slug[:MAX_LABEL_LENGTH].strip("-")
    return slug or "window"


def derive_suffix(*parts: object) -> str:
    """A deterministic 8-hex suffix: the same parts give the same name, so a retry finds its window."""
    digest = hashlib.sha256("\x1f".join(str(part) for part in parts).encode("utf-8")).hexdigest()
    return digest[:8]


def random_suffix() -> str:
    """A fresh 8-hex suffix for one-off windows (the CLI)."""
    return secrets.token_hex(4)


def _expiry_text(expires_at: datetime) -> str:
    if expires_at.tzinfo is None or expires_at.utcoffset() is None:
        raise InvalidWindowNameError(f"expiry must be timezone-aware, got naive {expires_at.isoformat()}")
    try:
        moment = expires_at.astimezone(UTC)
    except OverflowError as err:
        raise InvalidWindowNameError(f"expiry {expires_at.isoformat()} is out of range") from err
    # strftime's %Y does not zero-pad years below 1000 on every platform; the name needs 4 digits.
    return f"{moment.year:04d}{moment:%m%dT%H%M%S}Z"


def format_window_name(label: str, expires_at: datetime, suffix: str) -> str:
    """Build a window name; the expiry is truncated to whole seconds in UTC."""
    if not _LABEL_RE.match(label) or len(label) > MAX_LABEL_LENGTH:
        raise InvalidWindowNameError(
            f"label {label!r} must be 1..{MAX_LABEL_LENGTH} characters of [a-z0-9-], "
            "starting and ending with a letter or digit"
        )
    if not _SUFFIX_RE.match(suffix):
        raise InvalidWindowNameError(f"suffix {suffix!r} must be exactly 8 lower-case hex digits")
    return f"{PREFIX}-{label}-exp{_expiry_text(expires_at)}-{suffix}"


def parse_window_name(name: str) -> WindowName:
    """Split a window name into its parts, or raise ``InvalidWindowNameError``."""
    found = _NAME_RE.match(name)
    if found is None or len(found.group("label")) > MAX_LABEL_LENGTH:
        raise InvalidWindowNameError(
            f"{name!r} is not a window name (kip714-<label>-exp<YYYYMMDDTHHMMSSZ>-<8 hex>)"
        )
    try:
        expires_at = datetime.strptime(found.group("expiry"), EXPIRY_FORMAT).replace(tzinfo=UTC)
    except ValueError as err:
        raise InvalidWindowNameError(
            f"{name!r} carries an impossible expiry {found.group('expiry')}"
        ) from err
    return WindowName(
        label=found.group("label"), expires_at=expires_at, suffix=found.group("suffix"), text=name
    )


def try_parse_window_name(name: str) -> WindowName | None:
    """Like ``parse_window_name`` but returns None for names outside the pattern."""
    try:
        return parse_window_name(name)
    except InvalidWindowNameError:
        return None


def is_window_name(name: str) -> bool:
    return try_parse_window_name(name) is not None


# What a reader (or a careless writer) takes for a window name: any case, ``kip714-...-exp<digit>``.
_LOOKALIKE_RE = re.compile(rf"^{PREFIX}-.*-exp[0-9]", re.IGNORECASE)


def creation_problem(name: str, now: datetime, *, creating: bool = True) -> str | None:
    """Why a subscription may not be written under ``name`` now, or None.

    A name that looks like a window name but does not parse (upper case, month 13) is never reaped,
    so it would outlive the window it pretends to be; one already expired (``creating``) would be
    reaped minutes after its creation; one out of ``limits`` is reaped on sight.
    """
    window = try_parse_window_name(name)
    if window is None:
        if _LOOKALIKE_RE.match(name):
            return (
                "looks like a window name but is not one (kip714-<label>-exp<YYYYMMDDTHHMMSSZ>-<8 hex>, "
                "lower case, a real UTC time): no reaper would delete it"
            )
        return None
    if creating and window.is_expired(now):
        return f"window name refused: its expiry {window.expires_at.isoformat()} has passed"
    problem = expiry_problem(window.expires_at, now)
    return None if problem is None else f"window name refused: {problem}"
