"""The Parquet landing zone: layout, the rename-free commit protocol and crash recovery.

The zone is a local folder or an object-store prefix (``s3://<conn_id>@bucket/prefix``); both go
through one fsspec code path. Object stores have no atomic rename and S3-compatible servers need
not support conditional writes, so the protocol relies on two things only: a single PUT (or a
fsynced local file) is whole once it is listed, and a listing shows every object written before it.

Layout (one topic per zone; ``_zone.json`` records which)::

    raw/p00003-00000000000000001200-00000000000000001699.<token>.parquet       one row per record
    datapoints/date=2025-11-22/hour=08/p00003-...-....<token>.parquet           one row per data point
    quarantine/p00003-...-....<token>.parquet                                   records that did not decode
    _commits/2025-11-22/0810/p00003-...-....<token>.commit                      the chunk's commit marker
    _commits/_landed.json                                                       where the last run left off
    _lease/<claim>.json                                                         who may write (``lease``)

**Commit.** A chunk (one partition, an inclusive offset range) is written under a fresh ``token``
(the ten-minute slot it is staged in, then random digits): data files first (fsynced locally, with
every folder they create), then the marker ``<chunk>.<token>.commit`` in its slot's folder
(``kip714_common.commit_markers``: the one rule every reader looks by). The marker's existence is the
commit. A chunk file counts only when a marker names its ``<chunk>.<token>``: readers (Spark, the
report, the UI) look for it in the folder its token names, never trust a folder glob. Parquet files
not named like chunks were put there by something else (synthetic or copied data) and are read as they
are. Markers of zones landed before slots (protocol v1) stay in ``_commits/`` itself and stay valid.

**Recovery.** After a crash at any moment a chunk either has its marker (all its files were written
before it) or it is not landed. A run begins with ``recover()`` and, when every chunk it staged is
committed, ends with ``finish()``; both write ``_commits/_landed.json`` (the next offset per partition,
the slot from which later markers are filed, and whether the run ended cleanly). So a run finds where to
resume from that checkpoint and the markers filed since (one or two slots), not from every marker the
zone ever landed. Only when the last run did not end cleanly (a crash, a failure) does ``recover()``
list every data file and delete those no marker names. Nothing is duplicated or lost: every marker
committed after a checkpoint is filed in its slot or later (a run's tokens never name an earlier slot
than the checkpoint it began from, whatever its clock says).

**One writer.** Only the holder of the zone's lease (``lease.ZoneLease``) stages, commits or recovers;
it checks the lease before each marker it writes.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from airflow_provider_kip714.exceptions import LandingError
from airflow_provider_kip714.storage.data_root import (
    StoragePath,
    as_storage_path,
    checked_location,
    fsspec_location,
    storage_uri,
)
from airflow_provider_kip714.telemetry.lease import ZoneLease, fresh
from spark_apps.kip714_common.commit_markers import (
    COMMITS_DIR,
    DAY_FOLDER,
    MARKER_SUFFIX,
    PROTOCOL_FILE,
    SLOT_FOLDER,
    folder_slot,
    marker_folder,
    slot_folder,
    slot_of,
    slotted_token,
    token_slot,
)

if TYPE_CHECKING:
    from airflow_provider_kip714.decoding.native_writer import DatapointFile, RawFile

log = logging.getLogger(__name__)

RAW_DIR: Final = "raw"
DATAPOINTS_DIR: Final = "datapoints"
QUARANTINE_DIR: Final = "quarantine"
LEASE_DIR: Final = "_lease"
ZONE_FILE: Final = "_zone.json"
CHECKPOINT_FILE: Final = "_landed.json"
_ZONE_TOPIC_KEY: Final = "zone_topic"
_V1_FENCE: Final = " (landing protocol v2: upgrade the provider to land here)"
PROTOCOL: Final = "kip714 landing commit markers v2\n"
"""v2: markers filed by slot, and the checkpoint; v1 zones (markers in ``_commits/`` itself) read the same."""
KNOWN_PROTOCOLS: Final = frozenset({"kip714 landing commit markers v1\n", PROTOCOL})
DATA_SUFFIX: Final = ".parquet"
_MS_PER_HOUR: Final = 3_600_000
_STEM: Final = re.compile(r"^p(\d{5,})-(\d{20})-(\d{20})(?:\.([0-9a-f]{6,32}))?$")
PARQUET_COMPRESSION: Final = "zstd"
# Min/max statistics only where readers prune with them (time ranges, offsets): statistics on every
# column cost ~20 % of the write and help no query. Dictionaries only for flat string columns.
_STATISTICS_COLUMNS: Final = frozenset(
    {"time", "start_time", "record_timestamp", "timestamp", "quarantined_at", "offset", "partition", "hour"}
)


@functools.lru_cache(maxsize=8)
def parquet_options(schema: pa.Schema) -> dict[str, object]:
    """``pq.write_table`` options of a landing-zone table (the same for every file of a schema).

    No Arrow schema in the file (``store_schema``): Parquet's own types say everything the landing
    schemas hold, and without it a string column written dictionary-encoded (``decode_batch``'s
    ``dictionary_strings``) reads back as a plain string column, like every other file.
    """
    return {
        "compression": PARQUET_COMPRESSION,
        "use_dictionary": [field.name for field in schema if _is_text(field.type)],
        "write_statistics": [field.name for field in schema if field.name in _STATISTICS_COLUMNS],
        "store_schema": False,
    }


def _is_text(arrow_type: pa.DataType) -> bool:
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return pa.types.is_string(arrow_type)


@dataclass(frozen=True, order=True)
class ChunkId:
    """One partition's inclusive offset range."""

    partition: int
    first_offset: int
    last_offset: int

    @property
    def stem(self) -> str:
        return f"p{self.partition:05d}-{self.first_offset:020d}-{self.last_offset:020d}"

    @classmethod
    def parse(cls, name: str) -> tuple[ChunkId, str] | None:
        """``(chunk, token)`` of a data file or marker name (token ``""`` for pre-marker zones)."""
        for suffix in (DATA_SUFFIX, MARKER_SUFFIX):
            if name.endswith(suffix):
                match = _STEM.match(name[: -len(suffix)])
                if match is None:
                    return None
                chunk = cls(int(match.group(1)), int(match.group(2)), int(match.group(3)))
                return chunk, match.group(4) or ""
        return None


