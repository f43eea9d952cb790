"""Landing must not lose, wedge or spin: recreated topics, fatal errors, offset resets, late windows."""

from __future__ import annotations

import json
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from telemetry_helpers import create_topic, good_records, offsets_by_partition, produce_records, read_dir

from airflow_provider_kip714.exceptions import Kip714Error, LandingError
from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook
from airflow_provider_kip714.telemetry import topic_consumer
from airflow_provider_kip714.telemetry.landing import land_topic

pytestmark = pytest.mark.integration


def _recreate(config: dict[str, Any], topic: str, partitions: int) -> None:
    admin = AdminClient(config)
    admin.delete_topics([topic])[topic].result(30)
    deadline = time.monotonic() + 60
    while True:  # the controller needs a moment before the name is free again
        try:
            admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[
                topic
            ].result(30)
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_recreated_topic_is_refused_naming_both_ids_then_lands_as_a_new_generation(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=2, prefix="recreated")
    produce_records(config, topic, good_records(40, partitions=2, points=2))
    out = tmp_path / "zone"
    assert land_topic(config, topic, out, fsync=False).records == 40
    old_id = json.loads((out / "_topic_id.json").read_text())["topic_id"]

    _recreate(config, topic, partitions=2)
    produce_records(config, topic, good_records(10, partitions=2, points=2))
    with pytest.raises(LandingError) as refused:
        land_topic(config, topic, out, fsync=False, metadata_timeout_s=10)
    message = str(refused.value)
    new_id = topic_consumer.describe_topic(config, topic, 10).topic_id
    assert new_id != old_id and old_id in message and new_id in message
    assert "accept_new_topic_id=True" in message and "--accept-recreated-topic" in message
    assert "\n" not in message

    # A zone landed before topic ids were recorded: the offsets going backwards still stop it.
    (out / "_topic_id.json").unlink()
    with pytest.raises(
        LandingError, match=r"went backwards.*partition 0 landed up to offset 19 but now ends at 4"
    ):
        land_topic(config, topic, out, fsync=False)

    accepted = land_topic(config, topic, out, fsync=False, accept_new_topic_id=True)
    assert accepted.records == 10 and accepted.topic_id == new_id
    assert offsets_by_partition(read_dir(out / "raw")) == {0: list(range(5)), 1: list(range(5))}
    archive = Path(accepted.archived_generation or "")
    assert archive.parent == out / "_generations"
    assert offsets_by_partition(read_dir(archive / "raw")) == {0: list(range(20)), 1: list(range(20))}
    assert json.loads((out / "_topic_id.json").read_text())["topic_id"] == new_id
    assert land_topic(config, topic, out, fsync=False).records == 0  # resumes in the new generation


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_unreachable_broker_and_unknown_topic_fail_fast_with_one_line(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    nowhere = {"bootstrap.servers": f"127.0.0.1:{_free_port()}"}
    for attempt in range(2):  # the second run proves the zone's lock was released
        started = time.monotonic()
        with pytest.raises(Kip714Error) as unreachable:
            land_topic(nowhere, "t", tmp_path / "zone", metadata_timeout_s=2)
        assert time.monotonic() - started < 15, attempt
        assert str(unreachable.value).startswith("bootstrap.servers: no broker of 127.0.0.1:")
    with pytest.raises(Kip714Error, match=r"bootstrap\.servers: no broker"):
        list(TelemetryTopicHook(config=nowhere, topic="t").iter_records(timeout_s=5))

    config = kafka_cluster.client_config()
    started = time.monotonic()
    with pytest.raises(Kip714Error, match=r"topic: 'no-such-topic-\w+' does not exist"):
        land_topic(config, f"no-such-topic-{time.time_ns()}", tmp_path / "other", metadata_timeout_s=5)
    assert time.monotonic() - started < 15


@pytest.fixture(scope="module")
def acl_cluster(kafka_cluster_factory: LocalKafkaClusterFactory) -> LocalKafkaCluster:
    """A cluster with Kafka's KRaft authorizer: the PLAINTEXT listener (ANONYMOUS) is a super user,
    SASL user alice gets only the ACLs a test grants."""
    return kafka_cluster_factory.start(
        name="acl-kafka",
        with_plugin=False,
        overrides={
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
        },
    )


def test_no_read_authorization_fails_the_run_instead_of_spinning(
    acl_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    admin_config = acl_cluster.client_config()
    topic = create_topic(admin_config, partitions=2, prefix="noread")
    produce_records(admin_config, topic, good_records(10, partitions=2, points=1))
    describe_only = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.ALLOW,
    )
    admin = AdminClient(admin_config)
    admin.create_acls([describe_only])[describe_only].result(30)
    alice = acl_cluster.client_config(sasl_user="alice")
    deadline = time.monotonic() + 30  # ACLs reach the authorizer through the metadata log
    while time.monotonic() < deadline:
        try:
            topic_consumer.describe_topic(alice, topic, 5)
            break
        except topic_consumer.TopicReadError:
            time.sleep(0.5)

    started = time.monotonic()
    with pytest.raises(Kip714Error) as refused:
        land_topic(alice, topic, tmp_path / "zone", timeout_s=60, metadata_timeout_s=5)
    assert time.monotonic() - started < 30
    assert str(refused.value).startswith(f"topic: not authorized to read {topic!r}")
    with pytest.raises(Kip714Error, match="not authorized to read"):
        list(TelemetryTopicHook(config=alice, topic=topic).iter_records(timeout_s=60))


def test_inherited_offset_reset_never_skips_a_backlog(kafka_cluster: LocalKafkaCluster) -> None:
    """A position deleted under the reader (retention) is reported, not jumped to the end."""
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=1, prefix="reset")
    produce_records(config, topic, good_records(50, partitions=1, points=1))
    admin = AdminClient(config)
    admin.delete_records([TopicPartition(topic, 0, 30)])[TopicPartition(topic, 0, 30)].result(30)
    policy = topic_consumer.ErrorPolicy(topic)
    consumer = topic_consumer.open_consumer({**config, "auto.offset.reset": "latest"}, policy)
    try:
        topic_consumer.assign(consumer, topic, {0: 5})  # a plan made before retention deleted 0..29
        deadline = time.monotonic() + 20
        with pytest.raises(topic_consumer.TopicReadError, match=r"out of range.*nothing was skipped"):
            while time.monotonic() < deadline:
                for message in consumer.consume(100, 0.5):
                    if message.error() is not None:
                        policy.check(message.error())
                    else:
                        pytest.fail(f"skipped to offset {message.offset()} without a word")
                policy.raise_pending()
    finally:
        consumer.close()


