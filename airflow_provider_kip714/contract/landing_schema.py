"""Arrow schemas of the Parquet landing zone (``raw/``, ``datapoints/``, ``quarantine/``).

``datapoints/`` is the contract between landing and ``spark_apps/``: its columns are declared once, in
``spark_apps/kip714_common/landing_contract.py``, which both sides read.
"""

from __future__ import annotations

import pyarrow as pa

from spark_apps.kip714_common.landing_contract import DATAPOINT_COLUMNS

STRING_MAP = pa.map_(pa.string(), pa.string())
TS = pa.timestamp("ms", tz="UTC")
TS_NS = pa.timestamp("ns", tz="UTC")

RAW_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", TS),
        ("key", pa.binary()),
        ("headers", STRING_MAP),
        ("value", pa.binary()),
    ]
)

# A quarantined record keeps everything raw/ would have, plus why and when it was set aside.
QUARANTINE_SCHEMA = RAW_SCHEMA.append(pa.field("reason", pa.string())).append(pa.field("quarantined_at", TS))

QUANTILE = pa.struct([("quantile", pa.float64()), ("value", pa.float64())])


def _arrow_type(name: str) -> pa.DataType:
    if name.startswith("list<"):
        return pa.list_(_arrow_type(name[5:-1]))
    return _ARROW_TYPES[name]


_ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "bool": pa.bool_(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "binary": pa.binary(),
    "timestamp_ms": TS,
    "timestamp_ns": TS_NS,
    "string_map": STRING_MAP,
    "quantile": QUANTILE,
}

# One row per OTLP data point; the columns are declared once, for this and the Spark apps.
DATAPOINT_SCHEMA = pa.schema([(name, _arrow_type(kind)) for name, kind in DATAPOINT_COLUMNS])