def file_stem(chunk: ChunkId, token: str) -> str:
    return f"{chunk.stem}.{token}" if token else chunk.stem


def hour_directory(date: str, hour: int) -> str:
    return f"date={date}/hour={hour:02d}"


@dataclass(frozen=True)
class LandedCheckpoint:
    """``_commits/_landed.json``: the next offset per partition as the markers said when a run began (not
    ``clean``: a run is under way, or died) or ended with every chunk it staged committed (``clean``).
    Every marker committed after it is filed in ``slot`` or a later slot; ``counted`` names the markers
    already in those slots when it was written (a later one below ``next_offsets`` is an overlap)."""

    slot: int
    next_offsets: Mapping[int, int] = field(default_factory=dict)
    clean: bool = False
    counted: frozenset[str] = frozenset()

    def as_json(self) -> bytes:
        offsets = {str(partition): offset for partition, offset in sorted(self.next_offsets.items())}
        body = {
            "slot": self.slot,
            "next_offsets": offsets,
            "clean": self.clean,
            "counted": sorted(self.counted),
        }
        return json.dumps(body).encode()

    @classmethod
    def from_json(cls, text: bytes) -> LandedCheckpoint:
        body = json.loads(text)
        offsets = {int(partition): int(offset) for partition, offset in body["next_offsets"].items()}
        counted = frozenset(str(stem) for stem in body["counted"])
        return cls(int(body["slot"]), offsets, bool(body["clean"]), counted)


@dataclass(frozen=True)
class StagedChunk:
    """A chunk whose data files are written, waiting for ``LandingZone.commit`` (its marker)."""

    chunk: ChunkId
    token: str
    files: tuple[str, ...]
    records: int
    points: int
    quarantined: int
    last_timestamp_ms: int


