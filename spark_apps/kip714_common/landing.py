"""Reading the landing zone's ``datapoints/`` for one interval, with partition pruning.

Adds the columns the apps compute on: ``ts``/``start_ts`` (Spark timestamps), ``time_ns``/``start_ns``
(exact epoch nanoseconds), ``point_value`` (double of value or value_int), normalised ``metric_name``
(the original kept in ``source_metric_name``), normalised ``attributes`` and ``attributes_key``,
``series_id`` (``series.series_table``), and ``broker_node_id``/``cluster_id`` filled from resource attributes
for broker records. ``read_datapoints`` returns them as ``LandedPoints``, with the series table and the
point kinds the read holds.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import reduce
from operator import and_

from kip714_common.cli import CommonArgs
from kip714_common.commit_markers import COMMITS_DIR, MARKER_SUFFIX, PROTOCOL_FILE, marker_folder
from kip714_common.errors import SparkAppInputError
from kip714_common.files import session_files
from kip714_common.names import METRIC_NAME_ALIASES
from kip714_common.run_shares import listed, persisted, shared
from kip714_common.schemas import DATAPOINT_SCHEMA
from kip714_common.selectors import RunSelection, selector_condition
from kip714_common.series import (
    RAW_SERIES_COLUMNS,
    PointKind,
    raw_series_columns,
    raw_series_key,
    series_table,
)
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

DATAPOINTS_DIR = "datapoints"
CHUNK_FILE = re.compile(r"^p(\d{5,})-(\d{20})-(\d{20})(?:\.([0-9a-f]{6,32}))?\.parquet$")
"""A chunk's data file, ``<chunk>.<token>.parquet``: landed only when its marker exists, in the folder its
token names (``commit_markers``; ``airflow_provider_kip714.telemetry.landing_zone`` writes both)."""


@dataclass(frozen=True)
class LandedPoints:
    """Normalised data points of one read, with the point kinds present in them (or a superset).

    The kinds come free with the pass that normalises names (``normalise``). Knowing them lets the rollup
    leave out its cumulative-counter and histogram branches when no point needs them; each would
    otherwise scan the whole interval again only to find nothing (about 3 s of 20 at 10M points).
    """

    frame: DataFrame
    kinds: frozenset[PointKind]
    series: DataFrame
    """One row per ``series_id``: metric_name, source_metric_name, metric_type, temporality,
    attributes_key, attributes (the strings the rollup joins back after aggregating)."""

    def where(self, condition: Column) -> LandedPoints:
        """The points matching ``condition``; the kinds stay a superset, which is always safe."""
        return LandedPoints(self.frame.where(condition), self.kinds, self.series)

    def has_any(self, metric_types: Collection[str], temporality: str | None = None) -> bool:
        """Whether any point is of one of ``metric_types`` (and of ``temporality``, when given)."""
        return any(
            kind in metric_types and (temporality is None or point_temporality == temporality)
            for kind, point_temporality in self.kinds
        )


def path_exists(spark: SparkSession, path: str) -> bool:
    """Existence check through the session's storage (``files.py``): s3a://, hdfs:// and local paths."""
    return session_files(spark).exists(path)


def _zone_exists(spark: SparkSession, path: str) -> bool:
    """``path_exists`` for a landing-zone path, answered once per run of several steps (``run_shares``)."""
    return listed(("exists", path), lambda: path_exists(spark, path))


def committed_datapoint_files(
    spark: SparkSession, input_root: str, start: datetime, end: datetime
) -> dict[str, int] | None:
    """Path -> bytes of the committed data files of the hours ``[start, end)`` touches (the chunks
    ``chunk_selection`` selects); ``None`` for a zone without markers. Within ``shared_reads`` one
    answer stands for the whole run (every step reads the same snapshot).

    Listing (never a folder glob) keeps a chunk that is being written, or was left by a crash, out of
    every read, and takes a chunk whole or not at all. A chunk file's marker is looked for in the one
    folder its token names (``commit_markers``): a run lists the slots its chunks were landed in, not
    every marker the zone holds. Only chunk files (``CHUNK_FILE``) need a marker: any other Parquet file
    was put there by something else (synthetic or copied data) and is read as before, and a zone without
    ``_commits/PROTOCOL`` was not written by the lander at all (a file, not the folder, is asked for:
    listing the folder would list every marker under it).
    """
    chunks_from = _CHUNKS_FROM
    folders = tuple(_hour_folders(input_root, start, end))
    selection = "all" if chunks_from is None else ",".join(f"{p}:{o}" for p, o in sorted(chunks_from.items()))
    key = f"{' '.join(folders)} {selection}"
    return listed(("committed", key), lambda: _committed_now(spark, input_root, folders, chunks_from))


