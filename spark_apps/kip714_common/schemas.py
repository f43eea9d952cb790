"""Spark schemas: the landing zone's ``datapoints/`` (input) and every table the apps write.

``DATAPOINT_SCHEMA`` is built from ``landing_contract.DATAPOINT_COLUMNS``, the declaration the provider's
Arrow schema is built from too. One deliberate difference: Spark cannot read Parquet ``TIMESTAMP(NANOS)``, so
``start_time`` and ``time`` are read as ``long`` nanoseconds since the epoch
(``spark.sql.legacy.parquet.nanosAsLong``) and converted by ``landing.read_datapoints``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kip714_common.landing_contract import CLIENT_IDENTITY_COLUMNS, DATAPOINT_COLUMNS
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

STRING_MAP = MapType(StringType(), StringType(), valueContainsNull=True)
QUANTILE = StructType([StructField("quantile", DoubleType()), StructField("value", DoubleType())])

NANOS_AS_LONG_COLUMNS = tuple(name for name, kind in DATAPOINT_COLUMNS if kind == "timestamp_ns")
"""Landing columns stored as TIMESTAMP(NANOS) that Spark reads as epoch nanoseconds."""


def _struct(columns: list[tuple[str, DataType]]) -> StructType:
    return StructType([StructField(name, kind, nullable=True) for name, kind in columns])


def _spark_type(name: str) -> DataType:
    """A landing column's Spark type; nanosecond timestamps arrive as epoch-nanosecond longs."""
    if name.startswith("list<"):
        return ArrayType(_spark_type(name[5:-1]))
    return _SPARK_TYPES[name]


_SPARK_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "bool": BooleanType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "float64": DoubleType(),
    "timestamp_ms": TimestampType(),
    "timestamp_ns": LongType(),
    "string_map": STRING_MAP,
    "quantile": QUANTILE,
}

DATAPOINT_SCHEMA = _struct([(name, _spark_type(kind)) for name, kind in DATAPOINT_COLUMNS])

_IDENTITY = [(name, StringType()) for name in CLIENT_IDENTITY_COLUMNS]
_PARTITION = [("date", StringType()), ("hour", IntegerType())]
OUTPUT_PARTITION_COLUMNS = ("date", "hour")

ROLLUP_SCHEMA = _struct(
    [
        ("bucket_start", TimestampType()),
        ("bucket_end", TimestampType()),
        ("bucket_seconds", IntegerType()),
        ("record_type", StringType()),
        *_IDENTITY,
        ("listener", StringType()),
        ("broker_node_id", IntegerType()),
        ("cluster_id", StringType()),
        ("resource_attributes", STRING_MAP),
        ("metric_name", StringType()),
        ("source_metric_name", StringType()),
        ("metric_type", StringType()),
        ("temporality", StringType()),
        ("metric_unit", StringType()),
        ("attributes", STRING_MAP),
        ("attributes_key", StringType()),
        ("count", LongType()),
        ("min", DoubleType()),
        ("max", DoubleType()),
        ("avg", DoubleType()),
        ("sum", DoubleType()),
        ("last", DoubleType()),
        ("first_time", TimestampType()),
        ("last_time", TimestampType()),
        ("increase", DoubleType()),
        ("rate_per_second", DoubleType()),
        ("counter_resets", IntegerType()),
        ("histogram_count", LongType()),
        ("histogram_sum", DoubleType()),
        ("p50", DoubleType()),
        ("p95", DoubleType()),
        ("p99", DoubleType()),
        ("signal", DoubleType()),
        *_PARTITION,
    ]
)

THRESHOLD_SCHEMA = _struct(
    [
        ("kind", StringType()),  # baseline | static
        ("rule_name", StringType()),
        ("metric_name", StringType()),
        ("field", StringType()),
        ("client_group", StringType()),
        ("comparison", StringType()),
        ("threshold", DoubleType()),
        ("critical_threshold", DoubleType()),
        ("min_duration_seconds", IntegerType()),
        ("median", DoubleType()),
        ("mad", DoubleType()),
        ("scale", DoubleType()),
        ("k", DoubleType()),
        ("history_buckets", LongType()),
        ("history_start", TimestampType()),
        ("interval_start", TimestampType()),
        ("interval_end", TimestampType()),
        ("attributes_key", StringType()),  # the baseline's series labels; null for a static rule
        *_PARTITION,
    ]
)

ANOMALY_SCHEMA = _struct(
    [
        ("kind", StringType()),  # baseline | static
        ("rule_name", StringType()),
        ("severity", StringType()),  # warning | critical
        ("metric_name", StringType()),
        ("field", StringType()),
        ("attributes", STRING_MAP),
        ("attributes_key", StringType()),
        ("client_group", StringType()),
        *_IDENTITY,
        ("comparison", StringType()),
        ("threshold", DoubleType()),
        ("critical_threshold", DoubleType()),
        ("peak_value", DoubleType()),
        ("mean_value", DoubleType()),
        ("excess", DoubleType()),
        ("excess_ratio", DoubleType()),
        ("breach_start", TimestampType()),
        ("breach_end", TimestampType()),
        ("duration_seconds", LongType()),
        ("breached_buckets", LongType()),
        ("min_duration_seconds", IntegerType()),
        ("description", StringType()),
        ("baseline_kind", StringType()),  # own | peers; null for a static rule
        ("peer_group", StringType()),  # peers only: group_id=..., client_id~..., software=..., principal=...
        *_PARTITION,
    ]
)

