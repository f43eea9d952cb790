"""Writing output tables: Parquet partitioned by ``date``/``hour``, rerun-safe, with a printed summary.

A run owns the date/hour partitions of its interval: it first removes them, then writes them (one hour:
its folder directly; several: with dynamic partition overwrite). A rerun of the same interval (a retry,
a backfill) therefore leaves exactly one copy, and an hour where the rerun finds nothing (say, no anomaly
any more) is emptied too. Intervals that do not start and end on whole hours still own the whole hours
they touch: give troubleshooting windows their own ``--output``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from kip714_common.cli import Interval
from kip714_common.files import session_files
from kip714_common.schemas import OUTPUT_PARTITION_COLUMNS, OUTPUT_SCHEMAS
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StructType, TimestampType

REPEATED_TIMESTAMPS = frozenset(
    {"bucket_start", "bucket_end", "history_start", "interval_start", "interval_end"}
)
"""Timestamp columns with one value per bucket or run: their dictionaries pay off."""


@dataclass
class RunSummary:
    """What one app run wrote; printed as one JSON line (``KIP714_SUMMARY {...}``) for logs and DAGs."""

    app: str
    interval: Interval
    tables: dict[str, dict[str, object]] = field(default_factory=dict)
    notes: dict[str, object] = field(default_factory=dict)

    def as_json(self) -> str:
        return json.dumps(
            {
                "app": self.app,
                "start": self.interval.start.isoformat(),
                "end": self.interval.end.isoformat(),
                "bucket_seconds": self.interval.bucket_seconds,
                "tables": self.tables,
                **self.notes,
            },
            sort_keys=True,
            default=str,
        )

    def print(self) -> None:
        print(f"KIP714_SUMMARY {self.as_json()}", flush=True)


def is_remote(frame: DataFrame) -> bool:
    """Whether ``frame`` belongs to a Spark Connect session (its plan lives on the server)."""
    return type(frame).__module__.startswith("pyspark.sql.connect")


def printable(value: object) -> str:
    """Client-controlled text in a printed line (``KIP714_ANOMALY``, ``KIP714_SILENT``: the task log, a
    terminal): non-printable characters shown as escapes, so ``\x1b[2J`` or a newline stays data. The
    provider's ``contract.client_text.printable`` does the same; the Spark apps ship without the provider."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value))


def table_path(output_root: str, table: str) -> str:
    return f"{output_root}/{table}"


def partition_folder(path: str, hour: datetime) -> str:
    """The ``date=/hour=`` folder of one hour, spelt as Spark's partitioned writer spells it."""
    return f"{path}/date={hour:%Y-%m-%d}/hour={hour.hour}"


def clear_partitions(spark: SparkSession, path: str, interval: Interval, schema: StructType) -> None:
    """Empty the interval's ``date=/hour=`` folders of one table (``files.py``: deleted, or no rows)."""
    files = session_files(spark)
    data_schema = StructType([f for f in schema.fields if f.name not in OUTPUT_PARTITION_COLUMNS])
    for hour in interval.hours:
        files.clear(partition_folder(path, hour), data_schema)


def write_table(frame: DataFrame, output_root: str, table: str, interval: Interval) -> str:
    """Replace the interval's partitions of ``<output>/<table>`` with ``frame``; checks the schema first
    in a classic session (where it is free; the tests run every step there). On Spark Connect reading
    a frame's schema is a server-side analysis of its whole plan, 0.1-0.2 s per table of a window."""
    expected = OUTPUT_SCHEMAS[table]
    if not is_remote(frame):
        actual = [(f.name, f.dataType) for f in frame.schema.fields]
        wanted = [(f.name, f.dataType) for f in expected.fields]
        if actual != wanted:
            raise AssertionError(f"{table}: frame schema {actual} differs from the table schema {wanted}")
    path = table_path(output_root, table)
    options = plain_encoding_options(expected)
    hours = interval.hours
    if len(hours) == 1:
        # Buckets divide the hour and intervals are widened to bucket bounds, so every row of a run lies
        # in its interval's hours. One hour (every scheduled run, most live cycles): write its folder
        # directly, without the partitioned writer's per-row partition lookups (1.67M rollup rows: 2.7 s
        # instead of 3.5 s). Overwriting the folder replaces it whole, rows or none, so it is not cleared
        # first: on Spark Connect clearing is a write job of its own, one per table and run.
        data = frame.drop(*OUTPUT_PARTITION_COLUMNS)
        data.write.mode("overwrite").options(**options).parquet(partition_folder(path, hours[0]))
    else:
        # the partitioned writer replaces only the partitions it writes rows to: clear the others first
        clear_partitions(frame.sparkSession, path, interval, expected)
        writer = frame.write.mode("overwrite").partitionBy(*OUTPUT_PARTITION_COLUMNS)
        writer.options(**options).parquet(path)
    return path


def plain_encoding_options(schema: StructType) -> dict[str, str]:
    """Parquet writer options turning dictionaries off for measured values and per-row times.

    Those rarely repeat, so parquet-mr fills a dictionary page, gives up and rewrites the page plainly:
    the same file, written with less CPU (3.5 s instead of 4.0 s for 1.67M rollup rows).
    """
    return {
        f"parquet.enable.dictionary#{field.name}": "false"
        for field in schema.fields
        if isinstance(field.dataType, DoubleType | TimestampType) and field.name not in REPEATED_TIMESTAMPS
    }


_READ_BACK = True
"""Module state, as ``run_shares``: the pipeline's steps run in worker threads, which a
context variable would not reach."""


@contextmanager
def without_read_back() -> Iterator[None]:
    """Within the block, ``summarise_written`` names the path only and reads nothing back, and the
    rollups step leaves out its summary's landing counts (``landing.landing_counts``).

    A live cycle (``pipeline.py --no-read-back``) reads its tables itself right after the pipeline, and
    each read-back is a Spark job of its own: seven per cycle, about 3 s of a cycle's wall time on a
    Spark Connect server, for summary lines nobody reads every 30 seconds."""
    global _READ_BACK
    previous, _READ_BACK = _READ_BACK, False
    try:
        yield
    finally:
        _READ_BACK = previous


def reads_back() -> bool:
    """False within ``without_read_back``: a step then also skips the other summary-only passes."""
    return _READ_BACK


def summarise_written(
    spark: SparkSession, output_root: str, table: str, interval: Interval
) -> dict[str, object]:
    """Rows and partitions now present in the interval's hours of a written table (read back, cheap);
    ``rows`` and ``partitions`` None within ``without_read_back``."""
    path = table_path(output_root, table)
    if not _READ_BACK:
        return {"path": path, "rows": None, "partitions": None}
    hours = interval.hours
    wanted = F.lit(False)
    for hour in hours:
        wanted = wanted | ((F.col("date") == hour.strftime("%Y-%m-%d")) & (F.col("hour") == hour.hour))
    try:
        written = spark.read.schema(OUTPUT_SCHEMAS[table]).parquet(path).where(wanted)
    except Exception as err:  # nothing was ever written there (no rows in any run)
        if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
            return {"path": path, "rows": 0, "partitions": []}
        raise
    partitions = written.groupBy("date", "hour").count().orderBy("date", "hour").collect()
    return {
        "path": path,
        "rows": sum(row["count"] for row in partitions),
        "partitions": [f"date={row['date']}/hour={row['hour']}" for row in partitions],
    }