def _committed_now(
    spark: SparkSession, input_root: str, folders: tuple[str, ...], chunks_from: Mapping[int, int] | None
) -> dict[str, int] | None:
    """``committed_datapoint_files``, listed now: the hour folders (which slots to look in), those slots'
    markers (once a run), then the hour folders again. A chunk spanning two hours writes both files
    before its marker, so once its marker is seen, the second listing holds both; the first may have
    caught only one."""
    if not _zone_exists(spark, f"{input_root}/{COMMITS_DIR}/{PROTOCOL_FILE}"):
        return None
    storage = session_files(spark)

    def chunk_files() -> Iterator[tuple[str, str, int, re.Match[str] | None]]:
        for folder in folders:
            for name, size in sorted(storage.sizes(folder).items()):
                if name.endswith(".parquet") and not name.startswith((".", "_")):  # temp files, Spark's own
                    yield folder, name, size, CHUNK_FILE.match(name)

    def selected(name: str, found: re.Match[str] | None) -> bool:
        return found is not None and (chunks_from is None or _chunk_selected(name, chunks_from))

    marker_folders = {
        marker_folder(found.group(4) or "")
        for _, name, _, found in chunk_files()
        if found is not None and selected(name, found)
    }
    committed = frozenset().union(*(_markers(spark, f"{input_root}/{folder}") for folder in marker_folders))
    return {
        f"{folder}/{name}": size
        for folder, name, size, found in chunk_files()
        if found is None or (selected(name, found) and name.removesuffix(".parquet") in committed)
    }


def _markers(spark: SparkSession, folder: str) -> frozenset[str]:
    """The chunk stems a marker folder names, listed once a run: every read of the run takes the same
    markers (and lists the hour folders after them)."""
    return listed(
        ("markers", folder),
        lambda: frozenset(name.removesuffix(MARKER_SUFFIX) for name in session_files(spark).sizes(folder)),
    )


def _hour_folders(input_root: str, start: datetime, end: datetime) -> list[str]:
    """The ``datapoints/date=/hour=`` folders of the hours ``[start, end)`` touches."""
    folders = []
    hour = start.replace(minute=0, second=0, microsecond=0)
    while hour < end:
        folders.append(f"{input_root}/{DATAPOINTS_DIR}/date={hour:%Y-%m-%d}/hour={hour.hour:02d}")
        hour += timedelta(hours=1)
    return folders


_CHUNKS_FROM: Mapping[int, int] | None = None


def _chunk_selected(name: str, chunks_from: Mapping[int, int]) -> bool:
    """Whether a chunk file holds an offset at or after its partition's ``chunks_from`` entry (a partition
    without an entry: yes)."""
    found = CHUNK_FILE.match(name)
    if found is None:
        return True
    first_wanted = chunks_from.get(int(found.group(1)))
    return first_wanted is None or int(found.group(3)) >= first_wanted


@contextmanager
def chunk_selection(chunks_from: Mapping[int, int] | None) -> Iterator[None]:
    """Within the block, read only the chunks holding offsets at or after ``chunks_from[partition]``.

    Live mode analyses what is new: the chunks its recent cycles landed (``--chunks-from``), not every
    file of the hour, so a cycle at minute 55 reads as much as one at minute 5. Partitions not named have
    every chunk read (a partition no cycle knew yet is new, and small); files not named like chunks
    (synthetic or copied data) are read as always.
    """
    global _CHUNKS_FROM
    previous, _CHUNKS_FROM = _CHUNKS_FROM, chunks_from
    try:
        yield
    finally:
        _CHUNKS_FROM = previous


