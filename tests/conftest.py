"""Shared fixtures: a real single-node Apache Kafka for the whole session, and a factory for more.

``kafka_cluster`` is Kafka 4.4.0 (KRaft, 127.0.0.1, free ports) with the broker plugin loaded when
``broker_plugin/target/kip714-broker-plugin.jar`` is built (``KIP714_REQUIRE_PLUGIN=1`` makes a
missing jar an error), a SASL_PLAINTEXT listener with user ``alice:alice-secret``, telemetry topic
``_client_telemetry`` and broker-metric records every 5 s. Fixtures start nothing until a test asks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory

KAFKA_FIXTURES = frozenset({"kafka_cluster", "kafka_cluster_factory"})

# py4j logs "Closing down clientserver connection" from __del__ at interpreter exit, after pytest has
# closed the captured streams; the resulting "--- Logging error ---" would follow the test summary.
logging.getLogger("py4j").setLevel(logging.WARNING)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for a Kafka fixture is an integration test wherever it lives."""
    for item in items:
        if KAFKA_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def kafka_cluster_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaClusterFactory]:
    """``.start(kafka_version="3.9.2", overrides={...})`` adds clusters; all stop at session end."""
    factory = LocalKafkaClusterFactory(tmp_path_factory.mktemp("kafka-clusters"))
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture(scope="session")
def kafka_cluster(kafka_cluster_factory: LocalKafkaClusterFactory) -> LocalKafkaCluster:
    """The session's Kafka 4.4.0; tests that restart or stop it must leave it running again."""
    return kafka_cluster_factory.start(name="session-kafka")


@pytest.fixture(scope="session")
def spark_connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real Spark Connect server (``kip714 local-spark-connect``, local[2]) for the whole session."""
    from kip714_dev.local_spark import connect

    data_dir = tmp_path_factory.mktemp("spark-connect")
    state = connect.start(data_dir)
    yield state
    connect.stop(data_dir)
