"""Arrow schemas of the Parquet landing zone (``raw/``, ``datapoints/``, ``quarantine/``).

These are the contract between ``TelemetryTopicHook.land`` and ``spark_apps/``; the Spark side keeps a
matching copy in ``spark_apps/kip714_common/schemas.py``. Change both together.
"""

from __future__ import annotations

import pyarrow as pa

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

# One row per OTLP data point. Attribute values are rendered as strings (arrays and kvlists as JSON)
# so one map type carries every attribute; the numeric value is kept exactly in value_int for ints.
DATAPOINT_SCHEMA = pa.schema(
    [
        # lineage
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("record_timestamp", TS),
        ("record_type", pa.string()),  # client | broker
        # broker-added labels (kip714.* headers)
        ("client_instance_id", pa.string()),  # Kafka's base64 form
        ("client_instance_id_hex", pa.string()),
        ("client_id", pa.string()),
        ("client_software_name", pa.string()),
        ("client_software_version", pa.string()),
        ("client_source_address", pa.string()),
        ("client_source_port", pa.int32()),
        ("principal", pa.string()),
        ("listener", pa.string()),
        ("node_id", pa.int32()),
        ("cluster_id", pa.string()),
        ("subscription_id", pa.int64()),
        ("push_interval_ms", pa.int64()),
        ("terminating", pa.bool_()),
        # OTLP structure
        ("resource_attributes", STRING_MAP),
        ("scope_name", pa.string()),
        ("scope_version", pa.string()),
        ("scope_attributes", STRING_MAP),  # added by the landing issue (additive)
        ("metric_name", pa.string()),
        ("metric_unit", pa.string()),
        ("metric_type", pa.string()),  # gauge | sum | histogram | exponential_histogram | summary
        ("temporality", pa.string()),  # delta | cumulative | null
        ("is_monotonic", pa.bool_()),
        ("attributes", STRING_MAP),
        ("start_time", TS_NS),
        ("time", TS_NS),
        ("value", pa.float64()),
        ("value_int", pa.int64()),
        # histogram / exponential histogram / summary
        ("count", pa.int64()),
        ("sum", pa.float64()),
        ("min", pa.float64()),
        ("max", pa.float64()),
        ("bucket_counts", pa.list_(pa.int64())),
        ("explicit_bounds", pa.list_(pa.float64())),
        ("exp_scale", pa.int32()),
        ("exp_zero_count", pa.int64()),
        ("exp_positive_offset", pa.int32()),
        ("exp_positive_bucket_counts", pa.list_(pa.int64())),
        ("exp_negative_offset", pa.int32()),
        ("exp_negative_bucket_counts", pa.list_(pa.int64())),
        ("quantiles", pa.list_(QUANTILE)),
        ("flags", pa.int32()),
        # hive partition columns (also in the path: date=YYYY-MM-DD/hour=HH)
        ("date", pa.string()),
        ("hour", pa.int32()),
    ]
)
