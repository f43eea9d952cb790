"""Read the Spark apps' Parquet outputs with pyarrow: the one reader of the UI, report, troubleshooting, demo.

Workers and the API server must not start a JVM, so pyarrow reads the ``date=/hour=`` folders the
apps write (schemas in ``spark_apps/kip714_common/schemas.py``); the hidden files Spark leaves
(``_SUCCESS``, ``.crc``) are skipped. A missing or empty table is a normal state (nothing ran yet):
it reads as an empty frame and the caller says so.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from typing import Final

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from airflow_provider_kip714.storage.data_root import (
    ANALYTICS_TABLES,
    RunArea,
    StoragePath,
    arrow_location,
    remove_tree,
)

TABLES = (*ANALYTICS_TABLES, "broker_client_metrics", "delivery", "convergence", "capabilities")
MAP_COLUMNS = ("attributes", "resource_attributes")
_PARTITIONING = ds.partitioning(pa.schema([("date", pa.string()), ("hour", pa.int32())]), flavor="hive")
_HOUR_FOLDER = re.compile(r"hour=(\d{1,2})")


def table_path(area: RunArea, table: str) -> StoragePath:
    """The folder of one of the apps' tables; any other name is refused (no path from a request)."""
    if table not in TABLES:
        raise ValueError(f"table: must be one of {TABLES}, got {table!r}")
    return area.table(table)


def _dataset(area: RunArea, table: str) -> ds.Dataset | None:
    """The table's Parquet files on the data root's filesystem (local or object store); None if none."""
    filesystem, where = arrow_location(table_path(area, table))
    if filesystem.get_file_info(where).type != pafs.FileType.Directory:
        return None
    dataset = ds.dataset(
        where, filesystem=filesystem, format="parquet", partitioning=_PARTITIONING, ignore_prefixes=[".", "_"]
    )
    return dataset if dataset.files else None


class HourPartitions:
    """The visible data files of a table's ``date=/hour=`` partitions, one listing per ``date=`` folder asked
    about (no file read), kept for the object's life: cheap enough for every live cycle, on a local disk or
    an object store. Make a new one to see later writes."""

    def __init__(self, area: RunArea, table: str) -> None:
        self._filesystem, self._where = arrow_location(table_path(area, table))
        self._by_date: dict[str, dict[int, list[pafs.FileInfo]]] = {}

    def last_held(self, ends_after: datetime, ends_by: datetime) -> datetime | None:
        """The end of the latest hour holding a data file whose end is in ``(ends_after, ends_by]``; None
        when none does."""
        end = ends_by.replace(minute=0, second=0, microsecond=0)
        while end > ends_after:
            if self.files(end - timedelta(hours=1)):
                return end
            end -= timedelta(hours=1)
        return None

    def fingerprint(self, start: datetime, end: datetime) -> str:
        """A digest of the data files (name, size, modification time) of the hours in ``[start, end)``: it
        changes when a run rewrites one of them."""
        digest = hashlib.sha256()
        hour = start.replace(minute=0, second=0, microsecond=0)
        while hour < end:
            for info in self.files(hour):
                digest.update(f"{info.path}\0{info.size}\0{info.mtime_ns}\n".encode())
            hour += timedelta(hours=1)
        return digest.hexdigest()[:16]

    def files(self, hour: datetime) -> list[pafs.FileInfo]:
        date = hour.strftime("%Y-%m-%d")
        if date not in self._by_date:
            self._by_date[date] = self._list(f"{self._where}/date={date}")
        return self._by_date[date].get(hour.hour, [])

    def _list(self, date_folder: str) -> dict[int, list[pafs.FileInfo]]:
        selector = pafs.FileSelector(date_folder, allow_not_found=True, recursive=True)
        by_hour: dict[int, list[pafs.FileInfo]] = {}
        for info in sorted(self._filesystem.get_file_info(selector), key=lambda info: info.path):
            if info.type != pafs.FileType.File or info.base_name.startswith((".", "_")):
                continue  # Spark's own rule: _SUCCESS, .crc and a write's _temporary files are not data
            found = _HOUR_FOLDER.search(info.path[len(date_folder) :])
            if found is not None and "/_" not in info.path[len(date_folder) :]:
                by_hour.setdefault(int(found.group(1)), []).append(info)
        return by_hour


# What makes two anomaly rows the same breach of the same series (learned thresholds may differ by run).
_BREACH_KEY: Final = (
    "kind", "rule_name", "metric_name", "field", "client_group", "baseline_kind", "peer_group",
    "client_instance_id", "client_instance_id_hex", "client_id", "client_software_name",
    "client_software_version", "client_source_address", "principal", "attributes_key",
)  # fmt: skip


