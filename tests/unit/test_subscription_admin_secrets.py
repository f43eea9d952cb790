"""Secrets stay out of logs and error messages, even with kafka-python at DEBUG (no server needed)."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_kip714.exceptions import ClusterUnreachableError
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs

PASSWORD = "pa55-never-logged"


def test_debug_logging_and_errors_never_show_the_password(caplog: pytest.LogCaptureFixture) -> None:
    extra = {
        "bootstrap.servers": "127.0.0.1:1",  # nothing listens: the connect fails fast
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.username": "alice",
        "sasl.password": PASSWORD,
        "socket.connection.setup.timeout.ms": 300,
    }
    caplog.set_level(logging.DEBUG)
    with (
        ClientMetricsAdmin(to_kafka_python_kwargs(extra)) as admin,
        pytest.raises(ClusterUnreachableError) as err,
    ):
        admin.list_names()
    assert "127.0.0.1:1 (SASL_PLAINTEXT)" in str(err.value)
    assert PASSWORD not in str(err.value)
    assert any(record.name.startswith("kafka") for record in caplog.records), "kafka-python logged nothing"
    assert PASSWORD not in caplog.text
