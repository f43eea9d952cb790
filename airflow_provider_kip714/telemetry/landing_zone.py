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
zone ever landed (``landing_checkpoint``). Only when the last run did not end cleanly (a crash, a
failure), or left no readable checkpoint, does ``recover()`` list every data file and delete those no
marker names. Nothing is duplicated or lost: every marker committed after a checkpoint is filed in its
slot or later (a run's tokens never name an earlier slot than the checkpoint it began from, whatever its
clock says).

What a chunk is called is ``chunk_names``; whole writes and fresh listings, locally or on an object
store, are ``zone_storage``.

**One writer.** Only the holder of the zone's lease (``lease.ZoneLease``) stages, commits or recovers;
it checks the lease before each marker it writes.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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
from airflow_provider_kip714.telemetry.chunk_names import DATA_SUFFIX, ChunkId, file_stem
from airflow_provider_kip714.telemetry.landing_checkpoint import (
    all_markers,
    read_checkpoint,
    resume_point,
    write_checkpoint,
)
from airflow_provider_kip714.telemetry.lease import ZoneLease
from airflow_provider_kip714.telemetry.zone_storage import ZoneStorage
from spark_apps.kip714_common.commit_markers import (
    COMMITS_DIR,
    MARKER_SUFFIX,
    PROTOCOL_FILE,
    marker_folder,
    slot_of,
    slotted_token,
)

if TYPE_CHECKING:
    from airflow_provider_kip714.decoding.native_writer import DatapointFile, RawFile

log = logging.getLogger(__name__)

RAW_DIR: Final = "raw"
DATAPOINTS_DIR: Final = "datapoints"
QUARANTINE_DIR: Final = "quarantine"
LEASE_DIR: Final = "_lease"
ZONE_FILE: Final = "_zone.json"
_ZONE_TOPIC_KEY: Final = "zone_topic"
_V1_FENCE: Final = " (landing protocol v2: upgrade the provider to land here)"
PROTOCOL: Final = "kip714 landing commit markers v2\n"
"""v2: markers filed by slot, and the checkpoint; v1 zones (markers in ``_commits/`` itself) read the same."""
KNOWN_PROTOCOLS: Final = frozenset({"kip714 landing commit markers v1\n", PROTOCOL})
_MS_PER_HOUR: Final = 3_600_000
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


