"""The landing zone's crash protocol on disk: token-named files, commit markers, recovery, the lease."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from otlp_payloads import client_headers, producer_like_payload

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA, QUARANTINE_SCHEMA, RAW_SCHEMA
from airflow_provider_kip714.decoding.decoder import TopicRecord, decode_batch
from airflow_provider_kip714.exceptions import LandingError
from airflow_provider_kip714.telemetry.landing_chunk import PartitionBatch
from airflow_provider_kip714.telemetry.landing_stage import record_columns, stage_chunk, stage_records
from airflow_provider_kip714.telemetry.landing_zone import ChunkId, LandingZone, file_stem
from spark_apps.kip714_common.commit_markers import marker_folder

TOPIC = "_client_telemetry"
HOUR_MS = 3_600_000
T0_MS = 1_763_798_400_000  # 2025-11-22T08:00:00Z


def records(
    partition: int, first: int, count: int, *, bad_every: int = 0, t0: int = T0_MS
) -> list[TopicRecord]:
    out = []
    for offset in range(first, first + count):
        value = (
            b"\x07garbage" if bad_every and offset % bad_every == 0 else producer_like_payload(4, seed=offset)
        )
        out.append(TopicRecord(TOPIC, partition, offset, t0 + offset * 60_000, b"k", client_headers(), value))
    return out


def land(zone: LandingZone, batch: list[TopicRecord]):
    staged = stage_records(zone, "otlp_proto", batch)
    zone.commit(staged)
    return staged


def files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*.parquet"))


@pytest.fixture
def zone(tmp_path: Path) -> Iterator[LandingZone]:
    """A prepared zone whose lease this test holds (commits are refused without it)."""
    landing = LandingZone(tmp_path, TOPIC, fsync=False)
    with landing.lock():
        landing.prepare()
        yield landing


def test_chunk_names_round_trip() -> None:
    chunk = ChunkId(3, 1200, 1699)
    assert file_stem(chunk, "abc123") == "p00003-00000000000000001200-00000000000000001699.abc123"
    assert ChunkId.parse(file_stem(chunk, "abc123") + ".parquet") == (chunk, "abc123")
    assert ChunkId.parse(file_stem(chunk, "abc123") + ".commit") == (chunk, "abc123")
    assert ChunkId.parse(chunk.stem + ".parquet") == (chunk, "")
    assert ChunkId.parse("part-0.parquet") is None


def test_committed_chunk_lands_raw_datapoints_and_quarantine_by_hour(
    zone: LandingZone, tmp_path: Path
) -> None:
    batch = records(0, 0, 90, bad_every=10)  # one record a minute: spans two hours
    staged = land(zone, batch)
    assert (staged.records, staged.quarantined, staged.points) == (90, 9, 81 * 4)
    name = file_stem(staged.chunk, staged.token) + ".parquet"
    marker = tmp_path / marker_folder(staged.token) / (file_stem(staged.chunk, staged.token) + ".commit")
    assert marker.exists() and marker.parent.parent.parent == tmp_path / "_commits"
    assert files(tmp_path) == [
        f"datapoints/date=2025-11-22/hour=08/{name}",
        f"datapoints/date=2025-11-22/hour=09/{name}",
        f"quarantine/{name}",
        f"raw/{name}",
    ]
    raw = pq.read_table(tmp_path / "raw" / name)
    assert raw.column("offset").to_pylist() == list(range(90))
    assert raw.column("value").to_pylist()[1] == batch[1].value
    quarantine = pq.read_table(tmp_path / "quarantine" / name)
    assert quarantine.column("offset").to_pylist() == list(range(0, 90, 10))
    assert all(reason.startswith("not OTLP protobuf") for reason in quarantine.column("reason").to_pylist())
    hour8 = pq.read_table(tmp_path / "datapoints/date=2025-11-22/hour=08" / name)
    assert set(hour8.column("hour").to_pylist()) == {8} and hour8.num_rows == 54 * 4
    # written with dictionary-encoded strings and no Arrow schema: read back exactly as decoded
    hour9 = pq.read_table(tmp_path / "datapoints/date=2025-11-22/hour=09" / name)
    assert hour8.schema == hour9.schema == DATAPOINT_SCHEMA
    assert pa.concat_tables([hour8, hour9]).equals(decode_batch(batch).datapoints)
    assert raw.schema == RAW_SCHEMA and quarantine.schema == QUARANTINE_SCHEMA
    assert zone.recover() == {0: 90}


def test_recover_drops_uncommitted_chunks(zone: LandingZone, tmp_path: Path) -> None:
    land(zone, records(0, 0, 10))
    land(zone, records(1, 0, 5))
    # a crash after a chunk's data files were written but before its marker
    staged = stage_records(zone, "otlp_proto", records(0, 10, 10, bad_every=3))
    # and a crash half-way through writing a data file (only possible on a local disk)
    torn = tmp_path / "raw" / (file_stem(ChunkId(1, 5, 9), "0123456789ab") + ".parquet")
    torn.write_bytes(b"PAR1 half a file")
    assert len(files(tmp_path)) == 2 + 2 + len(staged.files) + 1
    # readers never see either, before or after recovery
    assert zone.read_table("raw").column("offset").to_pylist() == list(range(10)) + list(range(5))
    assert zone.recover() == {0: 10, 1: 5}
    assert not torn.exists() and all(staged.token not in name for name in files(tmp_path))
    # landing the same offsets again with other chunk boundaries leaves exactly one copy of each
    land(zone, records(0, 10, 4))
    land(zone, records(0, 14, 6))
    offsets = []
    for path in sorted((tmp_path / "datapoints").rglob("p00000-*.parquet")):
        offsets.extend(pq.read_table(path).column("offset").to_pylist())
    assert sorted(set(offsets)) == list(range(20)) and len(offsets) == 20 * 4
    assert zone.recover() == {0: 20, 1: 5}


def test_overlapping_chunks_are_reported(zone: LandingZone) -> None:
    land(zone, records(0, 0, 10))
    land(zone, records(0, 5, 10))
    with pytest.raises(LandingError, match="overlap"):
        zone.recover()


def test_zone_belongs_to_one_topic_and_one_writer(tmp_path: Path) -> None:
    LandingZone(tmp_path, TOPIC).prepare()
    with pytest.raises(LandingError, match="landing zone of topic"):
        LandingZone(tmp_path, "other").prepare()
    zone = LandingZone(tmp_path, TOPIC)
    with (
        zone.lock(),
        pytest.raises(LandingError, match="another landing run"),
        LandingZone(tmp_path, TOPIC).lock(),
    ):
        pass
    with zone.lock():  # released: the next run takes it
        pass


def test_a_waiting_run_takes_the_lease_when_the_other_run_ends(tmp_path: Path) -> None:
    """Live mode and the hourly DAG land into one zone: the second waits for the first, then lands."""
    import threading
    import time

    LandingZone(tmp_path, TOPIC).prepare()
    first = LandingZone(tmp_path, TOPIC).lock()
    first.acquire()
    released_at: list[float] = []

    def release_soon() -> None:
        time.sleep(1.5)
        released_at.append(time.monotonic())
        first.release()

    threading.Thread(target=release_soon).start()
    with LandingZone(tmp_path, TOPIC).lock().waiting(30):
        taken_at = time.monotonic()
    assert released_at and taken_at >= released_at[0]
    with zone_held(tmp_path), pytest.raises(LandingError, match="another landing run"):
        LandingZone(tmp_path, TOPIC).lock().waiting(0.5).acquire()


def zone_held(path: Path):  # type: ignore[no-untyped-def]
    return LandingZone(path, TOPIC).lock()


def test_commit_without_the_lease_is_refused(tmp_path: Path) -> None:
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    zone.prepare()
    staged = stage_records(zone, "otlp_proto", records(0, 0, 3))
    with pytest.raises(LandingError, match="without holding its lease"):
        zone.commit(staged)
    assert zone.committed() == set()


def test_pre_marker_zone_is_adopted(tmp_path: Path) -> None:
    """A zone landed before markers existed (raw file = commit) keeps its chunks."""
    old = tmp_path / "raw" / (ChunkId(0, 0, 9).stem + ".parquet")
    old.parent.mkdir(parents=True)
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        staged = stage_records(zone, "otlp_proto", records(0, 0, 10))
        (tmp_path / "raw" / (file_stem(staged.chunk, staged.token) + ".parquet")).rename(old)
        temp = (
            tmp_path / "raw" / f".tmp-0123-{ChunkId(0, 10, 19).stem}.parquet"
        )  # the old protocol's leftover
        temp.write_bytes(b"PAR1 torn")
        zone.prepare()
        assert zone.recover() == {0: 10}
        assert zone.read_table("raw").num_rows == 10
        assert not temp.exists()


def test_a_dead_holder_on_this_host_does_not_block_the_next_run(tmp_path: Path) -> None:
    """A SIGKILLed run leaves its claim; a claim whose process is gone is dead at once."""
    script = (
        "import os, sys; from airflow_provider_kip714.telemetry.landing_zone import LandingZone;"
        f"z = LandingZone({str(tmp_path)!r}, {TOPIC!r}); z.lock().acquire(); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert len(list((tmp_path / "_lease").iterdir())) == 1
    with LandingZone(tmp_path, TOPIC).lock():
        assert len(list((tmp_path / "_lease").iterdir())) == 1  # the dead claim was removed


def test_partition_batch_keeps_each_header_set_once_and_stages(tmp_path: Path) -> None:
    batch = PartitionBatch(TOPIC, 2)
    originals = records(2, 100, 30)
    for record in originals:
        batch.append(record.offset, record.timestamp_ms, record.key, list(record.headers), record.value)
    batch.append(130, T0_MS, None, None, producer_like_payload(4))
    received = batch
    assert len(received.header_sets) == 2  # the client's header set and "no headers"
    expected = [record._replace(headers=tuple(record.headers)) for record in originals]
    assert record_columns(received).records()[:30] == expected
    zone = LandingZone(tmp_path, TOPIC, fsync=False)
    with zone.lock():
        zone.prepare()
        staged = stage_chunk(zone, "otlp_proto", received)
        zone.commit(staged)
    assert (staged.chunk, staged.records, staged.quarantined) == (ChunkId(2, 100, 130), 31, 1)
    raw = zone.read_table("raw")
    assert dict(raw.column("headers").to_pylist()[0]) == {k: v.decode() for k, v in client_headers()}
    assert raw.column("headers").to_pylist()[30] == []
    # all decoded natively, so written with dictionary-encoded strings: read back as decoded
    datapoints = zone.read_table("datapoints")
    assert datapoints.schema == DATAPOINT_SCHEMA
    assert datapoints.equals(decode_batch(originals).datapoints)
