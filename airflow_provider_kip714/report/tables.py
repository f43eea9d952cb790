"""Read the analytics tables the Spark apps wrote (Parquet, ``date=/hour=`` folders) into pandas.

The report runs in the Airflow worker, without Spark: pyarrow reads the folders and the hidden files
Spark leaves (``_SUCCESS``, ``.crc``) are skipped by pyarrow's default ignore prefixes.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds

from airflow_provider_kip714.storage.data_root import RunArea

MAP_COLUMNS = ("attributes", "resource_attributes")


def _as_dict(value: object) -> dict[str, str]:
    """pyarrow gives MAP values as a list of (key, value) pairs; the report wants a dict."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    return {str(k): "" if v is None else str(v) for k, v in value}  # type: ignore[union-attr]


def read_table(folder: Path) -> pd.DataFrame:
    """Every row under ``folder`` (an empty frame when the app wrote nothing there)."""
    if not folder.is_dir() or not any(folder.rglob("*.parquet")):
        return pd.DataFrame()
    dataset = ds.dataset(folder, format="parquet", partitioning="hive")
    frame = dataset.to_table().to_pandas()
    for column in MAP_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].map(_as_dict)
    for column in frame.columns:
        if pd.api.types.is_datetime64_any_dtype(frame[column]):
            series = frame[column]
            frame[column] = (
                series.dt.tz_localize("UTC") if series.dt.tz is None else series.dt.tz_convert("UTC")
            )
    return frame


def read_zone_table(zone: RunArea, name: str) -> pd.DataFrame:
    """One analytics table of a zone (``rollups``, ``thresholds``, ``anomalies``, ``broker_metrics``, ...)."""
    return read_table(zone.table(name))
