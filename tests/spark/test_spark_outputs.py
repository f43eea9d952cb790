"""Output schemas on disk, Python/Spark normalisation agreement, and a real ``spark-submit`` run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anomalies
import broker_metrics
import capabilities
import convergence
import delivery
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import rollups
from kip714_common.names import (
    labels_column,
    labels_from_entries_column,
    labels_key,
    labels_key_column,
    metric_name_column,
    normalise_labels,
    normalise_metric_name,
)
from kip714_common.schemas import OUTPUT_PARTITION_COLUMNS, OUTPUT_SCHEMAS
from pyspark.sql import functions as F

from spark_apps.package import DEFAULT_RULES, application_args, application_path, build_common_zip
from tests.spark import scenarios

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def _data_columns(table: str) -> list[tuple[str, object]]:
    return [
        (f.name, f.dataType) for f in OUTPUT_SCHEMAS[table].fields if f.name not in OUTPUT_PARTITION_COLUMNS
    ]


def test_every_output_table_is_written_in_its_schema_under_date_hour_partitions(spark, tmp_path):
    landing, out = tmp_path / "landing", tmp_path / "out"
    scenarios.write_broker_scenario(str(landing))
    scenarios.write_anomaly_scenario(str(landing))
    common = ["--input", str(landing), "--output", str(out), "--start", "2026-01-31T13:00:00Z"]
    rollups.run([*common, "--end", "2026-01-31T15:00:00Z"], spark)
    anomalies.run(
        [*common, "--end", "2026-01-31T15:00:00Z", "--rules", str(DEFAULT_RULES), "--history", "0s"], spark
    )
    broker_metrics.run([*common, "--end", "2026-01-31T14:00:00Z", "--bucket", "5m"], spark)
    delivery.run([*common, "--end", "2026-01-31T15:00:00Z"], spark)
    capabilities.run([*common, "--end", "2026-01-31T15:00:00Z"], spark)
    windows = tmp_path / "windows.json"
    windows.write_text(json.dumps([{"name": "w", "subscribed_at": "2026-01-31T13:30:00Z", "metrics": ["*"]}]))
    convergence.run([*common, "--end", "2026-01-31T15:00:00Z", "--windows", str(windows)], spark)

    for table in OUTPUT_SCHEMAS:
        leaves = sorted((out / table).glob("date=*/hour=*"))
        assert leaves, table
        assert {(leaf.parent.name, leaf.name) for leaf in leaves} <= {
            ("date=2026-01-31", "hour=13"),
            ("date=2026-01-31", "hour=14"),
        }, table
        written = spark.read.parquet(str(leaves[0]))
        assert [(f.name, f.dataType) for f in written.schema.fields] == _data_columns(table), table
        assert written.count() > 0, table

    # how the files are encoded (outputs.plain_encoding_options, session.REQUIRED_CONF)
    rollup_file = next((out / "rollups").glob("date=*/hour=*/*.parquet"))
    parquet = pq.ParquetFile(rollup_file)
    arrow = parquet.schema_arrow
    assert arrow.field("bucket_start").type == pa.timestamp("us", tz="UTC")  # not INT96
    assert arrow.field("first_time").type == pa.timestamp("us", tz="UTC")
    columns = parquet.metadata.row_group(0)
    by_name = {columns.column(i).path_in_schema: columns.column(i) for i in range(columns.num_columns)}
    assert not by_name["avg"].has_dictionary_page  # measured values: plain
    assert not by_name["first_time"].has_dictionary_page
    assert by_name["metric_name"].has_dictionary_page  # repeated strings keep their dictionary
    assert by_name["bucket_start"].has_dictionary_page


def test_python_and_spark_normalisation_agree(spark):
    names = [
        "org.apache.kafka.producer.Record-Queue-Time-Max",
        "kafka.server.client_metrics.throttle.count",
        "x-y",
    ]
    labels = [
        {"node.id": "1"},
        {"node_id": "node-2", "client_id": "a"},
        {"Node-Id": "node--1", "topic": "t"},
        {},
    ]
    frame = spark.createDataFrame(
        [(name, label_set) for name in names for label_set in labels],
        "name string, labels map<string,string>",
    )
    normalised = labels_column(F.col("labels"))
    rows = frame.select(
        "name",
        "labels",
        metric_name_column(F.col("name")).alias("n"),
        normalised.alias("l"),
        labels_key_column(normalised).alias("k"),
        labels_from_entries_column(F.map_entries("labels")).alias("e"),  # the once-per-label-set form
    ).collect()
    for row in rows:
        assert row["n"] == normalise_metric_name(row["name"])
        assert row["l"] == normalise_labels(row["labels"])
        assert row["k"] == labels_key(normalise_labels(row["labels"]))
        assert row["e"] == normalise_labels(row["labels"])


def test_rollups_app_runs_under_spark_submit_with_the_shipped_zip(tmp_path):
    landing, out = tmp_path / "landing", tmp_path / "out"
    scenarios.write_label_scenario(str(landing))
    command = [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master", "local[1]",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=1",
        "--py-files", str(build_common_zip(tmp_path / "build")),
        str(application_path("rollups")),
        *application_args(str(landing), str(out), "2026-01-31T13:00:00Z", "2026-01-31T13:02:00Z", "1m"),
    ]  # fmt: skip
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    finished = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    (line,) = [ln for ln in finished.stdout.splitlines() if ln.startswith("KIP714_SUMMARY ")]
    summary = json.loads(line.removeprefix("KIP714_SUMMARY "))
    assert summary["app"] == "kip714-rollups"
    assert summary["tables"]["rollups"]["rows"] == 4  # 2 clients x 2 buckets
    assert summary["tables"]["rollups"]["partitions"] == ["date=2026-01-31/hour=13"]


def test_spark_submit_reports_a_bad_flag_by_name(tmp_path):
    command = [
        str(Path(sys.executable).parent / "spark-submit"), "--master", "local[1]",
        "--py-files", str(build_common_zip(tmp_path / "build")), str(application_path("rollups")),
        *application_args(str(tmp_path), str(tmp_path / "o"), "2026-01-31T13:00Z", "2026-01-31T14:00Z", "7m"),
    ]  # fmt: skip
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    finished = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    output = finished.stdout + finished.stderr  # spark-submit merges the Python driver's stderr into stdout
    assert finished.returncode == 2, output[-3000:]
    assert "error: --bucket: must divide one hour" in output, output[-3000:]
    assert "Traceback" not in output


def test_a_rerun_without_rows_leaves_its_hour_empty_and_other_hours_alone(spark, tmp_path):
    """``write_table`` replaces exactly the interval's hours, rows or none: one hour by overwriting its
    folder (not cleared first: on Spark Connect that is a job of its own), several by clearing them first.
    A rerun that found nothing must not leave the last run's rows behind (a live cycle's anomalies)."""
    from kip714_common.cli import Interval
    from kip714_common.outputs import write_table
    from kip714_common.schemas import OUTPUT_SCHEMAS

    schema = OUTPUT_SCHEMAS["capabilities"]
    out = str(tmp_path / "out")
    row = {f.name: None for f in schema.fields}

    def interval(start: str, end: str) -> Interval:
        from datetime import datetime

        return Interval(datetime.fromisoformat(start), datetime.fromisoformat(end), 60)

    def hour_rows(date: str, hour: int) -> list:
        return [{**row, "date": date, "hour": hour, "client_software_name": "lib", "metric_name": "m"}]

    two_hours = interval("2026-01-31T13:00:00+00:00", "2026-01-31T15:00:00+00:00")
    write_table(spark.createDataFrame(hour_rows("2026-01-31", 13) + hour_rows("2026-01-31", 14), schema), out,
                "capabilities", two_hours)  # fmt: skip
    empty = spark.createDataFrame([], schema)
    write_table(
        empty, out, "capabilities", interval("2026-01-31T14:00:00+00:00", "2026-01-31T15:00:00+00:00")
    )
    left = spark.read.parquet(f"{out}/capabilities").groupBy("date", "hour").count().collect()
    assert {(str(r["date"]), r["hour"]): r["count"] for r in left} == {("2026-01-31", 13): 1}
    write_table(empty, out, "capabilities", two_hours)
    assert spark.read.schema(schema).parquet(f"{out}/capabilities").count() == 0
