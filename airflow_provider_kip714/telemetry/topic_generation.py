"""Which incarnation of the topic a landing zone holds: Kafka's topic id, recorded beside the chunks.

A topic deleted and recreated under the same name starts again at offset 0 with a new topic id.
Resuming "after the last landed offset" would then skip the new topic's first records, or wait for
offsets that never come, or end in overlapping chunks. So the zone records the topic id it landed
(``_topic_id.json``) and every run compares it with the cluster's before landing anything:

- same id, and every landed partition's next offset within the topic: resume as usual;
- another id (the topic was recreated), or a landed offset beyond the topic's end (offsets went
  backwards: truncation, or a zone landed before topic ids were recorded): refuse, naming both,
  unless the caller accepts the new generation. Then the old generation's files move, whole, to
  ``_generations/<n>-<old topic id>/`` and the new topic lands from its start into the emptied zone.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from airflow_provider_kip714.exceptions import LandingError
from airflow_provider_kip714.telemetry.landing_zone import LandingZone

log = logging.getLogger(__name__)

TOPIC_ID_FILE: Final = "_topic_id.json"
GENERATIONS_DIR: Final = "_generations"
ACCEPT_HINT: Final = "accept_new_topic_id=True (CLI: --accept-recreated-topic)"
# Left in place when a generation is archived: the zone's identity, the writer's lock or lease.
_KEEP: Final = frozenset({"_zone.json", TOPIC_ID_FILE, GENERATIONS_DIR, ".landing.lock", "_lease"})
# Moved last: what says a chunk is landed (raw files before commit markers existed, then the markers).
_COMMIT_RECORDS: Final = frozenset({"raw", "_commits"})


@dataclass(frozen=True)
class Generation:
    """The topic id a zone holds, and how many generations came before it."""

    topic_id: str
    number: int = 1


def read_generation(zone: LandingZone) -> Generation | None:
    path = zone.root / TOPIC_ID_FILE
    if not path.exists():
        return None
    recorded = json.loads(path.read_text())
    return Generation(str(recorded["topic_id"]), int(recorded.get("generation", 1)))


def write_generation(zone: LandingZone, generation: Generation) -> None:
    record = {"topic": zone.topic, "topic_id": generation.topic_id, "generation": generation.number}
    (zone.root / TOPIC_ID_FILE).write_text(json.dumps(record))


def _archive(zone: LandingZone, archive: Any) -> None:
    """Move every entry of the zone but its identity and lock files into ``archive``.

    The chunks' data first, their commit records (raw files or markers) last: a crash half-way leaves
    chunks that ``recover()`` still sees whole, and the next accepted run moves the rest.
    """
    archive.mkdir(parents=True, exist_ok=True)
    entries = [entry for entry in zone.root.iterdir() if entry.name not in _KEEP]
    # the markers strictly last: moved before the raw files, a crash in between would leave those raw
    # files without markers, and the next run's recovery would delete them
    for entry in sorted(entries, key=lambda entry: (entry.name in _COMMIT_RECORDS, entry.name == "_commits")):
        entry.rename(archive / entry.name)


def _regressions(next_offsets: Mapping[int, int], marks: Mapping[int, tuple[int, int]]) -> list[str]:
    found = []
    for partition, next_offset in sorted(next_offsets.items()):
        if partition not in marks:
            found.append(f"partition {partition} landed up to offset {next_offset - 1} no longer exists")
        elif next_offset > marks[partition][1]:
            end = marks[partition][1]
            found.append(
                f"partition {partition} landed up to offset {next_offset - 1} but now ends at {end - 1}"
            )
    return found


def reconcile(
    zone: LandingZone,
    topic_id: str,
    next_offsets: dict[int, int],
    marks: Mapping[int, tuple[int, int]],
    *,
    accept_new_topic_id: bool,
) -> tuple[dict[int, int], str | None]:
    """Check the zone holds this incarnation of the topic; returns (next offsets, archived generation dir).

    Raises ``LandingError`` naming the old and new topic ids (or the regressed offsets) and the flag
    that accepts them; with the flag, archives the old generation and returns empty next offsets.
    """
    recorded = read_generation(zone)
    if recorded is not None and recorded.topic_id != topic_id:
        problem = (
            f"topic: {zone.topic!r} was deleted and recreated: this zone landed topic id "
            f"{recorded.topic_id}, the cluster now has topic id {topic_id}"
        )
    else:
        regressions = _regressions(next_offsets, marks)
        if not regressions:
            if recorded is None:
                write_generation(zone, Generation(topic_id))
            return next_offsets, None
        problem = f"topic: offsets of {zone.topic!r} went backwards (topic id {topic_id}): " + "; ".join(
            regressions
        )
    if not next_offsets:  # nothing landed from the old incarnation: nothing to keep apart
        write_generation(zone, Generation(topic_id, recorded.number if recorded else 1))
        return next_offsets, None
    number = recorded.number if recorded else 1
    archive = zone.root / GENERATIONS_DIR / f"{number:04d}-{recorded.topic_id if recorded else 'unknown'}"
    if not accept_new_topic_id:
        raise LandingError(
            f"{problem}; nothing was landed. To keep the landed data under {archive} and land the new "
            f"topic from its start, rerun with {ACCEPT_HINT}"
        )
    _archive(zone, archive)
    zone.prepare()
    write_generation(zone, Generation(topic_id, number + 1))
    log.warning(
        "%s; the landed generation moved to %s, landing the new topic from its start", problem, archive
    )
    return {}, str(archive)