def hour_directory(date: str, hour: int) -> str:
    return f"date={date}/hour={hour:02d}"


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
        self.fs, self.path = fsspec_location(self.root)
        self.storage = ZoneStorage(self.fs, self.path, fsync=fsync)
        self.local = self.storage.local
        self.lease = ZoneLease(self.fs, self._join(LEASE_DIR), str(self.root))
        self.raw_dir = self.root / RAW_DIR
        self.datapoints_dir = self.root / DATAPOINTS_DIR
        self.quarantine_dir = self.root / QUARANTINE_DIR
        self.commits_dir = self.root / COMMITS_DIR
        self._min_slot = 0
        """No token of this run names an earlier slot (``recover`` sets it from the checkpoint)."""

    def lock(self) -> ZoneLease:
        """The zone's lease, a context manager: two landing runs on one zone would break the protocol."""
        return self.lease

    def _join(self, *parts: str) -> str:
        return self.storage.join(*parts)

    # ---- set-up and recovery (lease held) -------------------------------------------------------

    def prepare(self) -> None:
        """Pin the zone to its topic (refuse another topic's zone), keep landers from before protocol v2
        out of it, and declare the marker protocol."""
        zone_file = self._join(ZONE_FILE)
        text = self.storage.read_if_present(zone_file)
        body = {} if text is None else _zone_record(text, zone_file)
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
            self.storage.put_replacing(zone_file, json.dumps(guard).encode())
        protocol_file = self._join(COMMITS_DIR, PROTOCOL_FILE)
        declared = (self.storage.read_if_present(protocol_file) or b"").decode(errors="replace")
        if not declared:  # none yet, or a write that died before its bytes (adopting again is harmless)
            self._adopt_pre_marker_chunks()
            self.storage.put_replacing(protocol_file, PROTOCOL.encode())
            return
        if declared not in KNOWN_PROTOCOLS:
            raise LandingError(
                f"out_dir: {self.root} was landed by a newer version of the lander "
                f"({declared.strip()[:60]!r} in {COMMITS_DIR}/{PROTOCOL_FILE}); upgrade the provider on "
                "every worker that lands into it"
            )
        if declared != PROTOCOL:  # a v1 zone: its markers stay where they are, new ones go to slots
            self.storage.put_replacing(protocol_file, PROTOCOL.encode())

    def _adopt_pre_marker_chunks(self) -> None:
        """Zones landed before markers existed: their raw file was the commit; give each a marker.

        Their runs' leftover ``.tmp-*`` files (never committed) are removed here, once.
        """
        for table in (RAW_DIR, DATAPOINTS_DIR, QUARANTINE_DIR):
            for path in self.storage.find(self._join(table)):
                if path.rsplit("/", 1)[-1].startswith(".tmp-"):
                    self.fs.rm_file(path)
        for name in self.storage.names(self._join(RAW_DIR)):
            parsed = ChunkId.parse(name)
            if parsed is not None and parsed[1] == "" and name.endswith(DATA_SUFFIX):
                self.storage.put(self._join(COMMITS_DIR, parsed[0].stem + MARKER_SUFFIX), b"{}")

    def committed(self) -> set[tuple[ChunkId, str]]:
        """``(chunk, token)`` of every committed chunk (from the markers alone; every slot's)."""
        return all_markers(self.storage)

    def landed_chunks(self) -> list[ChunkId]:
        return sorted(chunk for chunk, _ in self.committed())

    def landed_next_offsets(self) -> dict[int, int]:
        """The next offset to land per partition (``landing_checkpoint``): work bounded by what landed
        since the last run, not by the zone's age. Needs no lease: offsets below the answer were
        committed when it was read."""
        return resume_point(self.storage, read_checkpoint(self.storage))[0]

    def recover(self) -> dict[int, int]:
        """Begin a run: delete data files no marker names when the last run did not end cleanly (or left
        no readable checkpoint); record that a run is under way; return the next offset to land per
        partition."""
        self.lease.check()
        checkpoint = read_checkpoint(self.storage)
        everything = None
        if checkpoint is None or not checkpoint.clean:
            everything = self.committed()
            self._remove_orphans(everything)
        following, markers = resume_point(self.storage, checkpoint, everything)
        self._min_slot = max(slot_of(time.time()), checkpoint.slot if checkpoint is not None else 0)
        self.lease.check()  # the sweep may have taken a while
        write_checkpoint(self.storage, self._min_slot, following, markers, clean=False)
        return following

    def finish(self) -> dict[int, int]:
        """End a run whose staged chunks are all committed: a clean checkpoint, so the next run neither
        lists every data file nor every marker. Returns the next offset to land per partition."""
        self.lease.check()
        following, markers = resume_point(self.storage, read_checkpoint(self.storage))
        self._min_slot = max(self._min_slot, slot_of(time.time()))
        write_checkpoint(self.storage, self._min_slot, following, markers, clean=True)
        return following

    def _remove_orphans(self, committed: set[tuple[ChunkId, str]]) -> None:
        """Delete every data file no marker names (a run that died left them; readers never read them)."""
        orphans = [path for path in self._data_files() if _entry(path) not in committed]
        for orphan in orphans:  # one DeleteObject each: S3Proxy refuses DeleteObjects with SDK checksums
            self.fs.rm_file(orphan)
        if orphans:
            log.warning(
                "landing zone %s: removed %d file(s) left by an interrupted run", self.root, len(orphans)
            )

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
                self.storage.put(path, written.data)
                files.append(path)
        if quarantine.num_rows:
            files.append(self._write_table(quarantine, self._join(QUARANTINE_DIR, name)))
        if isinstance(raw, pa.Table):
            files.append(self._write_table(raw, self._join(RAW_DIR, name)))
            records = raw.num_rows
        else:
            files.append(self._join(RAW_DIR, name))
            self.storage.put(files[-1], raw.data)
            records = raw.records
        return StagedChunk(
            chunk, token, tuple(files), records, points, quarantine.num_rows, last_timestamp_ms
        )

    def commit(self, staged: StagedChunk) -> None:
        """Write the chunk's marker: from now on it is landed. Refused unless the lease is held."""
        self.lease.check()
        marker = {"files": [path.removeprefix(self.path).lstrip("/") for path in staged.files]}
        marker["records"] = staged.records  # type: ignore[assignment]
        self.storage.put(
            self._join(marker_folder(staged.token), file_stem(staged.chunk, staged.token) + MARKER_SUFFIX),
            json.dumps(marker).encode(),
        )

    # ---- reading (committed data only) -----------------------------------------------------------

    def committed_files(self, table: str) -> list[str]:
        """Paths (in ``self.fs``) of ``table``'s committed files: raw, datapoints or quarantine."""
        readable = self.committed() | {None}  # None: a name no chunk has (a file put there by hand)
        return sorted(
            path
            for path in self.storage.find(self._join(table))
            if path.endswith(DATA_SUFFIX)
            and not path.rsplit("/", 1)[-1].startswith((".", "_"))  # hidden: temp files, Spark's markers
            and _entry(path) in readable
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
        self.storage.put(path, buffer.getvalue())
        return path

    def _data_files(self) -> Iterable[str]:
        for table in (RAW_DIR, DATAPOINTS_DIR, QUARANTINE_DIR):
            yield from (path for path in self.storage.find(self._join(table)) if _entry(path) is not None)


def _zone_record(text: bytes, path: str) -> dict[str, Any]:
    """``_zone.json``'s object; one line naming the file when it is anything else."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise LandingError(f"out_dir: {path} must be a JSON object naming the zone's topic; it is not")
    return body


def _entry(path: str) -> tuple[ChunkId, str] | None:
    name = path.rsplit("/", 1)[-1]
    return ChunkId.parse(name) if name.endswith(DATA_SUFFIX) else None


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