def hour_partition_filter(start: datetime, end: datetime) -> Column:
    """``date``/``hour`` predicate covering ``[start, end)`` so Spark lists and reads only those folders."""
    first = start.replace(minute=0, second=0, microsecond=0)
    by_date: dict[str, list[int]] = {}
    hour = first
    while hour < end:
        by_date.setdefault(hour.strftime("%Y-%m-%d"), []).append(hour.hour)
        hour += timedelta(hours=1)
    condition: Column | None = None
    for date, hours in by_date.items():
        clause = (F.col("date") == date) & F.col("hour").between(min(hours), max(hours))
        condition = clause if condition is None else condition | clause
    return condition if condition is not None else F.lit(False)


def epoch_nanos(dt: datetime) -> int:
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


LATE_GRACE = timedelta(hours=1)
"""How long after its own hour a point's record may be stamped and still be read with that hour.

Landing files records by the broker's timestamp (``date=/hour=`` of ``record_timestamp``); the apps select
points by their own ``time``. A point taken at 23:59:59.990 whose push the broker stamped 00:00:00.020
sits in hour 00's folder: a run therefore reads its interval's hour folders and the next hour's, and a
point counts in the interval of its own time, so in exactly one of two consecutive runs."""


def landed_hours(spark: SparkSession, input_root: str, start: datetime, end: datetime) -> DataFrame:
    """Committed rows of the ``date=/hour=`` folders covering ``[start, end)`` (lazy)."""
    root = f"{input_root}/{DATAPOINTS_DIR}"
    if not _zone_exists(spark, root):
        raise SparkAppInputError("--input", f"must be a landing zone root holding {DATAPOINTS_DIR}/", root)
    committed = committed_datapoint_files(spark, input_root, start, end)
    reader = spark.read.schema(DATAPOINT_SCHEMA).option("basePath", root)
    if committed is None:
        hours = reader.parquet(root)
    elif committed:
        folders, left_out = folders_of(spark, committed)
        hours = reader.parquet(*folders)
        if left_out:
            hours = hours.where(~F.col("_metadata.file_name").isin(left_out))
    else:
        hours = spark.createDataFrame([], DATAPOINT_SCHEMA)
    return hours.where(hour_partition_filter(start, end))


def folders_of(spark: SparkSession, files: Iterable[str]) -> tuple[list[str], list[str]]:
    """The folders holding ``files``, and the names of the other files in them (to leave out of a read).

    Spark reads the folders, not the files: a follow-mode landing cuts a chunk every few seconds, so an
    hour holds about a thousand small files, and given more than 32 paths Spark lists them in a job of
    one task per path, once per read. The folders are listed once each; the other files (chunks not
    committed or not selected, files that are not Parquet) are pruned by name from Spark's listing (a
    filter on file metadata is applied to the listing itself, so no such file is opened).
    """
    wanted: dict[str, set[str]] = {}
    for path in files:
        folder, name = path.rsplit("/", 1)
        wanted.setdefault(folder, set()).add(name)
    # listed now, never from a run's earlier listing (``run_shares.listed``): Spark lists the folders
    # again when it reads them, and a file that appeared since (a chunk staged but not committed yet,
    # or committed after this run took its snapshot of the markers) must be on this list to stay out of
    # the read
    listed = session_files(spark)
    left_out = sorted(
        {name for folder, names in wanted.items() for name in listed.names(folder) if name not in names}
    )
    return list(wanted), left_out


def landed_bytes(spark: SparkSession, input_root: str, start: datetime, end: datetime) -> int:
    """Parquet bytes a run over ``[start, end)`` reads: its committed (and, within ``chunk_selection``,
    selected) data files; every file of the hour folders in a zone without markers.

    What the run reads, not what the hours hold: a live cycle reads the chunks of its last minutes, while
    its hour folder grows all hour."""
    committed = committed_datapoint_files(spark, input_root, start, end)
    if committed is not None:
        return sum(committed.values())
    files = session_files(spark)
    return sum(files.size(folder) for folder in _hour_folders(input_root, start, end))


