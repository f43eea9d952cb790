"""Where a landing run resumes, without listing every marker and data file the zone ever landed.

Markers are filed by the ten-minute slot their chunk was staged in, and ``_commits/_landed.json`` says
where the last run left off; ``docs/telemetry-landing.md`` ("Commit markers by slot").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_landing_zone import TOPIC, files, land, records

from airflow_provider_kip714.exceptions import LandingError
from airflow_provider_kip714.telemetry import landing_zone
from airflow_provider_kip714.telemetry.landing_stage import stage_records
from airflow_provider_kip714.telemetry.landing_zone import ChunkId, LandingZone, file_stem
from spark_apps.kip714_common.commit_markers import (
    SLOT_SECONDS,
    marker_folder,
    slot_folder,
    slot_of,
    slotted_token,
    token_slot,
)

NOW_S = 1_796_580_000.0  # 2026-12-06T18:00:00Z


class Clock:
    """The lander's wall clock (``time.time`` in ``landing_zone``), moved by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = NOW_S
        monkeypatch.setattr(landing_zone.time, "time", lambda: self.now)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every folder the zone lists, relative to its root."""
    seen: list[str] = []
    for method in ("_names", "_find"):  # a folder's entries; everything under a folder
        real = getattr(LandingZone, method)

        def counting(self: LandingZone, directory: str, real=real) -> list[str]:  # type: ignore[no-untyped-def]
            seen.append(directory.removeprefix(self.path.rstrip("/")).lstrip("/"))
            return real(self, directory)

        monkeypatch.setattr(LandingZone, method, counting)
    yield seen


def run(zone: LandingZone, *chunks: list) -> dict[int, int]:  # type: ignore[type-arg]
    """One landing run as ``TopicLander`` makes it: recover, stage and commit each chunk, finish."""
    zone.recover()
    for batch in chunks:
        land(zone, batch)
    return zone.finish()


def test_tokens_name_the_slot_their_marker_is_filed_in() -> None:
    token = slotted_token(slot_of(NOW_S), "0123456789ab")
    assert token_slot(token) == slot_of(NOW_S) and len(token) == 20
    assert marker_folder(token) == slot_folder(slot_of(NOW_S)) == "_commits/2026-12-06/1800"
    assert marker_folder("0123456789ab") == marker_folder("") == "_commits"  # from before slots
    with pytest.raises(ValueError, match="token"):
        slotted_token(-1, "0123456789ab")


def test_a_run_after_a_clean_one_lists_only_the_slots_since(
    tmp_path: Path, clock: Clock, listed: list[str]
) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        assert run(zone, records(0, 0, 5), records(1, 0, 3)) == {0: 5, 1: 3}
        for hour in range(1, 4):  # three more hours of runs: older slots pile up
            clock.now = NOW_S + hour * 3600
            run(zone, records(0, 5 * hour, 5))
        assert len(list((tmp_path / "_commits").rglob("*.commit"))) == 5
        listed.clear()
        clock.now += SLOT_SECONDS / 2
        assert zone.recover() == {0: 20, 1: 3}
    slots = [folder for folder in listed if folder.count("/") == 2]
    assert slots == [slot_folder(slot_of(NOW_S + 3 * 3600))]  # the last run's slot, not the three before
    assert not any(folder.startswith(("raw", "datapoints", "quarantine")) for folder in listed)


def test_a_run_that_died_is_swept_and_its_committed_chunks_count(
    tmp_path: Path, clock: Clock, listed: list[str]
) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        run(zone, records(0, 0, 10))
        clock.now += 2 * SLOT_SECONDS
        zone.recover()  # the next run begins (the checkpoint now says: under way)...
        land(zone, records(0, 10, 10))  # ...commits a chunk in a later slot...
        orphan = stage_records(zone, "otlp_proto", records(0, 20, 10))  # ...and dies staging the next
        clock.now += 2 * SLOT_SECONDS
        listed.clear()
        assert zone.recover() == {0: 20}
    assert any(folder.startswith("raw") for folder in listed)  # not clean: every data file listed
    assert all(orphan.token not in name for name in files(tmp_path))
    assert zone.read_table("raw").column("offset").to_pylist() == list(range(20))


def test_a_run_whose_clock_is_behind_files_its_markers_no_earlier_than_the_checkpoint(
    tmp_path: Path, clock: Clock
) -> None:
    """Live mode and the hourly DAG land from different workers: a clock behind the last run's must not
    file a marker where the next run would not look."""
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        run(zone, records(0, 0, 10))
        checkpoint_slot = json.loads((tmp_path / "_commits" / "_landed.json").read_text())["slot"]
        clock.now -= 3600  # this worker's clock is an hour behind
        zone.recover()
        staged = land(zone, records(0, 10, 10))
        assert token_slot(staged.token) == checkpoint_slot
        clock.now += 3600
        assert zone.recover() == {0: 20}


def test_markers_a_pre_slot_lander_writes_later_still_count(tmp_path: Path, clock: Clock) -> None:
    """A worker still on the old provider files markers in ``_commits/`` itself: every run reads those."""
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        run(zone, records(0, 0, 10))
        staged = stage_records(zone, "otlp_proto", records(0, 10, 5))
        zone.commit(staged)
        name = file_stem(staged.chunk, staged.token) + ".commit"
        (tmp_path / marker_folder(staged.token) / name).rename(tmp_path / "_commits" / name)
        assert zone.landed_next_offsets() == {0: 15}
        assert zone.recover() == {0: 15}


def test_a_v1_zone_keeps_its_markers_and_files_new_ones_by_slot(tmp_path: Path, clock: Clock) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        staged = land(zone, records(0, 0, 10))
        marker = tmp_path / marker_folder(staged.token) / (file_stem(staged.chunk, staged.token) + ".commit")
        marker.rename(tmp_path / "_commits" / marker.name)  # where a v1 lander filed it
        (tmp_path / "_commits" / "PROTOCOL").write_text("kip714 landing commit markers v1\n")
        zone.prepare()
        assert (tmp_path / "_commits" / "PROTOCOL").read_text() == landing_zone.PROTOCOL
        assert run(zone, records(0, 10, 10)) == {0: 20}
    assert {chunk for chunk, _ in zone.committed()} == {ChunkId(0, 0, 9), ChunkId(0, 10, 19)}
    assert zone.read_table("raw").column("offset").to_pylist() == list(range(20))


def test_a_newer_protocol_is_refused_in_one_line(tmp_path: Path) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    zone.prepare()
    (tmp_path / "_commits" / "PROTOCOL").write_text("kip714 landing commit markers v9\n")
    with pytest.raises(LandingError, match=r"^out_dir: .* newer version of the lander .*v9") as raised:
        zone.prepare()
    assert "\n" not in str(raised.value)


def test_an_unreadable_checkpoint_means_reading_every_marker(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        run(zone, records(0, 0, 10), records(2, 0, 4))
        (tmp_path / "_commits" / "_landed.json").write_text('{"slot": ')
        assert zone.recover() == {0: 10, 2: 4}
    assert "unreadable" in caplog.text