def test_until_lands_the_whole_window_however_late_the_run_starts(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=4, prefix="window")
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
    end = start + timedelta(minutes=1)
    ms = lambda moment: int(moment.timestamp() * 1000)  # noqa: E731
    # partition 3 has records before the window only: idle from `since` on, it must not hold the run
    produce_records(config, topic, good_records(8, partitions=4, points=1), timestamp_ms=ms(start) - 30_000)
    produce_records(config, topic, good_records(30, partitions=3, points=1), timestamp_ms=ms(start) + 10_000)
    # partition 2 has nothing at or after the end: it ends at its end offset once `until` has passed
    after = [(p, v, h) for p, v, h in good_records(10, partitions=2, points=1)]
    produce_records(config, topic, after, timestamp_ms=ms(end) + 5_000)

    started = time.monotonic()
    result = land_topic(config, topic, tmp_path / "zone", since=start, until=end, fsync=False)
    assert time.monotonic() - started < 20
    assert result.stop_reason == f"reached the first records at or after until={end.isoformat()}"
    raw = read_dir(tmp_path / "zone" / "raw")
    assert raw.num_rows == 30 == result.records
    stamps = pc.cast(raw.column("timestamp"), "int64").to_pylist()
    assert set(stamps) == {ms(start) + 10_000}
    assert offsets_by_partition(raw) == {p: list(range(2, 12)) for p in range(3)}

    # A window ending in the near future: the run follows until then (+ the settle time), and ends
    # idle partitions (no record at or after `until`) at their end offsets instead of waiting forever.
    soon = datetime.now(UTC) + timedelta(seconds=3)
    started = time.monotonic()
    follow = land_topic(config, topic, tmp_path / "zone", until=soon, fsync=False)
    # lands what the first run left before `soon`: the after-window records, partition 3 from its start
    assert follow.records == 10 + 2 and follow.stop_reason.startswith("reached the first records at or after")
    assert 3 <= time.monotonic() - started < 30
