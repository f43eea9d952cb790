"""Spark standalone (2 workers) reading and writing the data root on a real S3 server, committed data only."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest
from object_storage import LocalS3
from spark_cluster import local_spark, spark_submit  # noqa: F401 (fixture)
from telemetry_helpers import client_headers, producer_like_payload

from airflow_provider_kip714.analytics.tables import read_table
from airflow_provider_kip714.decoding.decoder import TopicRecord
from airflow_provider_kip714.storage.data_root import RunArea, as_storage_path
from airflow_provider_kip714.telemetry.landing_stage import stage_records
from airflow_provider_kip714.telemetry.landing_zone import LandingZone

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

TOPIC = "_client_telemetry"
T0_MS = 1_763_798_400_000  # 2025-11-22T08:00:00Z
WINDOW = ("--start", "2025-11-22T08:00:00Z", "--end", "2025-11-22T09:00:00Z", "--bucket", "1m")


def _records(first: int, count: int) -> list[TopicRecord]:
    return [
        TopicRecord(
            TOPIC,
            0,
            offset,
            T0_MS + offset * 1000,
            b"k",
            client_headers(),
            producer_like_payload(3, seed=offset),
        )
        for offset in range(first, first + count)
    ]


def test_spark_app_on_s3_reads_committed_chunks_only(local_s3: LocalS3, local_spark) -> None:  # noqa: F811
    area = RunArea(as_storage_path(local_s3.url()))
    landing = str(area.landing)
    zone = LandingZone(landing, TOPIC)
    with zone.lock():
        zone.prepare()
        committed = stage_records(zone, "otlp_proto", _records(0, 40))
        zone.commit(committed)
        # a chunk being written (or left by a crash): its files are in the bucket, its marker is not
        stage_records(zone, "otlp_proto", _records(40, 40))
        points = zone.read_table("datapoints")
        assert points.num_rows == committed.points > 0

        run = spark_submit(
            local_spark,
            "rollups",
            ["--input", landing, "--output", str(area.analytics), *WINDOW],
        )
    errors = [line for line in run.stderr.splitlines() if "Exception" in line or "Error" in line]
    assert run.returncode == 0, "\n".join(errors[:30]) or run.stderr[-4000:]
    rollups = read_table(area, "rollups")
    assert not rollups.empty
    assert int(rollups["count"].sum()) == committed.points
    offsets = pc.unique(points.column("offset")).to_pylist()
    assert max(offsets) == 39
