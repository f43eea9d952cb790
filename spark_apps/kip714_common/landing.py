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
    labels_column,
    labels_key_column,
    metric_name_column,
)
from kip714_common.schemas import DATAPOINT_SCHEMA
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

DATAPOINTS_DIR = "datapoints"


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
    """Add the computed columns to rows in ``DATAPOINT_SCHEMA`` form."""
    name = metric_name_column(F.col("metric_name"), {**METRIC_NAME_ALIASES, **(metric_aliases or {})})
    labels = labels_column(F.coalesce(F.col("attributes"), F.create_map().cast("map<string,string>")))
    kept = [F.col(c) for c in raw.columns if c not in ("metric_name", "attributes", "cluster_id")]
    return raw.select(
        *kept,
        F.col("metric_name").alias("source_metric_name"),
        F.col("attributes").alias("source_attributes"),
        name.alias("metric_name"),
        labels.alias("attributes"),
        labels_key_column(labels).alias("attributes_key"),
        F.col("time").alias("time_ns"),
        F.col("start_time").alias("start_ns"),
        F.timestamp_micros(F.floor(F.col("time") / 1000)).alias("ts"),
        F.timestamp_micros(F.floor(F.col("start_time") / 1000)).alias("start_ts"),
        F.coalesce(F.col("value"), F.col("value_int").cast("double")).alias("point_value"),
        F.coalesce(F.col("node_id"), F.col("resource_attributes")["node_id"].cast("int")).alias(
            "broker_node_id"
        ),
        F.coalesce(F.col("cluster_id"), F.col("resource_attributes")["cluster_id"]).alias("cluster_id"),
    )
