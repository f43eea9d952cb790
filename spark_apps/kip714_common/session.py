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
    # standard Parquet timestamps for every reader (INT96 is deprecated) and ~1 s less per 1.67M rows
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # a run writes one or a few date/hour partitions: one open file per partition instead of sorting
    # every output row by partition first (beyond 8 partitions Spark sorts the rest, as before)
    "spark.sql.optimizer.plannedWrite.enabled": "false",
    "spark.sql.maxConcurrentOutputFileWriters": "8",
}


CONNECT_RETRIES = {"max_retries": 4, "max_backoff": 5_000}
"""A Spark Connect client's retries on an unreachable server: measured 138 s in all with 8 tries, 18 s with
these 4 (gRPC's own reconnect backoff grows with every try, on top of this policy's 50 ms x 4 per try),
so a dead server fails the app within half a minute; the task's retries (``kip714_live``: two, 10 s
apart) cover a server that restarts. pyspark's default keeps retrying for at least 10 minutes (15 tries,
backoff up to 60 s): a live cycle whose server died stalled that long before it failed
(tests/integration/test_live_failures.py)."""


def get_session(app_name: str) -> SparkSession:
    """The active session (spark-submit made it) or a new one, with ``REQUIRED_CONF`` applied."""
    spark = SparkSession.builder.appName(app_name).getOrCreate()
    bound_connect_retries(spark)
    configure(spark)
    return spark


def remote_session(url: str) -> SparkSession:
    """A Spark Connect session at ``url`` (``sc://...``) with ``CONNECT_RETRIES``, bounded before any round
    trip."""
    spark = SparkSession.builder.remote(url).getOrCreate()
    bound_connect_retries(spark)
    return spark


def bound_connect_retries(spark: SparkSession) -> None:
    """``CONNECT_RETRIES`` on a Spark Connect session's client; a classic session has none (its
    ``client`` property raises)."""
    if not is_connect(spark):
        return
    from pyspark.sql.connect.client.retries import DefaultPolicy

    spark.client.set_retry_policies([DefaultPolicy(**CONNECT_RETRIES)])


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (``pyspark.sql.connect``), which has no local JVM."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def configure(spark: SparkSession) -> SparkSession:
    for key, value in REQUIRED_CONF.items():
        spark.conf.set(key, value)
    return spark


def app_session(spark: SparkSession | None, app_name: str) -> SparkSession:
    """An app's session: the one it was given (the pipeline, tests) configured, else ``get_session``'s."""
    return configure(spark) if spark is not None else get_session(app_name)


SMALL_INPUT_BYTES = 16 * 1024 * 1024
"""Landed Parquet a run reads (``landing.landed_bytes``) up to which ``SMALL_INPUT_CONF`` applies.

Interpreted, each point costs about 28 us of CPU more than with generated code (the rollups step on a
warm JVM: 4.8M fleet points 200 s against 67 s, 10M synthetic points 310 s against 33 s); generated code
costs its compiles once per run. The whole pipeline in a fresh ``PERFORMANCE_CONF`` JVM breaks even near
1M points: on fleet-shaped zones 154 s against 189 s of CPU at 0.48M points (11 MB), 259 s against 241 s
at 1.44M points (19 MB) (``docs/spark-apps.md``). Landed points take 9-34 bytes each (a fleet's
repeated values 9-24, denser as it grows; the demo's real clients 17; random synthetic values 34), so
16 MB is 0.5-1.8M points. A live cycle reads only its recent chunks: 0.2-3.7 MB at 1,000 instances,
so interpreted (a 2.6 MB cycle: 29-32 s of CPU against 44-47 s with generated code, 2 shuffle
partitions and adaptive execution off); at 10,000 instances cycles read 5-31 MB, and generated code
wins from about 6-8 MB on a warm server (``WARM_SERVER_SMALL_INPUT_BYTES``; 3 minutes of a 10,000-instance
fleet in one JVM: 260 s against 505 s with these settings, whose persisted read did not fit a 2 GB
driver). The 5-minute zone of a 10,000-instance fleet (45 MB)
runs with generated code at a third of the CPU (``docs/benchmarks.md``)."""
WARM_SERVER_SMALL_INPUT_BYTES = 8 * 1024 * 1024
"""``SMALL_INPUT_BYTES`` for a run on a Spark Connect server: a long-lived JVM, warm from run to run.

There generated code pays no JVM start and its JIT is warm, so it wins at smaller inputs than in a fresh
JVM. Measured on the live cycles of a 10,000-instance fleet (``docs/benchmarks.md``, session 25), the
server's CPU per cycle: interpreted, about 23 s + 12.9 s per MB (cycles of 5.5 and 13.3 MB); generated
code, about 71 s + 5.5 s per MB (cycles of 6.1-26.1 MB), or 92-97 s + 3.4-3.7 s per MB counting the
larger cycles of 27-31 MB. The lines cross at 6.5-7.8 MB (10^6 bytes), and at 8.4 MB through every
generated cycle of 25-31 MB of the three runs; 8 MiB (8.39 MB) is above the first two, level with the
third. Live cycles at 1,000 instances read 0.2-3.7 MB and stay interpreted,
where they cost less (session 20: 1.5x less at 2.6 MB). Runs of the hourly and troubleshooting DAGs
on a server between 8 MiB and 16 MB were not measured."""
SMALL_INPUT_CONF = {
    # interpreted expressions and operators: Janino compiled ~280 classes (12-50 s of CPU on a loaded
    # 2-core machine) to process 11k points; interpreted, the same queries need ~20 compiles
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.shuffle.partitions": "2",
    # adaptive execution re-plans after every shuffle stage: for a few thousand rows that planning is the
    # work (the demo's window: 34 s of CPU instead of 39-45 s per pipeline run, 2 x 2 interleaved runs)
    "spark.sql.adaptive.enabled": "false",
}
"""Session settings for small inputs (a troubleshooting window, a quiet hour), set at run time."""


def tune_for_input(spark: SparkSession, input_bytes: int | None) -> bool:
    """Apply ``SMALL_INPUT_CONF`` when the input is known to be small (``SMALL_INPUT_BYTES``, or
    ``WARM_SERVER_SMALL_INPUT_BYTES`` on a Spark Connect server); returns whether it did."""
    limit = WARM_SERVER_SMALL_INPUT_BYTES if is_connect(spark) else SMALL_INPUT_BYTES
    if input_bytes is None or input_bytes > limit:
        return False
    for key, value in SMALL_INPUT_CONF.items():
        spark.conf.set(key, value)
    return True
