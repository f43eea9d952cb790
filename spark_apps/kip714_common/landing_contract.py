"""The landing zone's ``datapoints/`` columns: the one definition the provider and the Spark apps read.

The provider (``airflow_provider_kip714.contract.landing_schema``) builds its Arrow schema from this,
the apps (``kip714_common.schemas``) their Spark schema; neither keeps a copy. Pure Python on purpose:
it is imported on Airflow workers (pyarrow, no JVM) and inside ``spark-submit`` (pyspark, no provider).

Type names: ``string``, ``bool``, ``int32``, ``int64``, ``float64``, ``binary``, ``timestamp_ms`` and
``timestamp_ns`` (UTC), ``string_map`` (map<string, string>), ``list<T>`` and ``quantile`` (struct of
``quantile`` and ``value``, both float64).
"""

from __future__ import annotations

from typing import Final

DATAPOINT_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    # lineage
    ("topic", "string"),
    ("partition", "int32"),
    ("offset", "int64"),
    ("record_timestamp", "timestamp_ms"),
    ("record_type", "string"),  # client | broker
    # broker-added labels (kip714.* headers)
    ("client_instance_id", "string"),  # Kafka's base64 form
    ("client_instance_id_hex", "string"),
    ("client_id", "string"),
    ("client_software_name", "string"),
    ("client_software_version", "string"),
    ("client_source_address", "string"),
    ("client_source_port", "int32"),
    ("principal", "string"),
    ("listener", "string"),
    ("node_id", "int32"),
    ("cluster_id", "string"),
    ("subscription_id", "int64"),
    ("push_interval_ms", "int64"),
    ("terminating", "bool"),
    # OTLP structure; attribute values rendered as strings (arrays and kvlists as JSON)
    ("resource_attributes", "string_map"),
    ("scope_name", "string"),
    ("scope_version", "string"),
    ("scope_attributes", "string_map"),
    ("metric_name", "string"),
    ("metric_unit", "string"),
    ("metric_type", "string"),  # gauge | sum | histogram | exponential_histogram | summary
    ("temporality", "string"),  # delta | cumulative | null
    ("is_monotonic", "bool"),
    ("attributes", "string_map"),
    ("start_time", "timestamp_ns"),
    ("time", "timestamp_ns"),
    ("value", "float64"),
    ("value_int", "int64"),  # the exact value of int points
    # histogram / exponential histogram / summary
    ("count", "int64"),
    ("sum", "float64"),
    ("min", "float64"),
    ("max", "float64"),
    ("bucket_counts", "list<int64>"),
    ("explicit_bounds", "list<float64>"),
    ("exp_scale", "int32"),
    ("exp_zero_count", "int64"),
    ("exp_positive_offset", "int32"),
    ("exp_positive_bucket_counts", "list<int64>"),
    ("exp_negative_offset", "int32"),
    ("exp_negative_bucket_counts", "list<int64>"),
    ("quantiles", "list<quantile>"),
    ("flags", "int32"),
    # hive partition columns (also in the path: date=YYYY-MM-DD/hour=HH)
    ("date", "string"),
    ("hour", "int32"),
)

_NAMES: Final = tuple(name for name, _ in DATAPOINT_COLUMNS)

BROKER_LABEL_COLUMNS: Final = _NAMES[_NAMES.index("record_type") : _NAMES.index("terminating") + 1]
"""The columns filled from the broker's ``kip714.*`` headers, in landing order (``decoding.labels``)."""

CLIENT_IDENTITY_COLUMNS: Final = (
    "client_instance_id",
    "client_instance_id_hex",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "principal",
)
"""Who and where a client is: the broker-added labels every per-client output row keeps.

The instance key first; ``CLIENT_IDENTITY_COLUMNS[1:]`` is what describes an instance beside its key.
"""
