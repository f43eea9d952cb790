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


# Launch-time settings (spark-submit --conf; the DAGs and bench_rollups both use them), measured on
# local[2] at 10M points: small splits and shuffle partitions keep both cores busy to the end of each
# stage, and the throughput collector suits these batch jobs (15 % less JVM CPU than G1).
PERFORMANCE_CONF = {
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": "16m",
    "spark.sql.files.maxPartitionBytes": "16m",
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    "spark.executor.extraJavaOptions": "-XX:+UseParallelGC",
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