def landing_counts(
    spark: SparkSession, input_root: str, read_start: datetime, start: datetime, end: datetime
) -> dict[str, int]:
    """What a run leaves out, for its summary (one small pass over the interval's own hour folders).

    ``null_metric_name_points``: points of ``[start, end)`` without a metric name, skipped (no rollup can
    name them). ``late_points``: points filed in the interval's hours whose time is before ``read_start``
    (``--start`` minus the counter lookback): their records were stamped long after their own time; they
    are in their own hour's rollup only if that hour's run (or a rerun of it) read them.
    """
    frame = landed_hours(spark, input_root, start, end)
    in_interval = (F.col("time") >= epoch_nanos(start)) & (F.col("time") < epoch_nanos(end))
    row = frame.agg(
        F.count(F.when(in_interval & F.col("metric_name").isNull(), 1)).alias("null_names"),
        F.count(F.when(F.col("time") < epoch_nanos(read_start), 1)).alias("late"),
    ).first()
    return {"null_metric_name_points": int(row["null_names"]), "late_points": int(row["late"])}  # type: ignore[index]


def read_datapoints(
    spark: SparkSession,
    input_root: str,
    start: datetime,
    end: datetime,
    metric_aliases: Mapping[str, str] | None = None,
    selection: RunSelection | None = None,
) -> LandedPoints:
    """Data points with ``start <= time < end`` and a metric name, normalised (see module docstring).

    Read from the folders of ``[start, end + LATE_GRACE)``; rows without a metric name are skipped
    (``landing_counts`` counts them for the run summary). With a ``selection`` (a troubleshooting
    run), only its clients' points and the broker records that concern them (``run_clients``).
    """

    def read() -> LandedPoints:
        points = _read_datapoints(spark, input_root, start, end, metric_aliases, selection)
        return LandedPoints(persisted(points.frame), points.kinds, points.series)

    return shared(("read", *_read_key(input_root, start, end, metric_aliases, selection)), read)


def _read_key(
    input_root: str,
    start: datetime,
    end: datetime,
    metric_aliases: Mapping[str, str] | None,
    selection: RunSelection | None,
) -> tuple[object, ...]:
    """What identifies a read of the landing zone within a run (``read_datapoints``'s shared reads)."""
    return (input_root, start, end, tuple(sorted((metric_aliases or {}).items())), selection_key(selection))


def run_read_key(common: CommonArgs) -> tuple[object, ...]:
    """The key of ``read_run_datapoints(spark, common)``'s read (its default start and end)."""
    return _read_key(
        common.input, common.read_start, common.interval.end, common.metric_aliases, common.selection
    )


def read_run_datapoints(
    spark: SparkSession, common: CommonArgs, start: datetime | None = None, end: datetime | None = None
) -> LandedPoints:
    """``read_datapoints`` for an app's run: its ``--input``, aliases and selection.

    One home for the flags every app threads through; ``start`` defaults to ``common.read_start``
    (``--start`` less the counter lookback), ``end`` to ``--end``.
    """
    read_start = common.read_start if start is None else start
    read_end = common.interval.end if end is None else end
    return read_datapoints(spark, common.input, read_start, read_end, common.metric_aliases, common.selection)


def _read_datapoints(
    spark: SparkSession,
    input_root: str,
    start: datetime,
    end: datetime,
    metric_aliases: Mapping[str, str] | None,
    selection: RunSelection | None = None,
) -> LandedPoints:
    hours = landed_hours(spark, input_root, start, end + LATE_GRACE)
    hours = hours.where(F.col("metric_name").isNotNull())
    raw = hours.where((F.col("time") >= epoch_nanos(start)) & (F.col("time") < epoch_nanos(end)))
    if selection is not None:
        raw = run_clients(raw, selection)
    # the series of the whole hours: a superset, which is always safe, read without the time column
    return normalise(raw, metric_aliases, series_source=hours)


def selection_key(selection: RunSelection | None) -> tuple[object, ...] | None:
    return None if selection is None else (selection.since, tuple(sorted(selection.match.items())))