class LandingZone:
    """Paths and the write/recover protocol of one landing zone (local folder or object-store prefix)."""

    def __init__(self, root: str | os.PathLike[str] | StoragePath, topic: str, *, fsync: bool = True) -> None:
        self.root = checked_location(root, "out_dir")
        self.topic = topic
        self.fsync = fsync
        self.fs, self.path = fsspec_location(self.root)
        self.local = "file" in _protocols(self.fs)
        self.lease = ZoneLease(self.fs, self._join(LEASE_DIR), str(self.root))
        self.raw_dir = self.root / RAW_DIR
        self.datapoints_dir = self.root / DATAPOINTS_DIR
        self.quarantine_dir = self.root / QUARANTINE_DIR
        self.commits_dir = self.root / COMMITS_DIR
        self._min_slot = 0
        """No token of this run names an earlier slot (``recover`` sets it from the checkpoint)."""
        self._folders = threading.Lock()

    def lock(self) -> ZoneLease:
        """The zone's lease, a context manager: two landing runs on one zone would break the protocol."""
        return self.lease

    def _join(self, *parts: str) -> str:
        return "/".join([self.path.rstrip("/"), *parts])

    # ---- set-up and recovery (lease held) -------------------------------------------------------

    def prepare(self) -> None:
        """Pin the zone to its topic (refuse another topic's zone), keep landers from before protocol v2
        out of it, and declare the marker protocol."""
        zone_file = self._join(ZONE_FILE)
        body = json.loads(self.fs.cat_file(zone_file)) if fresh(self.fs).exists(zone_file) else {}
        recorded = body.get(_ZONE_TOPIC_KEY, body.get("topic", self.topic))
        if recorded != self.topic:
            raise LandingError(
                f"out_dir: {self.root} is the landing zone of topic {recorded!r}, not {self.topic!r}; "
                "use one directory per topic"
            )
        if _ZONE_TOPIC_KEY not in body:
            # A v1 lander reads "topic" and refuses any other: the zone is fenced before a slot's marker
            # exists (v1's recovery, blind to slots, would delete the files those markers name).
            guard = {"topic": f"{self.topic}{_V1_FENCE}", _ZONE_TOPIC_KEY: self.topic}
            self._put_replacing(zone_file, json.dumps(guard).encode())
        protocol_file = self._join(COMMITS_DIR, PROTOCOL_FILE)
        declared = ""
        if fresh(self.fs).exists(protocol_file):
            declared = fresh(self.fs).cat_file(protocol_file).decode(errors="replace")
        if not declared:  # none yet, or a write that died before its bytes (adopting again is harmless)
            self._adopt_pre_marker_chunks()
            self._put_replacing(protocol_file, PROTOCOL.encode())
            return
        if declared not in KNOWN_PROTOCOLS:
            raise LandingError(
                f"out_dir: {self.root} was landed by a newer version of the lander ({declared.strip()!r} in "
                f"{COMMITS_DIR}/{PROTOCOL_FILE}); upgrade the provider on every worker that lands into it"
            )
        if declared != PROTOCOL:  # a v1 zone: its markers stay where they are, new ones go to slots
            self._put_replacing(protocol_file, PROTOCOL.encode())

    def _adopt_pre_marker_chunks(self) -> None:
        """Zones landed before markers existed: their raw file was the commit; give each a marker.

        Their runs' leftover ``.tmp-*`` files (never committed) are removed here, once.
        """
        for table in (RAW_DIR, DATAPOINTS_DIR, QUARANTINE_DIR):
            for path in self._find(self._join(table)):
                if path.rsplit("/", 1)[-1].startswith(".tmp-"):
                    self.fs.rm_file(path)
        for name in self._names(self._join(RAW_DIR)):
            parsed = ChunkId.parse(name)
            if parsed is not None and parsed[1] == "" and name.endswith(DATA_SUFFIX):
                self._put(self._join(COMMITS_DIR, parsed[0].stem + MARKER_SUFFIX), b"{}")

    def committed(self) -> set[tuple[ChunkId, str]]:
        """``(chunk, token)`` of every committed chunk (from the markers alone; every slot's)."""
        return self._markers_since(None)

    def landed_chunks(self) -> list[ChunkId]:
        return sorted(chunk for chunk, _ in self.committed())

    def landed_next_offsets(self) -> dict[int, int]:
        """The next offset to land per partition: the checkpoint's, and the markers filed since it (every
        marker in a zone without one). Work bounded by what landed since the last run, not by the zone's
        age. Needs no lease: offsets below the answer were committed when it was read."""
        return self._resume_point(self._read_checkpoint())[0]

    def _resume_point(
        self, checkpoint: LandedCheckpoint | None
    ) -> tuple[dict[int, int], set[tuple[ChunkId, str]]]:
        """(next offset per partition, the markers read to find it: the checkpoint's slot's and later).

        A marker filed since the checkpoint that starts below its next offset, and that it did not count,
        overlaps what was landed before: refused, as ``next_offsets`` refuses two overlapping markers."""
        if checkpoint is None:
            markers = self._markers_since(None)
            return next_offsets(chunk for chunk, _ in markers), markers
        markers = self._markers_since(checkpoint.slot)
        following = dict(checkpoint.next_offsets)
        for chunk, token in sorted(markers):
            stem = file_stem(chunk, token)
            if stem not in checkpoint.counted and chunk.first_offset < following.get(chunk.partition, 0):
                raise LandingError(
                    f"{COMMITS_DIR}/: chunk {stem} overlaps offsets landed before it (the zone's checkpoint "
                    f"resumes partition {chunk.partition} at {following[chunk.partition]}); the landing "
                    "zone was modified by hand or by two writers"
                )
        for partition, offset in next_offsets(chunk for chunk, _ in markers).items():
            following[partition] = max(following.get(partition, 0), offset)
        return following, markers

    def recover(self) -> dict[int, int]:
        """Begin a run: delete data files no marker names when the last run did not end cleanly; record
        that a run is under way; return the next offset to land per partition."""
        self.lease.check()
        checkpoint = self._read_checkpoint()
        if checkpoint is None or not checkpoint.clean:
            self._remove_orphans()
        following, markers = self._resume_point(checkpoint)
        self._min_slot = max(slot_of(time.time()), checkpoint.slot if checkpoint is not None else 0)
        self._write_checkpoint(self._min_slot, following, markers, clean=False)
        return following

    def _remove_orphans(self) -> None:
        """Delete every data file no marker names (a run that died left them; readers never read them)."""
        committed = self.committed()
        orphans = [path for path in self._data_files() if _entry(path) not in committed]
        for orphan in orphans:  # one DeleteObject each: S3Proxy refuses DeleteObjects with SDK checksums
            self.fs.rm_file(orphan)
        if orphans:
            log.warning(
                "landing zone %s: removed %d file(s) left by an interrupted run", self.root, len(orphans)
            )

    def finish(self) -> dict[int, int]:
        """End a run whose staged chunks are all committed: a clean checkpoint, so the next run neither
        lists every data file nor every marker. Returns the next offset to land per partition."""
        self.lease.check()
        following, markers = self._resume_point(self._read_checkpoint())
        self._min_slot = max(self._min_slot, slot_of(time.time()))
        self._write_checkpoint(self._min_slot, following, markers, clean=True)
        return following

    def _read_checkpoint(self) -> LandedCheckpoint | None:
        """The checkpoint; None when there is none, or one that cannot be read (every marker is read then)."""
        path = self._join(COMMITS_DIR, CHECKPOINT_FILE)
        try:
            return LandedCheckpoint.from_json(fresh(self.fs).cat_file(path))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            log.warning("landing zone %s: %s unreadable (%s); reading every marker", self.root, path, err)
            return None

    def _write_checkpoint(
        self, slot: int, following: dict[int, int], markers: set[tuple[ChunkId, str]], *, clean: bool
    ) -> None:
        """The checkpoint at ``slot``, counting the ``markers`` already filed in it or later."""
        self.lease.check()
        counted = frozenset(
            file_stem(chunk, token) for chunk, token in markers if _filed_in_or_after(token, slot)
        )
        checkpoint = LandedCheckpoint(slot, following, clean, counted)
        self._put_replacing(self._join(COMMITS_DIR, CHECKPOINT_FILE), checkpoint.as_json())

    def _markers_since(self, since_slot: int | None) -> set[tuple[ChunkId, str]]:
        """Every marker (``since_slot`` None: one recursive listing, as a whole-table reader needs), or
        those filed in slot ``since_slot`` or later. The markers in ``_commits/`` itself (zones from
        before slots) are left out then: a checkpoint counted them, and no lander writes them since."""
        commits = self._join(COMMITS_DIR)
        if since_slot is None:
            names = [path.rsplit("/", 1)[-1] for path in self._find(commits)]
        else:
            first_day = slot_folder(since_slot).split("/")[1]
            names = []
            for day in self._names(commits):
                if not DAY_FOLDER.match(day) or day < first_day:
                    continue
                for hhmm in self._names(f"{commits}/{day}"):
                    if SLOT_FOLDER.match(hhmm) and folder_slot(day, hhmm) >= since_slot:
                        names.extend(self._names(f"{commits}/{day}/{hhmm}"))
        found = (ChunkId.parse(name) for name in names if name.endswith(MARKER_SUFFIX))
        return {entry for entry in found if entry is not None}

    # ---- writing -------------------------------------------------------------------------------

    def stage(
        self,
        chunk: ChunkId,
        raw: pa.Table | RawFile,
        datapoints: pa.Table | Sequence[DatapointFile],
        quarantine: pa.Table,
        *,
        points: int,
        last_timestamp_ms: int,
    ) -> StagedChunk:
        """Write a chunk's data files under a fresh token (safe in a worker thread); commit them later.

        ``raw`` is a table or the native writer's file; ``datapoints`` a table (split here by hour) or
        the native writer's files, one per hour.
        """
        token = slotted_token(max(slot_of(time.time()), self._min_slot), uuid.uuid4().hex[:12])
        name = file_stem(chunk, token) + DATA_SUFFIX
        files: list[str] = []
        if isinstance(datapoints, pa.Table):
            if datapoints.num_rows:
                for (date, hour), part in _split_by_hour(datapoints):
                    files.append(
                        self._write_table(part, self._join(DATAPOINTS_DIR, hour_directory(date, hour), name))
                    )
        else:
            for written in datapoints:
                path = self._join(DATAPOINTS_DIR, hour_directory(written.date, written.hour), name)
                self._put(path, written.data)
                files.append(path)
        if quarantine.num_rows:
            files.append(self._write_table(quarantine, self._join(QUARANTINE_DIR, name)))
        if isinstance(raw, pa.Table):
            files.append(self._write_table(raw, self._join(RAW_DIR, name)))
            records = raw.num_rows
        else:
            files.append(self._join(RAW_DIR, name))
            self._put(files[-1], raw.data)
            records = raw.records
        return StagedChunk(
            chunk, token, tuple(files), records, points, quarantine.num_rows, last_timestamp_ms
        )

    def commit(self, staged: StagedChunk) -> None:
        """Write the chunk's marker: from now on it is landed. Refused unless the lease is held."""
        self.lease.check()
        marker = {"files": [path.removeprefix(self.path).lstrip("/") for path in staged.files]}
        marker["records"] = staged.records  # type: ignore[assignment]
        self._put(
            self._join(marker_folder(staged.token), file_stem(staged.chunk, staged.token) + MARKER_SUFFIX),
            json.dumps(marker).encode(),
        )

    # ---- reading (committed data only) -----------------------------------------------------------

    def committed_files(self, table: str) -> list[str]:
        """Paths (in ``self.fs``) of ``table``'s committed files: raw, datapoints or quarantine."""
        committed = self.committed()
        return sorted(
            path
            for path in self._find(self._join(table))
            if path.endswith(DATA_SUFFIX)
            and not path.rsplit("/", 1)[-1].startswith((".", "_"))  # hidden: temp files, Spark's markers
            and _entry(path) in committed | {None}
        )

    def arrow_files(self, table: str) -> tuple[pafs.FileSystem, list[str]]:
        """Committed files of ``table`` for pyarrow: ``ds.dataset(files, filesystem=fs)``."""
        filesystem = pafs.LocalFileSystem() if self.local else pafs.PyFileSystem(pafs.FSSpecHandler(self.fs))
        return filesystem, self.committed_files(table)

    def read_table(self, table: str, columns: list[str] | None = None) -> pa.Table:
        """``table``'s committed rows (an empty table when nothing is landed)."""
        parts = [
            pq.read_table(self.fs.open(path, "rb"), columns=columns) for path in self.committed_files(table)
        ]
        return pa.concat_tables(parts, promote_options="default") if parts else pa.table({})

    # ---- storage primitives ---------------------------------------------------------------------

    def _write_table(self, table: pa.Table, path: str) -> str:
        buffer = io.BytesIO()
        pq.write_table(table, buffer, **parquet_options(table.schema))
        self._put(path, buffer.getvalue())
        return path

    def _put(self, path: str, data: bytes) -> None:
        """One whole object; locally a file fsynced (with its folder, and every folder it had to
        create) before this returns."""
        if not self.local:
            self.fs.pipe_file(path, data)
            return
        directory = os.path.dirname(path)
        self._make_folders(directory)
        with open(path, "wb") as handle:
            handle.write(data)
            if self.fsync:
                handle.flush()
                os.fsync(handle.fileno())
        if self.fsync:
            _fsync_folder(directory)

    def _put_replacing(self, path: str, data: bytes) -> None:
        """``_put`` for a file that is rewritten (the checkpoint, the protocol): a reader sees the old
        content or the new, never a part (locally a temp file renamed over it; a PUT is whole)."""
        if not self.local:
            self.fs.pipe_file(path, data)
            return
        temporary = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
        self._put(temporary, data)
        os.replace(temporary, path)
        if self.fsync:
            _fsync_folder(os.path.dirname(path))

    def _make_folders(self, directory: str) -> None:
        """Create ``directory`` and its missing parents; fsync each parent that gained one, so a marker or
        data file in a new folder (a slot's, an hour's) survives a power loss with its folder."""
        with self._folders:  # a staging thread that finds the folder finds it fsynced into its parent
            missing = []
            while directory and not os.path.isdir(directory):
                missing.append(directory)
                directory = os.path.dirname(directory)
            for folder in reversed(missing):
                os.makedirs(folder, exist_ok=True)
                if self.fsync:
                    _fsync_folder(os.path.dirname(folder))

    def _names(self, directory: str) -> list[str]:
        if not fresh(self.fs).exists(directory):
            return []
        return [
            str(entry).rstrip("/").rsplit("/", 1)[-1] for entry in fresh(self.fs).ls(directory, detail=False)
        ]

    def _find(self, directory: str) -> list[str]:
        return list(fresh(self.fs).find(directory)) if fresh(self.fs).exists(directory) else []

    def _data_files(self) -> Iterable[str]:
        for table in (RAW_DIR, DATAPOINTS_DIR, QUARANTINE_DIR):
            yield from (path for path in self._find(self._join(table)) if _entry(path) is not None)


