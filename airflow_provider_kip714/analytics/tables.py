"""Read the Spark apps' Parquet outputs with pyarrow: the API server must not start a JVM.

Tables are folders of ``date=/hour=`` partitions written by ``spark_apps`` (schemas in
``spark_apps/kip714_common/schemas.py``). A missing or empty table is a normal state (nothing ran
yet), so it reads as an empty frame and the page says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from airflow_provider_kip714.storage.data_root import (
    ANALYTICS_TABLES,
    RunArea,
    safe_run_name,
    scheduled_area,
    troubleshoot_areas,
)

SCHEDULED_ZONE_KEY = "scheduled"
_PARTITIONING = ds.partitioning(pa.schema([("date", pa.string()), ("hour", pa.int32())]), flavor="hive")


@dataclass(frozen=True)
class ZoneChoice:
    """A zone the page can show: the scheduled analytics or one troubleshooting run."""

    key: str
    title: str
    zone: RunArea

    @property
    def report_file(self) -> Path:
        return self.zone.report / "report.html"


def zone_choices() -> list[ZoneChoice]:
    """The scheduled zone first, then troubleshooting runs, newest first."""
    choices = [ZoneChoice(SCHEDULED_ZONE_KEY, "Scheduled analytics (kip714_rollups)", scheduled_area())]
    for zone in troubleshoot_areas():
        choices.append(ZoneChoice(zone.root.name, f"Troubleshooting run {zone.root.name}", zone))
    return choices


def find_zone(key: str) -> ZoneChoice | None:
    """The zone named by a query parameter; None for anything not listed (no path tricks)."""
    if key != safe_run_name(key):
        return None
    return next((choice for choice in zone_choices() if choice.key == key), None)


def table_path(zone: RunArea, table: str) -> Path:
    if table not in (*ANALYTICS_TABLES, "broker_client_metrics"):
        raise ValueError(f"table: must be one of {ANALYTICS_TABLES}, got {table!r}")
    return zone.table(table)


def read_table(
    zone: RunArea, table: str, columns: list[str] | None = None, equal: dict[str, str] | None = None
) -> pd.DataFrame:
    """A table as a DataFrame (empty when the folder is missing or holds no rows).

    ``columns`` and ``equal`` (column -> value) are pushed down to the Parquet scan, so a chart for one
    client reads only its row groups and columns, not the whole rollups table.
    """
    path = table_path(zone, table)
    if not path.is_dir():
        return pd.DataFrame(columns=columns or [])
    dataset = ds.dataset(path, format="parquet", partitioning=_PARTITIONING, ignore_prefixes=[".", "_"])
    names = dataset.schema.names
    wanted = None if columns is None else [name for name in columns if name in names]
    condition = None
    for column, value in (equal or {}).items():
        if column not in names:
            return pd.DataFrame(columns=wanted or names)
        term = ds.field(column) == value
        condition = term if condition is None else condition & term
    frame = dataset.to_table(columns=wanted, filter=condition).to_pandas()
    for name in frame.columns:
        if pd.api.types.is_datetime64_any_dtype(frame[name]) and frame[name].dt.tz is None:
            frame[name] = frame[name].dt.tz_localize("UTC")
    return frame
