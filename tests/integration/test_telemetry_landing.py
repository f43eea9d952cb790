"""Landing the telemetry topic from a real local Kafka: exactly once, across runs and a SIGKILL."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from landing_crash import assert_landed_exactly_once, kill_mid_landing, land_command, rerun_landing
from plugin_topic import wait_for
from telemetry_helpers import (
    create_topic,
    good_records,
    offsets_by_partition,
    points_per_offset,
    produce_records,
    read_dir,
)

from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook
from airflow_provider_kip714.telemetry.landing import land_topic
from airflow_provider_kip714.telemetry.landing_zone import LandingZone

pytestmark = pytest.mark.integration


def test_bounded_runs_land_each_record_once_and_resume(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=6)
    produce_records(config, topic, good_records(600, partitions=6, points=5))
    out = tmp_path / "zone"

    first = land_topic(config, topic, out, chunk_records=70, fsync=False, max_records=250)
    assert first.records == 250 and first.stop_reason.startswith("max_records")
    second = land_topic(config, topic, out, chunk_records=70, fsync=False)
    assert second.records == 350 and second.points == 350 * 5
    assert second.stop_reason == "reached the end offsets read at the start"
    again = land_topic(config, topic, out, fsync=False)
    assert again.records == 0

    produce_records(config, topic, good_records(60, partitions=6, points=5))
    third = land_topic(config, topic, out, fsync=False)
    assert third.records == 60

    raw = read_dir(out / "raw")
    assert offsets_by_partition(raw) == {partition: list(range(110)) for partition in range(6)}
    datapoints = read_dir(out / "datapoints")
    assert datapoints.num_rows == 660 * 5
    assert set(points_per_offset(datapoints).values()) == {5}
    assert read_dir(out / "quarantine") is None


def test_hook_iterates_decoded_records(kafka_cluster: LocalKafkaCluster) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=2)
    produce_records(config, topic, [*good_records(4, partitions=2, points=3), (0, b"\x01\x02junk", None)])
    hook = TelemetryTopicHook(config=config, topic=topic)
    decoded = list(hook.iter_records("earliest", timeout_s=30))
    assert len(decoded) == 5
    good = [item for item in decoded if item.error is None]
    assert len(good) == 4 and all(len(item.rows) == 3 for item in good)
    assert all(row["offset"] == item.record.offset for item in good for row in item.rows)
    (bad,) = [item for item in decoded if item.error is not None]
    assert bad.error.startswith("missing headers")
    assert list(hook.iter_records("latest", timeout_s=5)) == []


def test_sigkill_mid_landing_then_rerun_has_no_duplicates_or_gaps(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=3)
    total = 30_000
    produce_records(config, topic, good_records(total, partitions=3, points=4))
    out = tmp_path / "zone"
    bootstrap = kafka_cluster.bootstrap_servers
    kill_mid_landing(
        land_command(bootstrap, topic, out, "--chunk-records", "600", "--workers", "2"),
        lambda: len(list((out / "raw").glob("p*.parquet"))) >= 6,
        deadline_s=120,
        poll_s=0.05,
    )
    # What landed is what the markers name: the kill may catch a chunk's file half written (it fires as
    # the sixth raw file appears; a full suite once saw it at 0 bytes), which the rerun removes.
    landed_before = LandingZone(str(out), topic).read_table("raw").num_rows
    assert 0 < landed_before < total

    rerun_landing(land_command(bootstrap, topic, out, "--json"), timeout_s=300)
    assert_landed_exactly_once(read_dir(out / "raw"), read_dir(out / "datapoints"), total)
    assert not [path for path in out.rglob("*") if path.name.startswith(".tmp-")]


def test_a_run_that_fails_leaves_its_checkpoint_unclean_and_the_next_run_sweeps_and_resumes(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that raises mid-way never writes a clean checkpoint (``finish`` is skipped), so the next
    run lists every data file and marker, removes what the failed run staged but did not commit, and
    lands the rest once."""
    from airflow_provider_kip714.telemetry import landing
    from airflow_provider_kip714.telemetry.landing_checkpoint import read_checkpoint

    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=3)
    total = 900
    produce_records(config, topic, good_records(total, partitions=3, points=4))
    out = tmp_path / "zone"
    staged = 0
    real_stage = landing.stage_chunk

    def stage_then_fail(*args: Any) -> Any:
        """The fourth chunk's files are written, then its staging fails: they have no marker."""
        nonlocal staged
        staged += 1
        chunk = real_stage(*args)
        if staged > 3:
            raise OSError("injected: the disk filled up while staging")
        return chunk

    monkeypatch.setattr(landing, "stage_chunk", stage_then_fail)
    with pytest.raises(OSError, match="injected"):
        land_topic(config, topic, out, chunk_records=50, fsync=False, workers=1)
    zone = LandingZone(str(out), topic)
    after_failure = read_checkpoint(zone.storage)
    assert after_failure is not None and not after_failure.clean
    landed_before = zone.read_table("raw").num_rows
    assert 0 < landed_before < total
    assert _data_files(out) - _committed_files(zone), "the failed chunk's files are left for the sweep"

    monkeypatch.setattr(landing, "stage_chunk", real_stage)
    rest = land_topic(config, topic, out, chunk_records=50, fsync=False)
    assert rest.records == total - landed_before
    after_rerun = read_checkpoint(zone.storage)
    assert after_rerun is not None and after_rerun.clean
    assert dict(after_rerun.next_offsets) == {partition: total // 3 for partition in range(3)}
    assert_landed_exactly_once(read_dir(out / "raw"), read_dir(out / "datapoints"), total)
    assert _data_files(out) == _committed_files(zone)


def _data_files(zone_root: Path) -> set[str]:
    """The names of the data files on disk, committed or not."""
    return {path.name for path in zone_root.rglob("*.parquet") if not path.name.startswith(".")}


def _committed_files(zone: LandingZone) -> set[str]:
    """The names of the data files the zone's commit markers name."""
    return {
        Path(path).name
        for table in ("raw", "datapoints", "quarantine")
        for path in zone.committed_files(table)
    }


def _wait_for_last_stable_offset(config: dict[str, Any], topic: str, at_least: int) -> None:
    """Wait until partition 0's end offset, as a read_committed consumer sees it, reaches ``at_least``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**config, "group.id": f"lso-{topic}", "isolation.level": "read_committed"})
    partition = TopicPartition(topic, 0)
    try:
        wait_for(
            lambda: consumer.get_watermark_offsets(partition, timeout=10, cached=False)[1] >= at_least,
            timeout_s=30,
            what=f"{topic}'s last stable offset to reach {at_least}",
        )
    finally:
        consumer.close()


def test_bounded_run_ends_when_the_log_ends_with_transaction_markers(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    from confluent_kafka import Producer

    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=1, prefix="txn")
    producer = Producer({**config, "transactional.id": f"txn-{topic}", "enable.metrics.push": False})
    producer.init_transactions(30)
    producer.begin_transaction()
    for partition, value, headers in good_records(5, partitions=1, points=2):
        producer.produce(topic, value=value, headers=headers, partition=partition)
    producer.commit_transaction(30)  # the log's last offset is now a commit marker, never delivered
    # commit_transaction returns once the coordinator has decided; the broker writes the partition's
    # marker just after. Until then a read_committed reader (librdkafka's default, landing's too) sees
    # the last stable offset at 0, and a bounded run rightly lands nothing.
    _wait_for_last_stable_offset(config, topic, at_least=6)

    result = land_topic(config, topic, tmp_path / "zone", fsync=False, timeout_s=120)
    assert result.stop_reason == "reached the end offsets read at the start"
    assert (result.records, result.points) == (5, 10)
    assert offsets_by_partition(read_dir(tmp_path / "zone" / "raw")) == {0: [0, 1, 2, 3, 4]}


def test_since_starts_partitions_without_history_at_that_time_and_reruns_resume(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=3)
    an_hour_ago_ms = int(time.time() * 1000) - 3_600_000
    produce_records(config, topic, good_records(42, partitions=3), timestamp_ms=an_hour_ago_ms)  # 14 each
    since = datetime.now(UTC) - timedelta(minutes=5)
    produce_records(config, topic, good_records(20, partitions=2))  # partitions 0 and 1: offsets 14..23
    out = tmp_path / "zone"

    first = land_topic(config, topic, out, since=since)

    assert first.records == 20
    assert offsets_by_partition(read_dir(out / "raw")) == {0: list(range(14, 24)), 1: list(range(14, 24))}
    # A later run resumes after the landed offsets; partition 2 (no record since) starts at `since`
    # again, so its old records stay out; without `since` a partition with no history starts at the
    # earliest offset.
    produce_records(config, topic, good_records(4, partitions=2))
    second = land_topic(config, topic, out, since=since)
    assert second.records == 4
    assert offsets_by_partition(read_dir(out / "raw")) == {0: list(range(14, 26)), 1: list(range(14, 26))}
    third = land_topic(config, topic, out)
    assert third.records == 14
    assert offsets_by_partition(read_dir(out / "raw"))[2] == list(range(14))
