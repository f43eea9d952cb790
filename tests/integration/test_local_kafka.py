"""The local Apache Kafka, for real: the CLI in a subprocess, both listeners, SASL, 3.9.2 and restarts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from kip714_dev.local_kafka.distribution import check_distribution, ensure_distribution
from kip714_dev.local_kafka.ports import free_ports
from kip714_dev.local_kafka.process_control import is_alive
from kip714_dev.local_kafka.versions import KafkaVersion

pytestmark = pytest.mark.integration

CONSUME_DEADLINE_S = 60


def kip714(
    *args: str, timeout: float = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real console entry point in a child process, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "airflow_provider_kip714.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
    )


def produce(config: dict[str, object], topic: str, values: list[bytes]) -> None:
    producer = Producer({**config, "enable.metrics.push": False})
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0, "messages left undelivered"


def consume_all(config: dict[str, object], topic: str, expected: int) -> list[bytes]:
    """Read ``topic`` from the start until ``expected`` values arrived or the deadline passed."""
    consumer = Consumer(
        {
            **config,
            "group.id": f"test-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.metrics.push": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + CONSUME_DEADLINE_S
    try:
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue
                raise KafkaException(message.error())
            values.append(message.value())
    finally:
        consumer.close()
    return values


def test_plaintext_and_sasl_listeners_carry_messages(kafka_cluster: LocalKafkaCluster) -> None:
    assert kafka_cluster.kafka_version == "4.4.0"
    assert kafka_cluster.sasl_users == {"alice": "alice-secret"}
    assert kafka_cluster.is_running()
    plain_values = [f"plain-{index}".encode() for index in range(5)]
    sasl_values = [f"sasl-{index}".encode() for index in range(5)]
    plain_topic = f"plain-{uuid.uuid4().hex[:8]}"
    sasl_topic = f"sasl-{uuid.uuid4().hex[:8]}"
    produce(kafka_cluster.client_config(), plain_topic, plain_values)
    produce(kafka_cluster.client_config(sasl_user="alice"), sasl_topic, sasl_values)
    # Each listener reads what the other wrote: one broker, two ways in.
    assert sorted(consume_all(kafka_cluster.client_config(sasl_user="alice"), plain_topic, 5)) == plain_values
    assert sorted(consume_all(kafka_cluster.client_config(), sasl_topic, 5)) == sasl_values
    assert kafka_cluster.log_path.is_file()
    assert "Kafka Server started" in kafka_cluster.log_path.read_text(errors="replace")


def test_wrong_sasl_password_is_refused_by_the_broker(kafka_cluster: LocalKafkaCluster) -> None:
    config = {**kafka_cluster.client_config(sasl_user="alice"), "sasl.password": "not-the-secret"}
    errors: list[KafkaError] = []
    producer = Producer({**config, "enable.metrics.push": False, "error_cb": errors.append, "log_level": 0})
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=5)
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        producer.poll(0.5)  # serves error_cb
    assert errors, "the client reported no error"
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "Invalid username or password" in errors[0].str()
    good = Producer({**kafka_cluster.client_config(sasl_user="alice"), "enable.metrics.push": False})
    assert kafka_cluster.node_id in good.list_topics(timeout=15).brokers


def test_cli_lifecycle_start_status_refuse_stop_restart(tmp_path: Path) -> None:
    port, controller_port, sasl_port = free_ports(3)
    data_dir = tmp_path / "cli-kafka"
    common = ["--data-dir", str(data_dir)]
    start = [
        "local-kafka", "start", *common, "--no-plugin", "--port", str(port),
        "--controller-port", str(controller_port), "--sasl-port", str(sasl_port),
        "--sasl-users", "alice:alice-secret", "--override", "num.partitions=2",
    ]  # fmt: skip

    not_running = kip714("local-kafka", "status", *common)
    assert not_running.returncode == 3, not_running

    started = kip714(*start)
    assert started.returncode == 0, started.stderr
    assert f"bootstrap servers: 127.0.0.1:{port}" in started.stdout
    assert f"SASL_PLAINTEXT (PLAIN) bootstrap servers: 127.0.0.1:{sasl_port}" in started.stdout
    state = json.loads((data_dir / "state.json").read_text())
    pid = int((data_dir / "kafka.pid").read_text())
    assert state["pid"] == pid
    assert state["bootstrap_servers"] == f"127.0.0.1:{port}"
    assert state["kafka_version"] == "4.4.0"
    cluster_id_before = (data_dir / "kraft-logs" / "meta.properties").read_text()
    # The broker lives on after the CLI process ended: detached in its own session.
    assert is_alive(pid)
    assert os.getsid(pid) == pid

    running = kip714("local-kafka", "status", *common, "--json")
    assert running.returncode == 0, running.stderr
    assert json.loads(running.stdout)["pid"] == pid

    refused = kip714(*start)
    assert refused.returncode == 2
    assert f"already runs from {data_dir} (pid {pid})" in refused.stderr
    assert "Traceback" not in refused.stderr

    topic = "kept-across-restart"
    produce({"bootstrap.servers": f"127.0.0.1:{port}"}, topic, [b"before-restart"])

    stopped = kip714("local-kafka", "stop", *common)
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped pid {pid}" in stopped.stdout
    assert not is_alive(pid)
    assert not (data_dir / "kafka.pid").exists()
    assert not (data_dir / "state.json").exists()
    assert kip714("local-kafka", "status", *common).returncode == 3
    assert "clean shutdown" not in stopped.stdout  # no SIGKILL needed
    assert "shut down completed" in (data_dir / "logs" / "server.log").read_text(errors="replace")

    restarted = kip714(*start)
    assert restarted.returncode == 0, restarted.stderr
    assert "Formatted KRaft storage" not in restarted.stderr
    assert (data_dir / "kraft-logs" / "meta.properties").read_text() == cluster_id_before
    assert consume_all({"bootstrap.servers": f"127.0.0.1:{port}"}, topic, 1) == [b"before-restart"]

    # A broker that ignores SIGTERM (frozen here) is killed, but only after the timeout.
    frozen_pid = int((data_dir / "kafka.pid").read_text())
    assert frozen_pid != pid
    os.kill(frozen_pid, signal.SIGSTOP)
    killed = kip714("local-kafka", "stop", *common, "--timeout", "2")
    assert killed.returncode == 0, killed.stderr
    assert f"stopped pid {frozen_pid} with SIGKILL after 2 s" in killed.stdout
    assert not is_alive(frozen_pid)
    assert kip714("local-kafka", "stop", *common).stdout.startswith("no local Kafka runs")


def test_a_broken_cache_is_refused_then_repaired_by_install(tmp_path: Path) -> None:
    installed = ensure_distribution(KafkaVersion.parse("4.4.0"))
    cache = tmp_path / "cache"
    broken_home = cache / "kafka-4.4.0"
    (broken_home / "libs").mkdir(parents=True)
    for jar in installed.classpath():
        (broken_home / "libs" / jar.name).symlink_to(jar)
    shutil.copy(installed.home / "manifest.json", broken_home / "manifest.json")
    (broken_home / "libs" / "kafka-clients-4.4.0.jar").unlink()
    env = {"KIP714_CACHE_DIR": str(cache)}
    port, controller_port = free_ports(2)

    refused = kip714(
        "local-kafka", "start", "--no-plugin", "--data-dir", str(tmp_path / "k"),
        "--port", str(port), "--controller-port", str(controller_port), env=env,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"kip714: error: Kafka 4.4.0 cache at {broken_home}: libs/kafka-clients-4.4.0.jar is missing; "
        "run `kip714 local-kafka install --kafka-version 4.4.0` to resolve it again"
    )
    assert not (tmp_path / "k" / "kafka.pid").exists()

    repaired = kip714("local-kafka", "install", "--kafka-version", "4.4.0", env=env)
    assert repaired.returncode == 0, repaired.stderr
    assert f"jars in {broken_home / 'libs'}" in repaired.stdout
    fresh_jar = broken_home / "libs" / "kafka-clients-4.4.0.jar"
    assert fresh_jar.is_file() and not fresh_jar.is_symlink()
    assert sorted(path.name for path in cache.iterdir()) == ["kafka-4.4.0", "kafka-4.4.0.lock"]
    assert check_distribution(broken_home, KafkaVersion.parse("4.4.0")).classpath()


def test_start_refuses_a_port_in_use_with_one_clear_line(tmp_path: Path) -> None:
    port, controller_port = free_ports(2)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        result = kip714(
            "local-kafka", "start", "--no-plugin", "--data-dir", str(tmp_path / "k"),
            "--port", str(port), "--controller-port", str(controller_port),
        )  # fmt: skip
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"kip714: error: --port: port {port} on 127.0.0.1 is already in use; pick another port"
    )


def test_a_broker_that_dies_during_start_is_reported_with_its_log(tmp_path: Path) -> None:
    port, controller_port = free_ports(2)
    data_dir = tmp_path / "dies"
    result = kip714(
        "local-kafka", "start", "--no-plugin", "--data-dir", str(data_dir),
        "--port", str(port), "--controller-port", str(controller_port),
        "--override", "metric.reporters=com.example.NoSuchReporter",
    )  # fmt: skip
    assert result.returncode == 2
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("kip714: error:")]
    assert len(error_lines) == 1, result.stderr
    assert error_lines[0].startswith("kip714: error: the broker exited during start-up (exit code")
    assert "com.example.NoSuchReporter" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (data_dir / "kafka.pid").exists()


def test_kafka_3_9_cluster_from_the_factory_survives_a_restart(
    kafka_cluster_factory: LocalKafkaClusterFactory,
) -> None:
    cluster = kafka_cluster_factory.start(
        kafka_version="3.9.2", with_plugin=False, sasl_users={"bob": "bob-pw"}
    )
    try:
        assert cluster.kafka_version == "3.9.2"
        topic = f"compat-{uuid.uuid4().hex[:8]}"
        produce(cluster.client_config(sasl_user="bob"), topic, [b"one", b"two"])
        pid_before = cluster.pid
        cluster.restart()
        assert cluster.pid != pid_before
        assert not is_alive(pid_before)
        assert sorted(consume_all(cluster.client_config(), topic, 2)) == [b"one", b"two"]
        assert "Kafka Server started" in cluster.log_path.read_text(errors="replace")
    finally:
        cluster.stop()
    assert not cluster.is_running()
