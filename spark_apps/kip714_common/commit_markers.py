"""Where a landed chunk's commit marker lives: the one rule the lander files by and every reader looks by.

Pure Python on purpose: imported by the provider (``telemetry.landing_zone``) and inside ``spark-submit``
(``kip714_common.landing``).

A chunk is written under a fresh token; its marker ``<chunk>.<token>.commit`` says it is landed. Since
protocol v2 the token carries the ten-minute **slot** the chunk was staged in (its first 8 hex digits:
epoch seconds // 600), and the marker is filed under that slot::

    _commits/2026-12-07/0640/p00003-00000000000000001200-00000000000000001699.<slot><random>.commit

So whoever holds a data file's name knows the one folder its marker can be in, and lists one slot's
markers (a few hundred) instead of every marker the zone ever landed: a zone in live mode gains one per
partition per cycle, about 17,000 a day on six partitions, and listing them all made every cycle slower
by the day (measured: ``docs/benchmarks.md``, session 24). Markers of tokens without a slot (12 hex
digits, or none: zones landed before v2) stay in ``_commits/`` itself.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

COMMITS_DIR: Final = "_commits"
MARKER_SUFFIX: Final = ".commit"
PROTOCOL_FILE: Final = "PROTOCOL"
SLOT_SECONDS: Final = 600
_SLOT_DIGITS: Final = 8
_RANDOM_DIGITS: Final = 12
SLOT_LIMIT: Final = 16**_SLOT_DIGITS
"""Slots a token can name (8 hex digits)."""
_SLOTTED_TOKEN: Final = re.compile(rf"^[0-9a-f]{{{_SLOT_DIGITS + _RANDOM_DIGITS}}}$")
DAY_FOLDER: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SLOT_FOLDER: Final = re.compile(r"^\d{4}$")


def slot_of(epoch_seconds: float) -> int:
    """The ten-minute slot an instant falls in."""
    return int(epoch_seconds // SLOT_SECONDS)


def slotted_token(slot: int, random_hex: str) -> str:
    """A chunk's token: its slot, then ``random_hex`` (12 hex digits) to tell apart two runs' files."""
    if slot < 0 or slot >= SLOT_LIMIT or len(random_hex) != _RANDOM_DIGITS:
        raise ValueError(f"token: slot {slot} and {random_hex!r} do not make a token")
    return f"{slot:0{_SLOT_DIGITS}x}{random_hex}"


def token_slot(token: str) -> int | None:
    """The slot a token was made in; None for a token from before slots (its marker is in ``_commits/``)."""
    return int(token[:_SLOT_DIGITS], 16) if _SLOTTED_TOKEN.match(token) else None


def slot_day(slot: int) -> str:
    """The day folder (``YYYY-MM-DD``) a slot's folder is in."""
    return f"{datetime.fromtimestamp(slot * SLOT_SECONDS, UTC):%Y-%m-%d}"


def slot_folder(slot: int) -> str:
    """``_commits/<day>/<HHMM>``, relative to the zone's root: where a slot's markers are filed."""
    start = datetime.fromtimestamp(slot * SLOT_SECONDS, UTC)
    return f"{COMMITS_DIR}/{slot_day(slot)}/{start:%H%M}"


def folder_slot(day: str, hhmm: str) -> int:
    """The slot of folder ``_commits/<day>/<hhmm>`` (the inverse of ``slot_folder``)."""
    start = datetime.strptime(f"{day} {hhmm}", "%Y-%m-%d %H%M").replace(tzinfo=UTC)
    return slot_of(start.timestamp())


def marker_folder(token: str) -> str:
    """The folder, relative to the zone's root, holding the marker of a chunk written under ``token``."""
    slot = token_slot(token)
    return COMMITS_DIR if slot is None else slot_folder(slot)
