"""The demo fleet's killed producer: a real librdkafka client that dies by SIGKILL, which the fleet
expects (no "exited early" error) and reports."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

from kip714_dev.demo.fleet import ClientFleet
from kip714_dev.demo.fleet_client import ClientBehaviour, ClientSpec
from kip714_dev.local_kafka.cluster import LocalKafkaCluster


def test_killed_producer_dies_by_sigkill_and_the_fleet_expects_it(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
):
    prefix = f"kill-{uuid.uuid4().hex[:6]}"
    specs = [
        ClientSpec(f"{prefix}-killed", ClientBehaviour.STEADY_PRODUCER, f"{prefix}-t", kill_after_s=3.0),
        ClientSpec(f"{prefix}-steady", ClientBehaviour.STEADY_PRODUCER, f"{prefix}-t"),
    ]
    with ClientFleet(kafka_cluster.bootstrap_servers, specs, tmp_path, max_seconds=60) as fleet:
        deadline = time.monotonic() + 30
        while not fleet.killed() and time.monotonic() < deadline:
            time.sleep(0.5)
        (killed,) = fleet.killed()
        assert killed[0] == f"{prefix}-killed"
        assert fleet.check_alive() == []  # the steady one runs; the killed one was meant to die
        assert fleet.clients[0].process.returncode == -signal.SIGKILL
    log_text = (tmp_path / f"{prefix}-killed.log").read_text()
    assert "killing myself with SIGKILL" in log_text and "stopping after" not in log_text
