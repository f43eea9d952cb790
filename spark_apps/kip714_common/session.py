"""The SparkSession settings every app relies on (set on an existing session too, for tests and notebooks)."""

from __future__ import annotations

from pyspark.sql import SparkSession

REQUIRED_CONF = {
    # rerunning an interval replaces exactly the date/hour partitions it writes
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # landing zone timestamps are TIMESTAMP(NANOS); Spark reads them only as epoch-nanosecond longs
    "spark.sql.legacy.parquet.nanosAsLong": "true",
    "spark.sql.session.timeZone": "UTC",
    # label normalisation can fold node.id and node_id into one key
    "spark.sql.mapKeyDedupPolicy": "LAST_WIN",
}


def get_session(app_name: str) -> SparkSession:
    """The active session (spark-submit made it) or a new one, with ``REQUIRED_CONF`` applied."""
    spark = SparkSession.builder.appName(app_name).getOrCreate()
    configure(spark)
    return spark


def configure(spark: SparkSession) -> SparkSession:
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)
    return spark
