"""A CLIENT_METRICS admin on the session's Kafka, and the subscriptions a test must delete after it.

Registered for every integration test by conftest.py; a module that needs another admin (the plugin
cluster, a patched clock) defines its own ``admin`` fixture, which takes precedence.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def admin(kafka_cluster: LocalKafkaCluster) -> Iterator[ClientMetricsAdmin]:
    with ClientMetricsAdmin(to_kafka_python_kwargs(kafka_cluster.client_config())) as opened:
        yield opened


@pytest.fixture
def cleanup(admin: ClientMetricsAdmin) -> Iterator[list[str]]:
    """Names appended here are deleted after the test, pass or fail."""
    names: list[str] = []
    yield names
    for name in names:
        admin.delete(name)