BROKER_METRICS_SCHEMA = _struct(
    [
        ("bucket_start", TimestampType()),
        ("bucket_end", TimestampType()),
        ("bucket_seconds", IntegerType()),
        ("cluster_id", StringType()),
        ("broker_node_id", IntegerType()),
        ("instance_count", DoubleType()),
        ("instance_count_max", DoubleType()),
        ("pushes_exported", DoubleType()),
        ("throttled_pushes", DoubleType()),
        ("throttle_ratio", DoubleType()),
        ("unknown_subscription_requests", DoubleType()),
        ("plugin_errors", DoubleType()),
        ("plugin_error_ratio", DoubleType()),
        ("plugin_dropped", DoubleType()),
        ("export_time_avg_ms", DoubleType()),
        ("export_time_max_ms", DoubleType()),
        ("export_time_p99_ms", DoubleType()),
        ("counter_resets", IntegerType()),
        ("plugin_failing", BooleanType()),
        ("throttled_clients", IntegerType()),
        *_PARTITION,
    ]
)

BROKER_CLIENT_SCHEMA = _struct(
    [
        ("bucket_start", TimestampType()),
        ("bucket_end", TimestampType()),
        ("bucket_seconds", IntegerType()),
        ("cluster_id", StringType()),
        ("broker_node_id", IntegerType()),
        *_IDENTITY,
        ("pushes_exported", DoubleType()),
        ("throttled_pushes", DoubleType()),
        ("throttle_ratio", DoubleType()),
        ("plugin_errors", DoubleType()),
        ("export_time_avg_ms", DoubleType()),
        ("export_time_max_ms", DoubleType()),
        ("high_throttle_ratio", BooleanType()),
        *_PARTITION,
    ]
)

DELIVERY_SCHEMA = _struct(
    [
        ("hour_start", TimestampType()),
        *_IDENTITY,
        ("cluster_id", StringType()),
        ("broker_node_id", IntegerType()),
        ("push_interval_seconds", DoubleType()),
        ("expected_pushes", LongType()),
        ("landed_pushes", LongType()),
        ("first_push_time", TimestampType()),
        ("last_push_time", TimestampType()),
        ("terminated", BooleanType()),
        ("status", StringType()),  # ok | silent | gaps | throttled
        ("silent_since", TimestampType()),
        ("max_gap_seconds", DoubleType()),
        ("throttled_pushes", DoubleType()),
        ("plugin_errors", DoubleType()),
        ("unseen_instances", IntegerType()),  # broker rows only: instances known to the broker, not pushing
        ("reason", StringType()),
        *_PARTITION,
    ]
)

CONVERGENCE_SCHEMA = _struct(
    [
        ("subscription_name", StringType()),
        *_IDENTITY,
        ("subscribed_at", TimestampType()),
        ("first_push_time", TimestampType()),
        ("delay_seconds", DoubleType()),
        ("matched_clients", IntegerType()),
        ("converged_clients", IntegerType()),
        ("p50_seconds", DoubleType()),
        ("p90_seconds", DoubleType()),
        ("p100_seconds", DoubleType()),
        *_PARTITION,
    ]
)

CAPABILITIES_SCHEMA = _struct(
    [
        ("client_software_name", StringType()),
        ("client_software_version", StringType()),
        ("metric_name", StringType()),
        ("metric_type", StringType()),
        ("instances", LongType()),
        ("points_per_push", DoubleType()),
        ("first_seen", TimestampType()),
        ("last_seen", TimestampType()),
        *_PARTITION,
    ]
)

OUTPUT_SCHEMAS: dict[str, StructType] = {
    "rollups": ROLLUP_SCHEMA,
    "thresholds": THRESHOLD_SCHEMA,
    "anomalies": ANOMALY_SCHEMA,
    "broker_metrics": BROKER_METRICS_SCHEMA,
    "broker_client_metrics": BROKER_CLIENT_SCHEMA,
    "delivery": DELIVERY_SCHEMA,
    "convergence": CONVERGENCE_SCHEMA,
    "capabilities": CAPABILITIES_SCHEMA,
}
"""Output table name (folder under ``--output``) -> schema."""


def conform(frame: DataFrame, schema: StructType, columns: Mapping[str, Column]) -> DataFrame:
    """``schema``'s columns, in order and cast: each from ``columns``, else the frame's own of that name."""
    return frame.select(
        *[
            (columns[f.name] if f.name in columns else F.col(f.name)).cast(f.dataType).alias(f.name)
            for f in schema.fields
        ]
    )
