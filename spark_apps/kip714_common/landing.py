"""Reading the landing zone's ``datapoints/`` for one interval, with partition pruning.

Adds the columns the apps compute on: ``ts``/``start_ts`` (Spark timestamps), ``time_ns``/``start_ns``
(exact epoch nanoseconds), ``point_value`` (double of value or value_int), normalised ``metric_name``
(the original kept in ``source_metric_name``), normalised ``attributes`` and ``attributes_key``, and
``broker_node_id``/``cluster_id`` filled from resource attributes for broker records.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from kip714_common.errors import SparkAppInputError
from kip714_common.names import (
    METRIC_NAME_ALIASES,
    labels_from_entries_column,
    labels_key_column,
    metric_name_column,
)
from kip714_common.schemas import DATAPOINT_SCHEMA, STRING_MAP
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType, StructField, StructType

DATAPOINTS_DIR = "datapoints"
STRING_MAP_ENTRIES = ArrayType(
    StructType([StructField("key", StringType(), False), StructField("value", StringType())])
)
"""``map_entries`` of a ``STRING_MAP`` (labels, resource attributes)."""


def path_exists(spark: SparkSession, path: str) -> bool:
    """Existence check through Hadoop's FileSystem, so s3a://, hdfs:// and file paths all work."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    filesystem = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
    return bool(filesystem.exists(hadoop_path))


def hour_partition_filter(start: datetime, end: datetime) -> Column:
    """``date``/``hour`` predicate covering ``[start, end)`` so Spark lists and reads only those folders."""
    first = start.replace(minute=0, second=0, microsecond=0)
    by_date: dict[str, list[int]] = {}
    hour = first
    while hour < end:
        by_date.setdefault(hour.strftime("%Y-%m-%d"), []).append(hour.hour)
        hour += timedelta(hours=1)
    condition: Column | None = None
    for date, hours in by_date.items():
        clause = (F.col("date") == date) & F.col("hour").between(min(hours), max(hours))
        condition = clause if condition is None else condition | clause
    return condition if condition is not None else F.lit(False)


def epoch_nanos(dt: datetime) -> int:
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def read_datapoints(
    spark: SparkSession,
    input_root: str,
    start: datetime,
    end: datetime,
    metric_aliases: Mapping[str, str] | None = None,
) -> DataFrame:
    """Data points with ``start <= time < end``, normalised (see module docstring)."""
    root = f"{input_root}/{DATAPOINTS_DIR}"
    if not path_exists(spark, root):
        raise SparkAppInputError("--input", f"must be a landing zone root holding {DATAPOINTS_DIR}/", root)
    raw = (
        spark.read.schema(DATAPOINT_SCHEMA)
        .option("basePath", root)
        .parquet(root)
        .where(hour_partition_filter(start, end))
        .where((F.col("time") >= epoch_nanos(start)) & (F.col("time") < epoch_nanos(end)))
    )
    return normalise(raw, metric_aliases)


def normalise(raw: DataFrame, metric_aliases: Mapping[str, str] | None = None) -> DataFrame:
    """Add the computed columns to rows in ``DATAPOINT_SCHEMA`` form.

    Names and labels are normalised once per distinct (metric name, label set) of ``raw``, a small table
    broadcast back onto the points: per point, the string functions and label lambdas cost several times
    more than the rest of the rollup.
    """
    aliases = {**METRIC_NAME_ALIASES, **(metric_aliases or {})}
    entries = F.when(F.size("attributes") > 0, F.map_entries("attributes"))  # null: no labels (most points)
    series = raw.select(F.col("metric_name").alias("_source_name"), entries.alias("_entries")).distinct()
    labels = F.when(F.col("_entries").isNull(), F.create_map().cast(STRING_MAP)).otherwise(
        labels_from_entries_column(F.col("_entries"))
    )
    names = series.select(
        "_source_name",
        "_entries",
        metric_name_column(F.col("_source_name"), aliases).alias("_metric_name"),
        labels.alias("_labels"),
        labels_key_column(labels).alias("_attributes_key"),
    )
    keyed = raw.withColumn("_point_entries", entries)
    joined = keyed.join(
        F.broadcast(names),
        keyed["metric_name"].eqNullSafe(names["_source_name"])
        & keyed["_point_entries"].eqNullSafe(names["_entries"]),
        "left",
    )
    kept = [keyed[c] for c in raw.columns if c not in ("metric_name", "attributes", "cluster_id")]
    return joined.select(
        *kept,
        keyed["metric_name"].alias("source_metric_name"),
        keyed["attributes"].alias("source_attributes"),
        names["_metric_name"].alias("metric_name"),
        names["_labels"].alias("attributes"),
        names["_attributes_key"].alias("attributes_key"),
        keyed["time"].alias("time_ns"),
        keyed["start_time"].alias("start_ns"),
        F.timestamp_micros(F.floor(keyed["time"] / 1000)).alias("ts"),
        F.timestamp_micros(F.floor(keyed["start_time"] / 1000)).alias("start_ts"),
        F.coalesce(keyed["value"], keyed["value_int"].cast("double")).alias("point_value"),
        F.coalesce(keyed["node_id"], keyed["resource_attributes"]["node_id"].cast("int")).alias(
            "broker_node_id"
        ),
        F.coalesce(keyed["cluster_id"], keyed["resource_attributes"]["cluster_id"]).alias("cluster_id"),
    )