def _filed_in_or_after(token: str, slot: int) -> bool:
    filed = token_slot(token)
    return filed is not None and filed >= slot


def _fsync_folder(directory: str) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _entry(path: str) -> tuple[ChunkId, str] | None:
    name = path.rsplit("/", 1)[-1]
    return ChunkId.parse(name) if name.endswith(DATA_SUFFIX) else None


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _split_by_hour(datapoints: pa.Table) -> list[tuple[tuple[str, int], pa.Table]]:
    """Split a chunk's datapoints by their ``date``/``hour`` partition (usually one group).

    Both columns are the hour of ``record_timestamp`` (the decoders derive them from it), so the
    groups are found on that integer column.
    """
    hours = datapoints.column("record_timestamp").cast(pa.int64()).to_numpy() // _MS_PER_HOUR
    # min == max (one hour, nearly every chunk) without sorting every point's hour
    groups = hours[:1] if hours.min() == hours.max() else np.unique(hours)
    parts = []
    for group in groups:
        part = datapoints if len(groups) == 1 else datapoints.filter(pa.array(hours == group))
        date, hour = part.column("date")[0].as_py(), part.column("hour")[0].as_py()
        parts.append(((date, hour), part))
    return parts


def datapoints_uri(out_dir: str | os.PathLike[str]) -> str:
    """The URI of a landing zone's datapoints (what the landing operator's Asset points at)."""
    return storage_uri(as_storage_path(out_dir) / DATAPOINTS_DIR)


def next_offsets(chunks: Iterable[ChunkId]) -> dict[int, int]:
    """The next offset to land per partition after the committed ``chunks``; overlapping chunks (a zone
    changed by hand or by two writers) are refused, as landing on them could duplicate records."""
    following: dict[int, int] = {}
    previous: ChunkId | None = None
    for chunk in sorted(chunks):
        same_partition = previous is not None and previous.partition == chunk.partition
        if same_partition and chunk.first_offset <= previous.last_offset:  # type: ignore[union-attr]
            raise LandingError(
                f"{COMMITS_DIR}/: chunks {previous.stem} and {chunk.stem} overlap; "  # type: ignore[union-attr]
                "the landing zone was modified by hand or by two writers"
            )
        following[chunk.partition] = chunk.last_offset + 1
        previous = chunk
    return following
