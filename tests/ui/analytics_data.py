"""Small analytics tables for the page's tests, written the way the Spark apps write them.

Column names and types come from ``spark_apps/kip714_common/schemas.py`` (converted to Arrow), and
files go under ``date=/hour=`` folders, so a schema change in the apps breaks these tests too.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as T

# The apps import their library as the top-level ``kip714_common`` (as under spark-submit).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark_apps"))
from kip714_common.schemas import OUTPUT_PARTITION_COLUMNS, OUTPUT_SCHEMAS

_SIMPLE = {
    T.StringType: pa.string(),
    T.IntegerType: pa.int32(),
    T.LongType: pa.int64(),
    T.DoubleType: pa.float64(),
    T.BooleanType: pa.bool_(),
    T.TimestampType: pa.timestamp("us", tz="UTC"),
}


def arrow_type(kind: T.DataType) -> pa.DataType:
    if isinstance(kind, T.MapType):
        return pa.map_(arrow_type(kind.keyType), arrow_type(kind.valueType))
    if isinstance(kind, T.ArrayType):
        return pa.list_(arrow_type(kind.elementType))
    if isinstance(kind, T.StructType):
        return pa.struct([(f.name, arrow_type(f.dataType)) for f in kind.fields])
    return _SIMPLE[type(kind)]


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([(f.name, arrow_type(f.dataType)) for f in OUTPUT_SCHEMAS[table].fields])


def minute_bucket(start: datetime) -> dict[str, Any]:
    """The bucket columns of the one-minute bucket from ``start`` (the apps' default ``--bucket 1m``)."""
    return {"bucket_start": start, "bucket_end": start + timedelta(minutes=1), "bucket_seconds": 60}


def write_table(analytics: Path, table: str, rows: Iterable[dict[str, Any]]) -> None:
    """Write rows (missing columns null) as ``<analytics>/<table>/date=.../hour=.../part-*.parquet``."""
    schema = arrow_schema(table)
    rows = list(rows)
    for row in rows:
        moment: datetime = row.get("bucket_start") or row.get("breach_start") or row["interval_start"]
        row.setdefault("date", f"{moment:%Y-%m-%d}")
        row.setdefault("hour", moment.hour)
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    data = pa.table(columns, schema=schema)
    pq.write_to_dataset(data, analytics / table, partition_cols=list(OUTPUT_PARTITION_COLUMNS))


@dataclass(frozen=True)
class Landed:
    client_instance_id: str
    client_id: str
    metric_name: str
    first_bucket: datetime
    buckets: int


def land_analytics(
    analytics: Path,
    client_instance_id: str = "Ab3dEfGhIjKlMnOpQrStUw",
    client_id: str = "orders-consumer-7",
    end: datetime | None = None,
    buckets: int = 12,
    metric: str = "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
    attributes_key: str = "",
) -> Landed:
    """One client with a latency spike (and its anomaly), a quiet second client, one broker."""
    end = (end or datetime.now(UTC)).replace(second=0, microsecond=0)
    first = end - timedelta(minutes=buckets)
    identity = {
        "client_instance_id": client_instance_id,
        "client_id": client_id,
        "client_software_name": "confluent-kafka-python",
        "client_software_version": "2.16.0",
        "principal": "User:ANONYMOUS",
    }
    quiet = {**identity, "client_instance_id": "QuietQuietQuietQuiet01", "client_id": "billing-producer"}
    rollups, broker = [], []
    spike = range(buckets - 4, buckets - 1)
    for index in range(buckets):
        start = first + timedelta(minutes=index)
        common = {
            **minute_bucket(start),
            "record_type": "client",
            "listener": "PLAINTEXT",
            "broker_node_id": 1,
            "cluster_id": "kip714-test",
            "metric_type": "gauge",
            "count": 6,
        }
        value = 450.0 if index in spike else 20.0 + index
        rollups.append(
            {
                **common,
                **identity,
                "metric_name": metric,
                "attributes_key": attributes_key,
                "signal": value,
                "avg": value,
                "min": value,
                "max": value,
                "last": value,
            }
        )
        rollups.append(
            {
                **common,
                **quiet,
                "metric_name": "org.apache.kafka.producer.record.queue.time.avg",
                "attributes_key": "",
                "signal": 3.0,
                "avg": 3.0,
            }
        )
        broker.append(
            {
                **minute_bucket(start),
                "cluster_id": "kip714-test",
                "broker_node_id": 1,
                "instance_count": 2.0,
                "instance_count_max": 2.0,
                "pushes_exported": 12.0,
                "throttled_pushes": float(index % 3 == 0),
                "throttle_ratio": (index % 3 == 0) / 12,
                "unknown_subscription_requests": 0.0,
                "plugin_errors": 0.0,
                "plugin_error_ratio": 0.0,
                "export_time_avg_ms": 0.4,
                "export_time_max_ms": 1.5,
                "plugin_failing": False,
                "throttled_clients": int(index % 3 == 0),
            }
        )
    breach_start = first + timedelta(minutes=spike.start)
    anomaly = {
        **identity,
        "kind": "static",
        "rule_name": "fetch-latency-high",
        "severity": "critical",
        "metric_name": metric,
        "field": "avg",
        "attributes_key": "",
        "client_group": "orders",
        "comparison": ">",
        "threshold": 200.0,
        "critical_threshold": 400.0,
        "peak_value": 450.0,
        "mean_value": 450.0,
        "excess": 250.0,
        "excess_ratio": 1.25,
        "breach_start": breach_start,
        "breach_end": breach_start + timedelta(minutes=len(spike)),
        "duration_seconds": 60 * len(spike),
        "breached_buckets": len(spike),
        "min_duration_seconds": 120,
        "description": f"{metric} avg > 200 for {len(spike)} min",
    }
    threshold = {
        "kind": "static",
        "rule_name": "fetch-latency-high",
        "metric_name": metric,
        "field": "avg",
        "client_group": "orders",
        "comparison": ">",
        "threshold": 200.0,
        "critical_threshold": 400.0,
        "min_duration_seconds": 120,
        "interval_start": first,
        "interval_end": end,
    }
    write_table(analytics, "rollups", rollups)
    write_table(analytics, "broker_metrics", broker)
    write_table(analytics, "anomalies", [anomaly])
    write_table(analytics, "thresholds", [threshold])
    return Landed(client_instance_id, client_id, metric, first, buckets)
