"""Where a landing run resumes, without listing every marker the zone ever landed.

``_commits/_landed.json`` holds the next offset per partition as the markers said when a run began (not
``clean``: a run is under way, or died) or ended with every chunk it staged committed (``clean``), the
slot from which every later marker is filed (a run never makes a token for an earlier slot than the
checkpoint it began from), and the markers already filed in that slot or later (``counted``). A run
resumes from it and the markers filed since; without a readable one, from every marker. The markers stay
the truth: the checkpoint is derived from them. ``landing_zone`` writes it at a run's start and end.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from airflow_provider_kip714.exceptions import LandingError
from airflow_provider_kip714.telemetry.chunk_names import ChunkId, file_stem, next_offsets
from airflow_provider_kip714.telemetry.zone_storage import ZoneStorage
from spark_apps.kip714_common.commit_markers import (
    COMMITS_DIR,
    DAY_FOLDER,
    MARKER_SUFFIX,
    SLOT_FOLDER,
    SLOT_LIMIT,
    folder_slot,
    slot_day,
    token_slot,
)

log = logging.getLogger(__name__)

CHECKPOINT_FILE: Final = "_landed.json"
Markers = set[tuple[ChunkId, str]]
"""``(chunk, token)`` of committed chunks, as their markers name them."""


@dataclass(frozen=True)
class LandedCheckpoint:
    """The checkpoint (the module docstring): a later marker below ``next_offsets`` that it did not count
    is an overlap."""

    slot: int
    next_offsets: Mapping[int, int] = field(default_factory=dict)
    clean: bool = False
    counted: frozenset[str] = frozenset()

    def as_json(self) -> bytes:
        offsets = {str(partition): offset for partition, offset in sorted(self.next_offsets.items())}
        counted = sorted(self.counted)
        return json.dumps(
            {"slot": self.slot, "next_offsets": offsets, "clean": self.clean, "counted": counted}
        ).encode()

    @classmethod
    def from_json(cls, text: bytes) -> LandedCheckpoint:
        """Parsed and checked; ``ValueError`` for anything a lander would not have written."""
        body = json.loads(text)
        slot, offsets, clean, counted = body["slot"], body["next_offsets"], body["clean"], body["counted"]
        if not _whole(slot) or not 0 <= slot < SLOT_LIMIT:
            raise ValueError(f"slot: must be a whole number from 0 to {SLOT_LIMIT - 1} (got {slot!r})")
        if not isinstance(offsets, dict) or not all(
            str(partition).isdigit() and _whole(offset) and offset >= 0
            for partition, offset in offsets.items()
        ):
            raise ValueError("next_offsets: must map partitions to offsets >= 0")
        if not isinstance(clean, bool) or not isinstance(counted, list):
            raise ValueError("clean: must be true or false, counted: a list of chunk names")
        return cls(slot, {int(p): o for p, o in offsets.items()}, clean, frozenset(map(str, counted)))


def read_checkpoint(storage: ZoneStorage) -> LandedCheckpoint | None:
    """The checkpoint; None when there is none, or one that cannot be read (every marker is read then)."""
    path = storage.join(COMMITS_DIR, CHECKPOINT_FILE)
    try:
        return LandedCheckpoint.from_json(storage.read(path))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        log.warning("landing zone %s: %s unreadable (%s); reading every marker", storage.path, path, err)
        return None


def write_checkpoint(
    storage: ZoneStorage, slot: int, following: Mapping[int, int], markers: Markers, *, clean: bool
) -> None:
    """The checkpoint at ``slot``, counting the ``markers`` already filed in it or later (the caller
    holds the zone's lease)."""
    counted = frozenset(file_stem(*marker) for marker in markers if _filed_in_or_after(marker[1], slot))
    checkpoint = LandedCheckpoint(slot, dict(following), clean, counted)
    storage.put_replacing(storage.join(COMMITS_DIR, CHECKPOINT_FILE), checkpoint.as_json())


def all_markers(storage: ZoneStorage) -> Markers:
    """Every marker, slotted or not (one recursive listing, as a whole-table reader needs)."""
    return _parsed(path.rsplit("/", 1)[-1] for path in storage.find(storage.join(COMMITS_DIR)))


def markers_since(storage: ZoneStorage, since_slot: int) -> Markers:
    """The markers filed in slot ``since_slot`` or later. Those in ``_commits/`` itself (zones from before
    slots) are left out: a checkpoint counted them, and no lander writes them since."""
    commits = storage.join(COMMITS_DIR)
    names: list[str] = []
    for day in storage.names(commits):
        if not DAY_FOLDER.match(day) or day < slot_day(since_slot):
            continue
        for hhmm in storage.names(f"{commits}/{day}"):
            if SLOT_FOLDER.match(hhmm) and folder_slot(day, hhmm) >= since_slot:
                names.extend(storage.names(f"{commits}/{day}/{hhmm}"))
    return _parsed(names)


def resume_point(
    storage: ZoneStorage, checkpoint: LandedCheckpoint | None, everything: Markers | None = None
) -> tuple[dict[int, int], Markers]:
    """(next offset per partition, the markers read to find it: the checkpoint's slot's and later, or every
    marker without a checkpoint). ``everything``: every marker, already listed by the caller.

    A marker filed since the checkpoint that starts below its next offset, and that it did not count,
    overlaps what was landed before: refused, as ``next_offsets`` refuses two overlapping markers."""
    if checkpoint is None:
        markers = all_markers(storage) if everything is None else everything
        return next_offsets(chunk for chunk, _ in markers), markers
    if everything is None:
        markers = markers_since(storage, checkpoint.slot)
    else:
        markers = {marker for marker in everything if _filed_in_or_after(marker[1], checkpoint.slot)}
    following = dict(checkpoint.next_offsets)
    for chunk, token in sorted(markers):
        stem = file_stem(chunk, token)
        if stem not in checkpoint.counted and chunk.first_offset < following.get(chunk.partition, 0):
            raise LandingError(
                f"{COMMITS_DIR}/: chunk {stem} overlaps offsets landed before it (the zone's checkpoint "
                f"resumes partition {chunk.partition} at {following[chunk.partition]}); the landing "
                f"zone was modified by hand or by two writers (a hand-edited {COMMITS_DIR}/{CHECKPOINT_FILE} "
                "can be deleted: the next run then reads every marker)"
            )
    for partition, offset in next_offsets(chunk for chunk, _ in markers).items():
        following[partition] = max(following.get(partition, 0), offset)
    return following, markers


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _filed_in_or_after(token: str, slot: int) -> bool:
    filed = token_slot(token)
    return filed is not None and filed >= slot


def _parsed(names: Iterable[str]) -> Markers:
    found = (ChunkId.parse(name) for name in names if name.endswith(MARKER_SUFFIX))
    return {entry for entry in found if entry is not None}
