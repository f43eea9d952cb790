"""The Parquet landing zone on disk: layout, atomic chunk writes and crash recovery.

Layout (one topic per zone; ``_zone.json`` records which)::

    raw/p00003-00000000000000001200-00000000000000001699.parquet          one row per record
    datapoints/date=2025-11-22/hour=08/p00003-...-....parquet              one row per data point
    quarantine/p00003-...-....parquet                                      records that did not decode

Every file of a *chunk* (one partition, an inclusive offset range) carries the same name. The raw
file is the commit marker: it is renamed into place last, after the chunk's datapoint and quarantine
files. So after a crash at any moment, a chunk either has its raw file (and everything else) or it
is not landed; ``recover()`` deletes temp files and any datapoint/quarantine file whose chunk has no
raw file, then resumes each partition after its highest landed offset. Nothing is duplicated or lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_provider_kip714.exceptions import LandingError

log = logging.getLogger(__name__)

RAW_DIR: Final = "raw"
DATAPOINTS_DIR: Final = "datapoints"
QUARANTINE_DIR: Final = "quarantine"
TEMP_PREFIX: Final = ".tmp-"
ZONE_FILE: Final = "_zone.json"
LOCK_FILE: Final = ".landing.lock"
_CHUNK_NAME: Final = re.compile(r"^p(\d{5,})-(\d{20})-(\d{20})\.parquet$")
PARQUET_COMPRESSION: Final = "zstd"
# Min/max statistics only where readers prune with them (time ranges, offsets): statistics on every
# column cost ~20 % of the write and help no query. Dictionaries only for flat string columns.
_STATISTICS_COLUMNS: Final = frozenset(
    {"time", "start_time", "record_timestamp", "timestamp", "quarantined_at", "offset", "partition", "hour"}
)


@functools.lru_cache(maxsize=8)
def parquet_options(schema: pa.Schema) -> dict[str, object]:
    """``pq.write_table`` options of a landing-zone table (the same for every file of a schema)."""
    return {
        "compression": PARQUET_COMPRESSION,
        "use_dictionary": [field.name for field in schema if pa.types.is_string(field.type)],
        "write_statistics": [field.name for field in schema if field.name in _STATISTICS_COLUMNS],
    }


@dataclass(frozen=True, order=True)
class ChunkId:
    """One partition's inclusive offset range; names every file of the chunk."""

    partition: int
    first_offset: int
    last_offset: int

    @property
    def file_name(self) -> str:
        return f"p{self.partition:05d}-{self.first_offset:020d}-{self.last_offset:020d}.parquet"

    @classmethod
    def from_file_name(cls, name: str) -> ChunkId | None:
        match = _CHUNK_NAME.match(name)
        if match is None:
            return None
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3)))


def hour_directory(date: str, hour: int) -> str:
    return f"date={date}/hour={hour:02d}"


@dataclass(frozen=True)
class StagedFile:
    temp_path: Path
    final_path: Path


@dataclass(frozen=True)
class StagedChunk:
    """A chunk written to temp files, waiting for ``LandingZone.commit`` (raw file last)."""

    chunk: ChunkId
    files: tuple[StagedFile, ...]  # raw file is the last entry
    records: int
    points: int
    quarantined: int
    last_timestamp_ms: int


