"""A pipeline run lists the landing zone once: every step takes the markers and hour folders from the first.

On Spark Connect each listing is a Spark job (``files.ConnectFiles``); a live cycle's steps asked the same
folders about 14 times. Within ``shared_reads`` (one pipeline run) the first answer stands; outside it,
and in the next run, the zone is listed afresh, so a chunk committed after a run began is read by the next.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kip714_common import landing, run_shares
from kip714_common.files import HadoopFiles

from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from airflow_provider_kip714.decoding.records import TopicRecord
from airflow_provider_kip714.telemetry.landing_stage import stage_records
from airflow_provider_kip714.telemetry.landing_zone import LandingZone
from tests.support.fleet_landing import FleetShape, land_fleet
from tests.unit.otlp_payloads import client_headers, producer_like_payload

pytestmark = pytest.mark.spark

START = datetime(2026, 3, 2, 10, 20, tzinfo=UTC)
END = datetime(2026, 3, 2, 11, 0, tzinfo=UTC)


class CountingFiles(HadoopFiles):
    """The real Hadoop listings, counted."""

    calls: Counter[str] = Counter()

    def exists(self, path: str) -> bool:
        self.calls["exists"] += 1
        return super().exists(path)

    def sizes(self, directory: str) -> dict[str, int]:
        self.calls["listed:_commits" if "/_commits" in directory else "listed"] += 1
        return super().sizes(directory)


def stage_uncommitted(zone: Path) -> None:
    """A chunk's data files in the hour folder without its marker: being written, or left by a crash."""
    lander = LandingZone(str(zone), DEFAULT_TELEMETRY_TOPIC, fsync=False)
    late = int(datetime(2026, 3, 2, 10, 45, tzinfo=UTC).timestamp() * 1000)
    payload = producer_like_payload(10, seed=3, time_ns=late * 1_000_000)
    records = [
        TopicRecord(DEFAULT_TELEMETRY_TOPIC, 7, 50_000 + k, late, b"x", client_headers(), payload)
        for k in range(3)
    ]
    with lander.lock():
        stage_records(lander, "otlp_proto", records)


@pytest.mark.timeout(180)  # a deadlock fails here, not after the suite's 15 minutes
def test_one_run_lists_the_zone_once_and_the_next_run_afresh(  # type: ignore[no-untyped-def]
    tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch
) -> None:
    zone = tmp_path / "landing"
    land_fleet(zone, START, FleetShape(instances=20, duration_s=20))
    monkeypatch.setattr(landing, "session_files", CountingFiles)
    CountingFiles.calls.clear()

    alone = landing.committed_datapoint_files(spark, str(zone), START, END)
    listed_alone = sum(CountingFiles.calls.values())
    assert alone and listed_alone >= 3  # markers exist, markers, the hour folder

    CountingFiles.calls.clear()
    with run_shares.shared_reads():
        first = landing.committed_datapoint_files(spark, str(zone), START, END)
        assert sum(CountingFiles.calls.values()) == listed_alone
        # every read a step makes (a shared read lists the zone while it holds the shared reads' lock:
        # a deadlock once)
        rows = landing.landed_hours(spark, str(zone), START, END).count()
        landing.read_datapoints(spark, str(zone), START, END)
        markers_listed = CountingFiles.calls["listed:_commits"]
        # once each slot the chunks were landed in (usually one), never ``_commits/`` as a whole
        assert markers_listed == len({path.parent for path in (zone / "_commits").rglob("*.commit")})
        # chunks that appear while the run goes on: one committed, one staged but not committed
        land_fleet(zone, datetime(2026, 3, 2, 10, 40, tzinfo=UTC), FleetShape(instances=5, duration_s=4))
        stage_uncommitted(zone)
        assert landing.committed_datapoint_files(spark, str(zone), START, END) == first == alone
        # ...the run reads neither: its snapshot of the markers says which files, and the hour folder is
        # listed afresh for what to leave out, so the new files are left out too
        assert landing.landed_hours(spark, str(zone), START, END).count() == rows
        assert CountingFiles.calls["listed:_commits"] == markers_listed

    # ...and the next run reads it
    with run_shares.shared_reads():
        later = landing.committed_datapoint_files(spark, str(zone), START, END)
    assert set(first) < set(later)


@pytest.mark.timeout(180)
def test_a_run_is_sized_by_the_chunks_it_reads_not_by_its_hour_folders(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``landed_bytes`` (the pipeline's choice of small-input settings): the committed chunks' bytes, and
    within ``chunk_selection`` (a live cycle) only the selected chunks', never a chunk without its marker."""
    zone = tmp_path / "landing"
    land_fleet(zone, START, FleetShape(instances=20, duration_s=20))
    stage_uncommitted(zone)
    folder = zone / "datapoints" / "date=2026-03-02" / "hour=10"
    on_disk = {path.name: path.stat().st_size for path in folder.glob("*.parquet")}
    markers = {path.name.removesuffix(".commit") for path in (zone / "_commits").rglob("*.commit")}
    committed = {name: size for name, size in on_disk.items() if name.removesuffix(".parquet") in markers}
    assert 0 < len(committed) < len(on_disk)  # the uncommitted chunk is in the folder

    assert landing.landed_bytes(spark, str(zone), START, END) == sum(committed.values())

    def partition_and_last_offset(name: str) -> tuple[int, int]:
        found = landing.CHUNK_FILE.match(name)
        assert found is not None, name
        return int(found.group(1)), int(found.group(3))

    last_offsets = sorted(last for part, last in map(partition_and_last_offset, committed) if part == 0)
    cut = last_offsets[len(last_offsets) // 2]  # partition 0 from its middle chunk; the others whole
    selected = {
        name: size
        for name, size in committed.items()
        if partition_and_last_offset(name)[0] != 0 or partition_and_last_offset(name)[1] >= cut
    }
    with landing.chunk_selection({0: cut}):
        sized = landing.landed_bytes(spark, str(zone), START, END)
    assert sized == sum(selected.values()) < sum(committed.values())
