"""The rollups app on a zone of the wire-level fleet's shape: many small committed chunks, some not committed.

The zone is landed through the lander's staging path (``tests/support/fleet_landing.py``): client pushes
and the brokers' per-instance cumulative counters and histograms, one chunk per partition every 2 s,
far more files than the 32 paths above which Spark lists files in a job. The app reads the hour folders
and must still leave out a chunk whose marker is missing and a file that is not Parquet.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import rollups

from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from airflow_provider_kip714.decoding.records import TopicRecord
from airflow_provider_kip714.telemetry.landing_stage import stage_records
from airflow_provider_kip714.telemetry.landing_zone import LandingZone
from tests.support.fleet_landing import FleetShape, land_fleet
from tests.unit.otlp_payloads import client_headers, producer_like_payload

pytestmark = pytest.mark.spark

START = datetime(2026, 3, 2, 10, 20, tzinfo=UTC)
WINDOW = ["--start", "2026-03-02T10:00:00Z", "--end", "2026-03-02T11:00:00Z", "--bucket", "1m"]


def test_rollups_of_a_fleet_zone_count_every_committed_point_and_nothing_else(  # type: ignore[no-untyped-def]
    tmp_path: Path, spark
) -> None:
    landing, output = tmp_path / "landing", tmp_path / "out"
    counts = land_fleet(landing, START, FleetShape(instances=60, duration_s=40))
    zone = LandingZone(str(landing), DEFAULT_TELEMETRY_TOPIC, fsync=False)
    folder = landing / "datapoints" / "date=2026-03-02" / "hour=10"
    assert len(list(folder.glob("*.parquet"))) > 32  # Spark would list these paths in a job
    landed = zone.read_table("datapoints")
    assert landed.num_rows == counts["points"]
    assert set(pc.unique(landed.column("metric_type")).to_pylist()) == {"gauge", "sum", "histogram"}

    # a chunk being written (or left by a crash): its file is in the hour folder, its marker is not
    late = int(START.timestamp() * 1000) + 30_000
    payload = producer_like_payload(10, seed=9, time_ns=late * 1_000_000)
    with zone.lock():
        stage_records(
            zone,
            "otlp_proto",
            [
                TopicRecord(DEFAULT_TELEMETRY_TOPIC, 5, 10_000 + k, late, b"x", client_headers(), payload)
                for k in range(3)
            ],
        )
    (folder / "notes.txt").write_text("not a Parquet file")
    assert len(list(folder.glob("*.parquet"))) == len(zone.committed_files("datapoints")) + 1

    summary = rollups.run(["--input", str(landing), "--output", str(output), *WINDOW], spark)

    table = pq.read_table(output / "rollups")
    assert int(pc.sum(table.column("count")).as_py()) == counts["points"]
    assert summary.tables["rollups"]["rows"] == table.num_rows
    instances = pc.count_distinct(table.column("client_instance_id"), mode="only_valid").as_py()
    assert instances == counts["instances"]