def _one_row_per_breach(frame: pd.DataFrame) -> pd.DataFrame:
    """Merge the rows of one breach that consecutive runs each reported.

    The anomalies app judges a breach with the buckets before its run's start (``breach_context``), so a
    breach still open when one hourly run ended is reported again, extended, by the next. Rows of the
    same rule and series whose spans overlap or touch become one: the later row, from the earliest start.
    """
    key = [name for name in _BREACH_KEY if name in frame.columns]
    if frame.empty or not key or not {"breach_start", "breach_end"} <= set(frame.columns):
        return frame
    ordered = frame.sort_values([*key, "breach_start"], kind="stable").reset_index(drop=True)
    by_series = [ordered[name] for name in key]
    running = ordered["breach_end"].groupby(by_series, dropna=False, sort=False).cummax()
    reached = running.groupby(by_series, dropna=False, sort=False).shift()  # the furthest end before each row
    separate = reached.isna() | (ordered["breach_start"] > reached)
    breach = separate.astype(int).groupby(by_series, dropna=False).cumsum()
    merged = ordered.assign(_breach=breach.to_numpy())
    first_start = merged.groupby([*key, "_breach"], dropna=False)["breach_start"].transform("min")
    keep = merged.groupby([*key, "_breach"], dropna=False)["breach_end"].transform("idxmax")
    kept = merged.assign(breach_start=first_start).loc[sorted(set(keep))]
    if "duration_seconds" in kept.columns:
        spans = (kept["breach_end"] - kept["breach_start"]).dt.total_seconds()
        kept = kept.assign(duration_seconds=spans.astype(kept["duration_seconds"].dtype))
    return kept.drop(columns="_breach").reset_index(drop=True)


def _as_dict(value: object) -> dict[str, str]:
    """pyarrow gives MAP values as (key, value) pairs; callers want a dict."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    return {str(k): "" if v is None else str(v) for k, v in value}  # type: ignore[union-attr]


HOUR_PARTITION: Final = re.compile(r"/date=(\d{4}-\d{2}-\d{2})/hour=(\d{1,2})/")
"""A data file's ``date=/hour=`` folders in its path (local or object store)."""


def _partition_hour(path: str) -> datetime | None:
    """The start of a data file's ``date=/hour=`` partition; None outside one, or for a folder name no
    Spark write makes (``date=2026-13-40``, ``hour=99``), which is then not what bounds the read."""
    found = HOUR_PARTITION.search(path)
    if found is None or int(found.group(2)) > 23:
        return None
    try:
        return datetime.strptime(found.group(1), "%Y-%m-%d") + timedelta(hours=int(found.group(2)))
    except ValueError:
        return None


def _newest_hours_filter(files: list[str], hours: int) -> ds.Expression | None:
    """The partitions of the ``hours`` hours ending with the newest one among ``files``; None when no file
    is in a ``date=/hour=`` partition (nothing to bound by). Files outside such partitions are left out
    whenever some file is in one."""
    if hours < 1:
        raise ValueError(f"newest_hours: must be at least 1, got {hours}")
    held = [hour for hour in map(_partition_hour, files) if hour is not None]
    if not held:
        return None
    newest = max(held)
    by_date: dict[str, list[int]] = {}
    for back in range(hours):
        hour = newest - timedelta(hours=back)
        by_date.setdefault(hour.strftime("%Y-%m-%d"), []).append(hour.hour)
    condition: ds.Expression | None = None
    for date, in_date in by_date.items():
        term = (
            (ds.field("date") == date)
            & (ds.field("hour") >= min(in_date))
            & (ds.field("hour") <= max(in_date))
        )
        condition = term if condition is None else condition | term
    return condition


def _filter(names: list[str], equal: dict[str, str]) -> ds.Expression | bool | None:
    """The pushed-down condition; False when a filtered column does not exist (no row can match)."""
    condition = None
    for column, value in equal.items():
        if column not in names:
            return False
        term = ds.field(column) == value
        condition = term if condition is None else condition & term
    return condition


def read_table(
    area: RunArea,
    table: str,
    columns: list[str] | None = None,
    equal: dict[str, str] | None = None,
    *,
    newest_hours: int | None = None,
) -> pd.DataFrame:
    """A table as a DataFrame: timestamps in UTC, MAP columns as dicts; empty when nothing was written.

    ``columns`` and ``equal`` (column -> value) are pushed down to the Parquet scan, so a chart for one
    client reads only its row groups and columns, not the whole rollups table. ``newest_hours``: only the
    hour partitions within that many hours of the newest one the table holds (one listing; no older file
    is opened but the one pyarrow reads for the schema), for tables that gain an hour partition every
    hour and are read whole.
    """
    dataset = _dataset(area, table)
    if dataset is None:
        return pd.DataFrame(columns=columns or [])
    names = dataset.schema.names
    wanted = None if columns is None else [name for name in columns if name in names]
    condition = _filter(names, equal or {})
    if condition is False:
        return pd.DataFrame(columns=wanted if wanted is not None else names)
    if newest_hours is not None:
        recent = _newest_hours_filter(dataset.files, newest_hours)
        if recent is not None:
            condition = recent if condition is None else condition & recent
    frame = dataset.to_table(columns=wanted, filter=condition).to_pandas()
    if table == "anomalies":
        frame = _one_row_per_breach(frame)
    for name in frame.columns:
        if name in MAP_COLUMNS:
            frame[name] = frame[name].map(_as_dict)
        elif pd.api.types.is_datetime64_any_dtype(frame[name]):
            series = frame[name]
            frame[name] = (
                series.dt.tz_localize("UTC") if series.dt.tz is None else series.dt.tz_convert("UTC")
            )
    return frame


