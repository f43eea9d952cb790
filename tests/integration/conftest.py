"""Everything under tests/integration talks to real servers: mark it ``integration`` automatically."""

from __future__ import annotations

from pathlib import Path

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from object_storage import local_s3  # noqa: F401 (the session's S3 server, for any test here)
from subscription_fixtures import admin, cleanup  # noqa: F401 (a CLIENT_METRICS admin, for any test here)

INTEGRATION_DIR = Path(__file__).parent


@pytest.fixture(scope="session")
def tls_cluster(kafka_cluster_factory: LocalKafkaClusterFactory) -> LocalKafkaCluster:
    """SASL_SSL with a throwaway certificate for 127.0.0.1 (``client_config(sasl_user=...)`` trusts it)."""
    return kafka_cluster_factory.start(name="tls-kafka", with_plugin=False, tls=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION_DIR in item.path.parents:
            item.add_marker(pytest.mark.integration)
