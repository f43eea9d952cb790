"""Live mode across a Spark Connect server killed mid-cycle and a broker restart: nothing lost, nothing twice.

Real librdkafka clients (three consumers of one group, one slowing down, and a producer) push every
second to a cluster of this test's own (its broker is restarted), and live cycles run beside them as
``kip714_live``'s tasks run them (``kip714_dev.demo.live.LiveDemo.cycle``: ``begin_cycle`` -> landing
-> the pipeline as a client of a Spark Connect server of this test's own -> ``detect`` -> ``announce``
into a list that stands for the events Airflow holds).

- The server is SIGKILLed while a cycle's pipeline runs: that cycle fails (as the DAG's ``analyse`` task
  does, to be retried), queues and announces nothing; on a new server the next cycle carries on.
- The broker is restarted between cycles while the clients keep pushing.

Afterwards every record of the telemetry topic has landed exactly once, and no finding transition was
announced twice: the slow consumer's anomaly opened once.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from confluent_kafka import Consumer, TopicPartition
from kip714_dev.demo.fleet import ClientFleet
from kip714_dev.demo.live import LiveDemo
from kip714_dev.demo.spark_server import DemoSparkServer

from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.findings.model import FindingKind, Transition
from airflow_provider_kip714.storage.data_root import DATA_DIR_ENV, scheduled_area
from airflow_provider_kip714.telemetry.landing import land_topic
from tests.support.slowing_group import SlowingGroup

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1200)]

KILL_AFTER_S = 3.0
"""Into the pipeline's run: a warm server takes 10 s or more for a cycle's pipeline."""


def _server(root: Path) -> DemoSparkServer:
    server = DemoSparkServer(root)
    server.start()
    server.to_normal_priority()  # waits until it listens
    return server


def _killed_mid_pipeline(server: DemoSparkServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's JVM gets SIGKILL ``KILL_AFTER_S`` into the next pipeline run on it."""
    run_app = server.run_app

    def run_and_kill(app: str, args: list[str], log: Path) -> None:
        assert server.state is not None
        threading.Timer(KILL_AFTER_S, os.kill, (server.state.pid, signal.SIGKILL)).start()
        run_app(app, args, log)

    monkeypatch.setattr(server, "run_app", run_and_kill)


def _topic_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """Each partition's end offset (the topic is never trimmed here: every offset below it exists).

    The topic never stops growing: the brokers' plugins write their own records on a timer.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "live-failures-offsets"})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions
        }
    finally:
        consumer.close()


def test_a_killed_spark_server_and_a_restarted_broker_lose_and_repeat_nothing(
    kafka_cluster_factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = kafka_cluster_factory.start(name="live-failures")
    if not cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    config = cluster.client_config()
    group = SlowingGroup.start(config, "lf")
    first = DemoSparkServer(tmp_path / "spark-1")
    first.start()  # boots while the clients start
    servers = [first]
    fleet = ClientFleet(cluster.bootstrap_servers, group.specs, tmp_path / "fleet", 900)
    outcomes: list[str] = []
    try:
        with fleet:
            time.sleep(30)  # the group settles, every client pushes
            first.to_normal_priority()
            live = LiveDemo(
                cluster.bootstrap_servers, cluster.telemetry_topic, first, tmp_path, group.slow.client_id
            )
            live.cycle(0)
            outcomes.append("ok")
            _killed_mid_pipeline(first, monkeypatch)
            announced_before, ledger_before = list(live.events), live.store.ledger()
            with pytest.raises(Kip714Error, match="pipeline failed on the Spark Connect server"):
                live.cycle(1)
            outcomes.append("failed: server killed")
            # nothing was detected or announced by the failed cycle
            assert live.events == announced_before
            assert live.store.ledger() == ledger_before
            first.stop()

            servers.append(_server(tmp_path / "spark-2"))  # the server is back (here: a new one)
            live.spark = servers[-1]
            for number in (2, 3):
                live.cycle(number)
                outcomes.append("ok")
            cluster.restart()
            outcomes.append("broker restarted")
            time.sleep(15)  # the clients reconnect and push again
            for number in (4, 5):
                live.cycle(number)
                outcomes.append("ok")
    finally:
        group.stop()
        for server in servers:
            server.stop()

    # nothing twice: every (finding, transition) announced once; the slow consumer's anomaly opened once
    keys = [
        (event["extra"]["finding"]["finding_id"], event["extra"]["finding"]["transition"])
        for event in live.events
    ]
    assert keys, f"no finding announced in {outcomes}"
    assert [key for key, count in Counter(keys).items() if count > 1] == []
    slow_opened = [
        event["extra"]["finding"]
        for event in live.events
        if event["extra"]["finding"]["client"]["client_id"] == group.slow.client_id
        and event["extra"]["finding"]["kind"] == FindingKind.ANOMALY.value
        and event["extra"]["finding"]["transition"] == Transition.OPENED.value
    ]
    assert slow_opened, f"the slow consumer's anomaly was not announced: {keys}"
    # every queued transition was announced (an entry leaves the outbox when a later run sees its event)
    assert {entry.key for entry in live.store.ledger().outbox} <= set(keys)

    # nothing lost, nothing landed twice: the topic, landed to its end, is in raw/ once per offset. The
    # ends are read first: a broker's own record may arrive while the landing runs, and lands or not.
    ends = _topic_offsets(cluster.bootstrap_servers, cluster.telemetry_topic)
    final = land_topic(config, cluster.telemetry_topic, str(scheduled_area().landing))
    assert final.stop_reason.startswith("reached the end offsets"), final.stop_reason
    raw = ds.dataset(scheduled_area().landing / "raw", format="parquet").to_table(
        columns=["partition", "offset"]
    )
    landed = Counter(zip(raw["partition"].to_pylist(), raw["offset"].to_pylist(), strict=True))
    assert [key for key, count in landed.items() if count > 1] == []
    for partition, end in ends.items():
        offsets = sorted(offset for p, offset in landed if p == partition)
        assert len(offsets) >= end, f"partition {partition}: {len(offsets)} landed below its end {end}"
        gaps = sorted(set(range(len(offsets))) - set(offsets))
        assert not gaps, f"partition {partition}: offsets {gaps[:5]} missing below {offsets[-1]}"