CAPABILITY_HOURS: Final = 7 * 24
"""How far back from its newest hour a ``capabilities`` table is read (``capabilities_of``)."""


def capabilities_of(area: RunArea) -> pd.DataFrame:
    """The ``capabilities`` rows of the table's newest ``CAPABILITY_HOURS``: what each library version pushed.

    The live and hourly tables gain an hour partition every hour; read whole, the guardrails' check and the
    UI page grew slower as the deployment aged (a month of hours in both, and 300 runs: 1.7-1.9 s of CPU a
    check on a local disk, and a file request per hour on an object store; ``docs/live.md``). A library
    version not seen for a week is no longer known."""
    return read_table(area, "capabilities", newest_hours=CAPABILITY_HOURS)


def copy_rows(source: RunArea, target: RunArea, table: str, equal: dict[str, str]) -> int:
    """Replace ``target``'s table with the rows of ``source``'s that have ``equal`` (column -> value), in
    one file; returns how many. Arrow throughout: no row becomes a Python object."""
    folder = table_path(target, table)
    if folder.exists():
        remove_tree(folder)  # its objects only, on an object store (``remove_tree``)
    filesystem, where = arrow_location(folder)
    dataset = _dataset(source, table)
    condition = _filter(dataset.schema.names, equal) if dataset is not None else False
    if dataset is None or condition is False:
        return 0
    rows = dataset.to_table(filter=condition)
    if rows.num_rows == 0:
        return 0
    filesystem.create_dir(where, recursive=True)
    pq.write_table(rows, f"{where}/part-0.parquet", filesystem=filesystem)
    return rows.num_rows


def distinct_values(area: RunArea, table: str, column: str, equal: dict[str, str] | None = None) -> list[str]:
    """Sorted distinct non-empty values of one column (only that column is read)."""
    dataset = _dataset(area, table)
    if dataset is None or column not in dataset.schema.names:
        return []
    condition = _filter(dataset.schema.names, equal or {})
    if condition is False:
        return []
    values = dataset.to_table(columns=[column], filter=condition)[column]
    return sorted(str(v) for v in pc.unique(values).to_pylist() if v)


def client_metric_names(area: RunArea) -> list[str]:
    """Distinct client metric names in the zone's rollups (empty when none were written)."""
    return distinct_values(area, "rollups", "metric_name", equal={"record_type": "client"})


def instance_attribute(area: RunArea, table: str, key: str) -> dict[str, str]:
    """``client_instance_id`` -> one of its resource attributes (a consumer's ``group_id``).

    Found in the MAP column's flat key and value arrays by pyarrow, so a fleet's rows are neither turned
    into Python dicts one by one (``read_table`` does that for whole MAP columns) nor looked up map by
    map (``map_lookup``: 0.11 s for 390,000 rows, against 0.05 s this way); the greatest value per
    instance wins (an instance's resource attributes do not change).
    """
    dataset = _dataset(area, table)
    if dataset is None or not {"client_instance_id", "resource_attributes"} <= set(dataset.schema.names):
        return {}
    data = dataset.to_table(columns=["client_instance_id", "resource_attributes"])
    maps = data["resource_attributes"].combine_chunks()
    offsets = maps.offsets.to_numpy()  # absolute positions in the flat key and value arrays
    first, last = int(offsets[0]), int(offsets[-1])
    owner = np.repeat(np.arange(len(maps)), np.diff(offsets))  # each entry's row
    present = maps.is_valid().to_numpy(zero_copy_only=False)[owner]  # a null map's range holds no entry
    keyed = pc.equal(maps.keys.slice(first, last - first), pa.scalar(key)).fill_null(False)
    hit = pa.array(keyed.to_numpy(zero_copy_only=False) & present)
    values = pc.filter(maps.items.slice(first, last - first), hit)
    instances = data["client_instance_id"].combine_chunks().take(pc.filter(pa.array(owner), hit))
    pairs = pa.table({"i": instances, "v": values}).filter(pc.is_valid(values))
    firsts = pairs.group_by("i").aggregate([("v", "max")])  # one value per instance, deterministically
    return {
        i: v for i, v in zip(firsts["i"].to_pylist(), firsts["v_max"].to_pylist(), strict=True) if i and v
    }
