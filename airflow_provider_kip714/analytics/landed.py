"""Read a landing zone's committed ``datapoints/`` with pyarrow, for views that cannot wait for Spark.

The UI's live convergence reads what ``land_window`` has landed so far, while the window is open. Only
committed chunks are read (``LandingZone.committed_files``: the markers decide, never a folder glob),
so a chunk being written is never half-read. Columns are pruned and hour folders before ``since``
skipped, so a view of the last minutes does not read a day of telemetry.
"""

from __future__ import annotations

from datetime import datetime

import pyarrow as pa
import pyarrow.dataset as ds

from airflow_provider_kip714.analytics.tables import HOUR_PARTITION
from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA
from airflow_provider_kip714.storage.data_root import StoragePath
from airflow_provider_kip714.telemetry.landing_zone import DATAPOINTS_DIR, LandingZone

_READ_ONLY_TOPIC = "(read only)"
"""``LandingZone`` pins a topic only when it writes (``prepare``); reading never checks it."""


def _hour_of(path: str) -> str | None:
    """``YYYY-MM-DDTHH`` of a file's hour folder, for comparing with ``since`` as text."""
    found = HOUR_PARTITION.search(path)
    return f"{found.group(1)}T{int(found.group(2)):02d}" if found else None


def read_landed_points(landing: StoragePath, columns: list[str], since: datetime | None = None) -> pa.Table:
    """Committed data points of the zone (``columns`` only) with ``record_timestamp >= since``.

    An empty table with those columns when nothing is landed yet (a window that just opened).
    """
    schema = pa.schema([DATAPOINT_SCHEMA.field(name) for name in columns])
    filesystem, files = LandingZone(landing, _READ_ONLY_TOPIC).arrow_files(DATAPOINTS_DIR)
    if since is not None:
        first_hour = f"{since:%Y-%m-%dT%H}"
        files = [path for path in files if (_hour_of(path) or first_hour) >= first_hour]
    if not files:
        return schema.empty_table()
    dataset = ds.dataset(files, filesystem=filesystem, format="parquet", schema=DATAPOINT_SCHEMA)
    condition = None
    if since is not None:
        moment = pa.scalar(since, DATAPOINT_SCHEMA.field("record_timestamp").type)
        condition = ds.field("record_timestamp") >= moment
    return dataset.to_table(columns=columns, filter=condition)
