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
from airflow_provider_kip714.telemetry.chunk_names import ChunkId, file_stem
from airflow_provider_kip714.telemetry.landing_stage import stage_records
from airflow_provider_kip714.telemetry.landing_zone import LandingZone, StagedChunk
from airflow_provider_kip714.telemetry.zone_storage import ZoneStorage
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
    for method in ("names", "find"):  # a folder's entries; everything under a folder
        real = getattr(ZoneStorage, method)

        def counting(self: ZoneStorage, directory: str, real=real) -> list[str]:  # type: ignore[no-untyped-def]
            seen.append(directory.removeprefix(self.path.rstrip("/")).lstrip("/"))
            return real(self, directory)

        monkeypatch.setattr(ZoneStorage, method, counting)
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


def as_v1(root: Path, staged: StagedChunk, token: str = "0123456789ab") -> str:
    """Rename a committed chunk's files and marker as a v1 lander named them (12 hex digits, the marker
    in ``_commits/`` itself); returns its new stem."""
    old, new = file_stem(staged.chunk, staged.token), file_stem(staged.chunk, token)
    for path in staged.files:
        moved = Path(path)
        moved.rename(moved.with_name(moved.name.replace(old, new)))
    (root / marker_folder(staged.token) / f"{old}.commit").rename(root / "_commits" / f"{new}.commit")
    return new


def test_a_v1_lander_is_fenced_out_of_a_v2_zone(tmp_path: Path) -> None:
    """v1's recovery knows no slots: it would delete every file a slot's marker names. v1 compares
    ``_zone.json``'s topic with its own and refuses another, so v2 fences the zone there."""
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    (tmp_path / "_zone.json").write_text(json.dumps({"topic": TOPIC}))  # as v1 left it
    zone.prepare()
    recorded = json.loads((tmp_path / "_zone.json").read_text())
    assert recorded["topic"] != TOPIC and "upgrade the provider" in recorded["topic"]
    zone.prepare()  # v2 itself still lands here
    with pytest.raises(LandingError, match="landing zone of topic '_client_telemetry', not 'other'"):
        LandingZone(tmp_path, "other").prepare()


def test_a_marker_filed_since_the_checkpoint_below_its_offsets_is_an_overlap(
    tmp_path: Path, clock: Clock
) -> None:
    """Two writers (a lease broken by clocks apart) or a hand edit: v1 caught it on every run."""
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        run(zone, records(0, 0, 10), records(0, 10, 10))
        clock.now += SLOT_SECONDS
        land(zone, records(0, 5, 10))  # lands offsets 5-14 again, in a later slot
        with pytest.raises(LandingError, match=r"p00000-0+5-0+14\.[0-9a-f]+ overlaps offsets landed before"):
            zone.recover()


def test_a_torn_protocol_file_is_written_again(tmp_path: Path) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    zone.prepare()
    (tmp_path / "_commits" / "PROTOCOL").write_bytes(b"")  # a write that died before its bytes
    zone.prepare()
    assert (tmp_path / "_commits" / "PROTOCOL").read_text() == landing_zone.PROTOCOL


def test_a_v1_zone_keeps_its_markers_and_files_new_ones_by_slot(tmp_path: Path, clock: Clock) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        v1_stem = as_v1(tmp_path, land(zone, records(0, 0, 10)))
        (tmp_path / "_commits" / "PROTOCOL").write_text("kip714 landing commit markers v1\n")
        zone.prepare()
        assert (tmp_path / "_commits" / "PROTOCOL").read_text() == landing_zone.PROTOCOL
        assert run(zone, records(0, 10, 10)) == {0: 20}  # the first run reads every marker...
        clock.now += 3600
        assert run(zone, records(0, 20, 5)) == {0: 25}  # ...later ones the checkpoint
    assert (tmp_path / "_commits" / f"{v1_stem}.commit").exists()
    assert {chunk for chunk, _ in zone.committed()} == {
        ChunkId(0, 0, 9),
        ChunkId(0, 10, 19),
        ChunkId(0, 20, 24),
    }
    assert zone.read_table("raw").column("offset").to_pylist() == list(range(25))


def test_runs_across_days_list_only_the_days_since(tmp_path: Path, clock: Clock, listed: list[str]) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        for day in range(3):
            clock.now = NOW_S + day * 86_400
            run(zone, records(0, 10 * day, 10))
        listed.clear()
        assert zone.recover() == {0: 30}
    days = {folder for folder in listed if folder.count("/") == 1}
    assert days == {"_commits/2026-12-08"}  # not the two days before


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


@pytest.mark.parametrize(
    "body",
    [
        '{"slot": 1e30, "next_offsets": {"0": 10}, "clean": true, "counted": []}',
        '{"slot": 99999999999999999999, "next_offsets": {"0": 10}, "clean": true, "counted": []}',
        '{"slot": -5, "next_offsets": {"0": 10}, "clean": true, "counted": []}',
        '{"slot": 3000000, "next_offsets": {"0": -3}, "clean": true, "counted": []}',
        '{"slot": 3000000, "next_offsets": {"0": true}, "clean": true, "counted": []}',
        '{"slot": 3000000, "next_offsets": {"0": 10}, "clean": "yes", "counted": "abc"}',
        "[1, 2, 3]",
        "<script>alert(1)</script>",
    ],
)
def test_a_checkpoint_no_lander_would_write_means_reading_every_marker(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture, body: str
) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        run(zone, records(0, 0, 10))
        (tmp_path / "_commits" / "_landed.json").write_text(body)
        assert zone.recover() == {0: 10}
    assert "unreadable" in caplog.text


@pytest.mark.parametrize("body", ["<html>", "[]", '"_client_telemetry"'])
def test_a_zone_file_that_is_not_an_object_is_refused_in_one_line(tmp_path: Path, body: str) -> None:
    (tmp_path / "_zone.json").write_text(body)
    with pytest.raises(LandingError, match=r"^out_dir: .*_zone\.json must be a JSON object") as raised:
        LandingZone(tmp_path, TOPIC, fsync=False).prepare()
    assert "\n" not in str(raised.value)


def test_a_huge_protocol_file_is_named_in_a_short_line(tmp_path: Path) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    zone.prepare()
    (tmp_path / "_commits" / "PROTOCOL").write_text("<script>alert(1)</script>\n" * 10_000)
    with pytest.raises(LandingError, match="newer version") as raised:
        zone.prepare()
    assert len(str(raised.value)) < 400 and "\n" not in str(raised.value)