class LandingZone:
    """Paths and the write/recover protocol of one landing directory."""

    def __init__(self, root: str | os.PathLike[str], topic: str, *, fsync: bool = True) -> None:
        self.root = Path(root)
        self.topic = topic
        self.fsync = fsync
        self.raw_dir = self.root / RAW_DIR
        self.datapoints_dir = self.root / DATAPOINTS_DIR
        self.quarantine_dir = self.root / QUARANTINE_DIR

    # ---- set-up, locking, recovery -------------------------------------------------------------

    def prepare(self) -> None:
        """Create the directories and pin the zone to its topic (refuse another topic's zone)."""
        for directory in (self.raw_dir, self.datapoints_dir, self.quarantine_dir):
            directory.mkdir(parents=True, exist_ok=True)
        zone_file = self.root / ZONE_FILE
        if zone_file.exists():
            recorded = json.loads(zone_file.read_text()).get("topic")
            if recorded != self.topic:
                raise LandingError(
                    f"out_dir: {self.root} is the landing zone of topic {recorded!r}, not {self.topic!r}; "
                    "use one directory per topic"
                )
        else:
            self._write_bytes_atomically(zone_file, json.dumps({"topic": self.topic}).encode())

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold an exclusive lock: two landing runs on one zone would break the resume protocol."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / LOCK_FILE, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LandingError(f"out_dir: another landing run holds {self.root / LOCK_FILE}") from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def landed_chunks(self) -> list[ChunkId]:
        if not self.raw_dir.is_dir():
            return []
        chunks = [ChunkId.from_file_name(path.name) for path in self.raw_dir.iterdir()]
        return sorted(chunk for chunk in chunks if chunk is not None)

    def recover(self) -> dict[int, int]:
        """Undo what a crashed run left half-done; return the next offset to land per partition."""
        removed = 0
        for directory, _, files in os.walk(self.root):
            for name in files:
                if name.startswith(TEMP_PREFIX):
                    Path(directory, name).unlink()
                    removed += 1
        landed = set(self.landed_chunks())
        for path in [*self.datapoints_dir.rglob("*.parquet"), *self.quarantine_dir.glob("*.parquet")]:
            chunk = ChunkId.from_file_name(path.name)
            if chunk is not None and chunk not in landed:
                path.unlink()
                removed += 1
        if removed:
            log.warning("landing zone %s: removed %d file(s) left by an interrupted run", self.root, removed)
        next_offsets: dict[int, int] = {}
        previous: ChunkId | None = None
        for chunk in sorted(landed):
            if (
                previous is not None
                and previous.partition == chunk.partition
                and chunk.first_offset <= previous.last_offset
            ):
                raise LandingError(
                    f"raw/: chunks {previous.file_name} and {chunk.file_name} overlap; "
                    "the landing zone was modified by hand or by two writers"
                )
            next_offsets[chunk.partition] = chunk.last_offset + 1
            previous = chunk
        return next_offsets

    # ---- writing -------------------------------------------------------------------------------

    def stage(
        self,
        chunk: ChunkId,
        raw: pa.Table,
        datapoints: pa.Table,
        quarantine: pa.Table,
        *,
        points: int,
        last_timestamp_ms: int,
    ) -> StagedChunk:
        """Write a chunk's files under temp names (safe in a worker process); commit them later."""
        files: list[StagedFile] = []
        if datapoints.num_rows:
            for (date, hour), part in _split_by_hour(datapoints):
                directory = self.datapoints_dir / hour_directory(date, hour)
                files.append(self._write_temp(part, directory / chunk.file_name))
        if quarantine.num_rows:
            files.append(self._write_temp(quarantine, self.quarantine_dir / chunk.file_name))
        files.append(self._write_temp(raw, self.raw_dir / chunk.file_name))
        return StagedChunk(chunk, tuple(files), raw.num_rows, points, quarantine.num_rows, last_timestamp_ms)

    def commit(self, staged: StagedChunk) -> None:
        """Rename a staged chunk into place; the raw file goes last and marks the chunk landed."""
        touched_dirs = set()
        for staged_file in staged.files:
            os.replace(staged_file.temp_path, staged_file.final_path)
            touched_dirs.add(staged_file.final_path.parent)
        if self.fsync:
            for directory in touched_dirs:
                _fsync_directory(directory)

    def discard(self, staged: StagedChunk) -> None:
        for staged_file in staged.files:
            with contextlib.suppress(FileNotFoundError):
                staged_file.temp_path.unlink()

    def _write_temp(self, table: pa.Table, final_path: Path) -> StagedFile:
        final_path.parent.mkdir(parents=True, exist_ok=True)
        temp_path = final_path.with_name(f"{TEMP_PREFIX}{uuid.uuid4().hex[:12]}-{final_path.name}")
        pq.write_table(table, temp_path, **parquet_options(table.schema))
        if self.fsync:
            with open(temp_path, "rb") as handle:
                os.fsync(handle.fileno())
        return StagedFile(temp_path, final_path)

    def _write_bytes_atomically(self, path: Path, data: bytes) -> None:
        temp_path = path.with_name(f"{TEMP_PREFIX}{path.name}")
        temp_path.write_bytes(data)
        os.replace(temp_path, path)


def _split_by_hour(datapoints: pa.Table) -> list[tuple[tuple[str, int], pa.Table]]:
    """Split a chunk's datapoints by their ``date``/``hour`` columns (usually one group)."""
    keys = pc.binary_join_element_wise(
        datapoints.column("date"), pc.cast(datapoints.column("hour"), pa.string()), "|"
    )
    groups = pc.unique(keys).to_pylist()
    if len(groups) == 1:
        date, hour = groups[0].split("|")
        return [((date, int(hour)), datapoints)]
    parts = []
    for group in sorted(groups):
        date, hour = group.split("|")
        parts.append(((date, int(hour)), datapoints.filter(pc.equal(keys, group))))
    return parts


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
