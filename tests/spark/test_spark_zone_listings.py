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
    """The real Hadoop listings, counted (and the folders listed, relative to the zone)."""

    calls: Counter[str] = Counter()
    folders: list[str] = []

    def exists(self, path: str) -> bool:
        self.calls["exists"] += 1
        return super().exists(path)

    def sizes(self, directory: str) -> dict[str, int]:
        self.calls["listed:_commits" if "/_commits" in directory else "listed"] += 1
        self.folders.append(directory.split("/landing/", 1)[-1])
        return super().sizes(directory)


class LateFileFiles(HadoopFiles):
    """The first listing of the folder holding ``late`` does not show it yet: written just after that
    listing began, its chunk committed before the markers were listed."""

    late = ""

    def sizes(self, directory: str) -> dict[str, int]:
        found = super().sizes(directory)
        if LateFileFiles.late in found:
            del found[LateFileFiles.late]
            LateFileFiles.late = ""
        return found


def slot_folders(zone: Path) -> set[str]:
    """The slot folders holding the zone's markers, relative to the zone."""
    return {str(path.parent.relative_to(zone)) for path in (zone / "_commits").rglob("*.commit")}


def as_v1(zone: Path, marker: Path, token: str = "0123456789ab") -> str:
    """Rename a committed chunk's files and marker as a v1 lander named them (12 hex digits, the marker in
    ``_commits/`` itself); returns the chunk's new stem."""
    old = marker.name.removesuffix(".commit")
    new = old.rsplit(".", 1)[0] + "." + token
    for path in list(zone.rglob(f"{old}.parquet")):
        path.rename(path.with_name(f"{new}.parquet"))
    marker.rename(zone / "_commits" / f"{new}.commit")
    return new


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
        assert markers_listed == len(slot_folders(zone))
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


@pytest.mark.timeout(180)
def test_markers_are_looked_for_where_the_tokens_say_and_a_chunk_is_taken_whole(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the slots the hour's chunks name are listed (not a slot of another day's chunks); a v1 chunk
    (its marker in ``_commits/`` itself) is read; a v1-named file without a marker is not; and a chunk
    file written after the hour folder was first listed is read once its marker is seen."""
    zone = tmp_path / "landing"
    land_fleet(zone, START, FleetShape(instances=20, duration_s=20))
    slots = slot_folders(zone)
    other_day = zone / "_commits" / "2026-01-01" / "0000"
    other_day.mkdir(parents=True)
    (other_day / "p00009-00000000000000000000-00000000000000000009.0000000000000000abcd.commit").write_text(
        "{}"
    )
    markers = sorted((zone / "_commits").rglob("p*.commit"))
    v1_stem = as_v1(zone, next(marker for marker in markers if marker.parent != other_day))
    folder = zone / "datapoints" / "date=2026-03-02" / "hour=10"
    unmarked = folder / "p00011-00000000000000000000-00000000000000000004.0123456789ab.parquet"
    unmarked.write_bytes((folder / f"{v1_stem}.parquet").read_bytes())

    monkeypatch.setattr(landing, "session_files", CountingFiles)
    CountingFiles.folders.clear()
    committed = landing.committed_datapoint_files(spark, str(zone), START, END)
    assert committed is not None
    names = {path.rsplit("/", 1)[-1] for path in committed}
    marker_listings = {folder for folder in CountingFiles.folders if folder.startswith("_commits")}
    assert marker_listings == slots | {"_commits"}  # the hour's slots, and the root for the v1 chunk
    assert f"{v1_stem}.parquet" in names and unmarked.name not in names
    on_disk = {path.name for path in folder.glob("*.parquet")} - {unmarked.name}
    assert names == on_disk

    late = sorted(on_disk - {f"{v1_stem}.parquet"})[0]
    LateFileFiles.late = late
    monkeypatch.setattr(landing, "session_files", LateFileFiles)
    assert landing.committed_datapoint_files(spark, str(zone), START, END) == committed
    assert LateFileFiles.late == ""  # the first listing did leave it out
