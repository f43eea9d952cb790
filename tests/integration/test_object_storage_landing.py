"""The landing zone on a real S3 server (S3Proxy): exactly once across a SIGKILL, and one writer at a time."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from landing_crash import (
    assert_landed_exactly_once,
    kill_mid_landing,
    land_command,
    landing_env,
    rerun_landing,
)
from object_storage import LocalS3
from telemetry_helpers import (
    client_headers,
    create_topic,
    good_records,
    offsets_by_partition,
    produce_records,
    producer_like_payload,
)

from airflow_provider_kip714.decoding.decoder import TopicRecord
from airflow_provider_kip714.exceptions import LandingError
from airflow_provider_kip714.telemetry.landing_stage import stage_records
from airflow_provider_kip714.telemetry.landing_zone import LandingZone

pytestmark = pytest.mark.cluster

TOPIC = "_client_telemetry"


def _prefix(url: str) -> str:
    return url.split("/", 3)[3]


def test_sigkill_mid_landing_on_s3_then_rerun_has_no_duplicates_or_gaps(
    kafka_cluster: LocalKafkaCluster,
    local_s3: LocalS3,
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=3)
    total = 30_000
    produce_records(config, topic, good_records(total, partitions=3, points=4))
    url = local_s3.url()

    def committed_six() -> bool:
        markers = local_s3.keys(_prefix(url) + "/_commits/")
        return len([key for key in markers if key.endswith(".commit")]) >= 6

    bootstrap = kafka_cluster.bootstrap_servers
    kill_mid_landing(
        land_command(bootstrap, topic, url, "--chunk-records", "600", "--workers", "2"),
        committed_six,
        deadline_s=180,
        poll_s=0.1,
    )
    zone = LandingZone(url, topic)
    landed_before = zone.read_table("raw").num_rows
    assert 0 < landed_before < total

    rerun_landing(land_command(bootstrap, topic, url, "--json"), timeout_s=600)
    assert_landed_exactly_once(zone.read_table("raw"), zone.read_table("datapoints"), total)
    # every data file left in the bucket is named by a marker: the rerun removed the killed run's orphans
    committed = {f"{chunk.stem}.{token}" for chunk, token in zone.committed()}
    data_keys = [key for key in local_s3.keys(_prefix(url) + "/") if key.endswith(".parquet")]
    assert data_keys and {key.rsplit("/", 1)[-1].removesuffix(".parquet") for key in data_keys} <= committed


def _records(partition: int, first: int, count: int) -> list[TopicRecord]:
    return [
        TopicRecord(
            TOPIC,
            partition,
            offset,
            1_763_798_400_000 + offset,
            b"k",
            client_headers(),
            producer_like_payload(3),
        )
        for offset in range(first, first + count)
    ]


def test_uncommitted_chunk_on_s3_is_invisible_and_removed_on_recovery(local_s3: LocalS3) -> None:
    url = local_s3.url()
    zone = LandingZone(url, TOPIC)
    with zone.lock():
        zone.prepare()
        zone.commit(stage_records(zone, "otlp_proto", _records(0, 0, 20)))
        orphan = stage_records(zone, "otlp_proto", _records(0, 20, 20))  # never committed
        assert all(local_s3.keys(path.split("/", 1)[1]) for path in orphan.files)
        assert zone.read_table("raw").column("offset").to_pylist() == list(range(20))
        assert zone.read_table("datapoints").num_rows == 20 * 3
        assert zone.recover() == {0: 20}
    assert not any(local_s3.keys(path.split("/", 1)[1]) for path in orphan.files)


def test_two_landings_on_one_s3_zone_one_wins_the_other_fails_cleanly(
    kafka_cluster: LocalKafkaCluster,
    local_s3: LocalS3,
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=2)
    produce_records(config, topic, good_records(400, partitions=2, points=2))
    url = local_s3.url()
    env = landing_env()
    command = land_command(kafka_cluster.bootstrap_servers, topic, url, "--follow", "--timeout-s", "20")
    runs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    outcomes = [(run.wait(180), run.stderr.read()) for run in runs]
    codes = sorted(code for code, _ in outcomes)
    assert codes[0] == 0 and codes[1] != 0, outcomes
    (loser_err,) = [err for code, err in outcomes if code != 0]
    last = loser_err.strip().splitlines()[-1]
    assert "another landing run holds" in last or "could not take the lease" in last, loser_err
    assert "Traceback" not in loser_err
    raw = LandingZone(url, topic).read_table("raw")
    assert offsets_by_partition(raw) == {0: list(range(200)), 1: list(range(200))}


def _race(zones: list[LandingZone]) -> tuple[list[int], list[str]]:
    """Two threads take one zone's lease at the same moment; returns (winners, failures)."""
    barrier = threading.Barrier(len(zones))
    won: list[int] = []
    failed: list[str] = []

    def attempt(index: int) -> None:
        barrier.wait()
        try:
            zones[index].lease.acquire()
        except LandingError as err:
            failed.append(str(err))
        else:
            won.append(index)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(zones))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return won, failed


def test_concurrent_lease_attempts_never_both_win(local_s3: LocalS3) -> None:
    """Rounds of two threads racing for one S3 zone's lease: never two holders at once."""
    for _ in range(8):
        url = local_s3.url()
        zones = [LandingZone(url, TOPIC) for _ in range(2)]
        won, failed = _race(zones)
        assert len(won) <= 1, "two landings held one zone's lease"
        assert len(won) + len(failed) == 2
        for index in won:
            zones[index].lease.release()


def test_a_holder_that_lost_its_lease_cannot_commit(
    local_s3: LocalS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fencing: a stalled holder whose claim was taken over stops before its next marker."""
    monkeypatch.setenv("KIP714_LEASE_TTL_S", "3")
    url = local_s3.url()
    zone = LandingZone(url, TOPIC)
    with zone.lock():
        zone.prepare()
        staged = stage_records(zone, "otlp_proto", _records(0, 0, 5))
        for key in local_s3.keys(_prefix(url) + "/_lease/"):
            local_s3.client().delete_object(Bucket=local_s3.state.bucket, Key=key)  # as a taker would
        time.sleep(3.5)  # the renewal (every ttl/3) finds the claim gone
        with pytest.raises(LandingError, match="lost the lease"):
            zone.commit(staged)
    assert zone.committed() == set()


def test_replace_and_bulk_delete_work_on_s3_compatible_servers(local_s3: LocalS3) -> None:
    """fsspec's mv and rm use DeleteObjects, which S3Proxy refuses with botocore's CRC checksum."""
    from airflow_provider_kip714.storage.data_root import as_storage_path

    root = as_storage_path(local_s3.url())
    partial = root / "report" / ".report.html.partial"
    partial.write_text("<html></html>")
    partial.replace(root / "report" / "report.html")
    assert (root / "report" / "report.html").read_text() == "<html></html>" and not partial.exists()
    root.fs.rm([f"{root.path}/report/report.html"])
    assert local_s3.keys(_prefix(str(root)) + "/") == []
