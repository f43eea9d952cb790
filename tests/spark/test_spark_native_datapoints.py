"""Spark reads the native writer's datapoints files (``native/src/parquet/``) as it reads pyarrow's.

The same chunks are staged with each writer (``tests/unit/test_native_datapoints_writer.py`` builds
them: rich payloads, broker labels, hours interleaved, across midnight); Spark must read the same rows
with the apps' ``DATAPOINT_SCHEMA`` (maps compared as their entries, both ways), and the rollups app
must write the same rollups from either zone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

import rollups
from kip714_common.schemas import DATAPOINT_SCHEMA
from pyspark.sql import functions as F
from pyspark.sql.types import MapType
from test_native_datapoints_writer import mixed_chunk

from airflow_provider_kip714.native_switches import WRITER_ENV
from airflow_provider_kip714.telemetry.landing_stage import stage_chunk
from airflow_provider_kip714.telemetry.landing_zone import LandingZone

pytestmark = pytest.mark.spark


def comparable(frame):  # type: ignore[no-untyped-def]
    """Maps as their entries: Spark's set operations refuse map columns."""
    return frame.select(
        *[
            F.map_entries(field.name).alias(field.name)
            if isinstance(field.dataType, MapType)
            else F.col(field.name)
            for field in frame.schema.fields
        ]
    )


def test_spark_reads_and_rolls_up_native_files_as_pyarrow_ones(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    zones = {}
    for writer in ("native", "pyarrow"):
        monkeypatch.setenv(WRITER_ENV, writer)
        zones[writer] = tmp_path / writer
        zone = LandingZone(zones[writer], "_client_telemetry", fsync=False)
        for number in range(4):
            stage_chunk(zone, "otlp_proto", mixed_chunk(number))
    created = spark.read.parquet(str(zones["native"] / "datapoints")).inputFiles()
    assert created  # Spark's own listing of the native zone

    native, reference = (
        comparable(spark.read.schema(DATAPOINT_SCHEMA).parquet(str(zones[w] / "datapoints" / "*" / "*")))
        for w in ("native", "pyarrow")
    )
    assert native.count() == reference.count() > 10_000
    assert native.exceptAll(reference).count() == 0 and reference.exceptAll(native).count() == 0

    written = {}
    for writer, zone in zones.items():
        out = tmp_path / f"out-{writer}"
        summary = rollups.run(
            [
                "--input",
                str(zone),
                "--output",
                str(out),
                "--start",
                "2025-11-22T08:00:00Z",
                "--end",
                "2025-11-22T10:00:00Z",
            ],
            spark,
        )
        assert summary.tables["rollups"]["rows"] > 0
        written[writer] = comparable(spark.read.parquet(str(out / "rollups")))
    assert written["native"].exceptAll(written["pyarrow"]).count() == 0
    assert written["pyarrow"].exceptAll(written["native"]).count() == 0
