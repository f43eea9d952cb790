"""Read the Spark apps' Parquet outputs with pyarrow: the one reader of the UI, report, troubleshooting, demo.

Workers and the API server must not start a JVM, so pyarrow reads the ``date=/hour=`` folders the
apps write (schemas in ``spark_apps/kip714_common/schemas.py``); the hidden files Spark leaves
(``_SUCCESS``, ``.crc``) are skipped. A missing or empty table is a normal state (nothing ran yet):
it reads as an empty frame and the caller says so.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from airflow_provider_kip714.storage.data_root import ANALYTICS_TABLES, RunArea, StoragePath, arrow_location

TABLES = (*ANALYTICS_TABLES, "broker_client_metrics", "delivery", "convergence", "capabilities")
MAP_COLUMNS = ("attributes", "resource_attributes")
_PARTITIONING = ds.partitioning(pa.schema([("date", pa.string()), ("hour", pa.int32())]), flavor="hive")


def table_path(zone: RunArea, table: str) -> StoragePath:
    """The folder of one of the apps' tables; any other name is refused (no path from a request)."""
    if table not in TABLES:
        raise ValueError(f"table: must be one of {TABLES}, got {table!r}")
    return zone.table(table)


def _dataset(zone: RunArea, table: str) -> ds.Dataset | None:
    """The table's Parquet files on the data root's filesystem (local or object store); None if none."""
    filesystem, where = arrow_location(table_path(zone, table))
    if filesystem.get_file_info(where).type != pafs.FileType.Directory:
        return None
    dataset = ds.dataset(
        where, filesystem=filesystem, format="parquet", partitioning=_PARTITIONING, ignore_prefixes=[".", "_"]
    )
    return dataset if dataset.files else None


def _as_dict(value: object) -> dict[str, str]:
    """pyarrow gives MAP values as (key, value) pairs; callers want a dict."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    return {str(k): "" if v is None else str(v) for k, v in value}  # type: ignore[union-attr]


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
    zone: RunArea, table: str, columns: list[str] | None = None, equal: dict[str, str] | None = None
) -> pd.DataFrame:
    """A table as a DataFrame: timestamps in UTC, MAP columns as dicts; empty when nothing was written.

    ``columns`` and ``equal`` (column -> value) are pushed down to the Parquet scan, so a chart for one
    client reads only its row groups and columns, not the whole rollups table.
    """
    dataset = _dataset(zone, table)
    if dataset is None:
        return pd.DataFrame(columns=columns or [])
    names = dataset.schema.names
    wanted = None if columns is None else [name for name in columns if name in names]
    condition = _filter(names, equal or {})
    if condition is False:
        return pd.DataFrame(columns=wanted if wanted is not None else names)
    frame = dataset.to_table(columns=wanted, filter=condition).to_pandas()
    for name in frame.columns:
        if name in MAP_COLUMNS:
            frame[name] = frame[name].map(_as_dict)
        elif pd.api.types.is_datetime64_any_dtype(frame[name]):
            series = frame[name]
            frame[name] = (
                series.dt.tz_localize("UTC") if series.dt.tz is None else series.dt.tz_convert("UTC")
            )
    return frame


def distinct_values(zone: RunArea, table: str, column: str, equal: dict[str, str] | None = None) -> list[str]:
    """Sorted distinct non-empty values of one column (only that column is read)."""
    dataset = _dataset(zone, table)
    if dataset is None or column not in dataset.schema.names:
        return []
    condition = _filter(dataset.schema.names, equal or {})
    if condition is False:
        return []
    values = dataset.to_table(columns=[column], filter=condition)[column]
    return sorted(str(v) for v in pc.unique(values).to_pylist() if v)


def client_metric_names(zone: RunArea) -> list[str]:
    """Distinct client metric names in the zone's rollups (empty when none were written)."""
    return distinct_values(zone, "rollups", "metric_name", equal={"record_type": "client"})