def run_clients(frame: DataFrame, selection: RunSelection) -> DataFrame:
    """The rows of ``frame`` (``DATAPOINT_SCHEMA``) that belong to a troubleshooting run.

    Client records whose labels ``selection.match`` matches (``selectors.selector_condition``, the
    broker's whole-value rule), pushed at or after ``selection.since``: a push landed in the margin
    before the window was made under another subscription and would read as a gap in delivery.
    Broker records: the broker's own series (no ``client_instance_id`` attribute: instance count,
    unknown-subscription requests) whole, and the per-client series (throttles, plugin exports and
    errors) of the instances kept above, by either form of their id. Other clients' rows are dropped.
    """
    since = F.lit(selection.since).cast("timestamp")
    mine = (
        (F.col("record_type") == "client")
        & selector_condition(selection.match)
        & (F.col("record_timestamp") >= since)
    )
    clients = frame.where(mine)
    ids = (
        clients.select(F.col("client_instance_id").alias("_instance"))
        .unionByName(clients.select(F.col("client_instance_id_hex").alias("_instance")))
        .where(F.col("_instance").isNotNull())
        .distinct()
    )
    instance = F.col("attributes")["client_instance_id"]
    brokers = frame.where(F.col("record_type") == "broker")
    per_client = brokers.where(instance.isNotNull())
    kept = per_client.join(
        F.broadcast(ids), per_client["attributes"]["client_instance_id"] == ids["_instance"], "left_semi"
    )
    return clients.unionByName(brokers.where(instance.isNull())).unionByName(kept)


def normalise(
    raw: DataFrame, metric_aliases: Mapping[str, str] | None = None, series_source: DataFrame | None = None
) -> LandedPoints:
    """Add the computed columns to rows in ``DATAPOINT_SCHEMA`` form.

    Names and labels are normalised once per distinct series of ``series_source`` (``raw`` itself by
    default, else a superset of its rows: metric name, label set, type, temporality), a small cached
    table broadcast back onto the points: per point, the string functions and label lambdas cost several
    times more than the rest of the rollup. The same table gives every point a ``series_id`` (see
    ``series_table``) and tells which point kinds the read may hold.
    """
    source = raw if series_source is None else series_source
    typed = source.select(
        *[column.alias(name) for name, column in raw_series_columns(source).items()]
    ).distinct()
    table = series_table(typed, {**METRIC_NAME_ALIASES, **(metric_aliases or {})})
    names = table.names
    if table.raw_seed is not None:
        # one long per point, looked up in a long-keyed table: no label arrays copied into a join key
        # and compared byte for byte (less CPU per point; end to end at 10M, within the run-to-run noise)
        keyed = raw.withColumn("_raw_key", raw_series_key(raw, table.raw_seed))
        condition = keyed["_raw_key"] == names["_raw_key"]
    else:
        keyed, point = raw, raw_series_columns(raw)
        condition = reduce(and_, [point[name].eqNullSafe(names[name]) for name in RAW_SERIES_COLUMNS])
    joined = keyed.join(F.broadcast(names), condition, "left")
    kept = [keyed[c] for c in raw.columns if c not in ("metric_name", "attributes", "cluster_id")]
    frame = joined.select(
        *kept,
        keyed["metric_name"].alias("source_metric_name"),
        keyed["attributes"].alias("source_attributes"),
        names["_metric_name"].alias("metric_name"),
        names["_labels"].alias("attributes"),
        names["_attributes_key"].alias("attributes_key"),
        names["series_id"],
        keyed["time"].alias("time_ns"),
        keyed["start_time"].alias("start_ns"),
        F.timestamp_micros(F.floor(keyed["time"] / 1000)).alias("ts"),
        F.timestamp_micros(F.floor(keyed["start_time"] / 1000)).alias("start_ts"),
        F.coalesce(keyed["value"], keyed["value_int"].cast("double")).alias("point_value"),
        # try_cast: Spark 4 casts in ANSI mode, where a label like "node-1" would fail the whole run
        F.coalesce(keyed["node_id"], keyed["resource_attributes"]["node_id"].try_cast("int")).alias(
            "broker_node_id"
        ),
        F.coalesce(keyed["cluster_id"], keyed["resource_attributes"]["cluster_id"]).alias("cluster_id"),
    )
    series = names.select(
        "series_id",
        F.col("_metric_name").alias("metric_name"),
        F.col("_source_name").alias("source_metric_name"),
        F.col("_kind").alias("metric_type"),
        F.col("_temporality").alias("temporality"),
        F.col("_attributes_key").alias("attributes_key"),
        F.col("_labels").alias("attributes"),
    ).dropDuplicates(["series_id"])
    return LandedPoints(frame, table.kinds, series)
