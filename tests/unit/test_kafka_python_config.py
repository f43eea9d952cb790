"""librdkafka-style connection extras translated for kafka-python's admin client."""

from __future__ import annotations

import pytest

from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.subscriptions.kafka_python_config import (
    java_client_properties_to_extra,
    read_java_properties,
    redact,
    secret_values,
    to_kafka_python_kwargs,
)


def test_full_sasl_ssl_extra() -> None:
    kwargs = to_kafka_python_kwargs(
        {
            "bootstrap.servers": "b1:9093, b2:9093",
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": "s3cret",
            "ssl.ca.location": "/ca.pem",
            "ssl.certificate.location": "/cert.pem",
            "ssl.key.location": "/key.pem",
            "ssl.key.password": "k3y",
            "ssl.endpoint.identification.algorithm": "none",
            "client.id": "ops",
            "request.timeout.ms": "5000",
            "socket.connection.setup.timeout.ms": 3000,
            "group.id": "ignored-consumer-setting",
            "enable.metrics.push": "true",
        }
    )
    assert kwargs == {
        "bootstrap_servers": ["b1:9093", "b2:9093"],
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "s3cret",
        "ssl_cafile": "/ca.pem",
        "ssl_certfile": "/cert.pem",
        "ssl_keyfile": "/key.pem",
        "ssl_password": "k3y",
        "ssl_check_hostname": False,
        "client_id": "ops",
        "request_timeout_ms": 5000,
        "bootstrap_timeout_ms": 3000,
    }


def test_plaintext_minimum_and_default_mechanism() -> None:
    assert to_kafka_python_kwargs({"bootstrap.servers": "h:1"}) == {"bootstrap_servers": ["h:1"]}
    kwargs = to_kafka_python_kwargs(
        {
            "bootstrap.servers": "h:1",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.username": "u",
            "sasl.password": "p",
        }
    )
    assert kwargs["sasl_mechanism"] == "PLAIN"


@pytest.mark.parametrize(
    ("extra", "field_fragment", "rule_fragment"),
    [
        ({}, "bootstrap.servers", "required"),
        ({"bootstrap.servers": " , "}, "bootstrap.servers", "at least one"),
        ({"bootstrap.servers": "h:1", "security.protocol": "TLS"}, "security.protocol", "one of"),
        ({"bootstrap.servers": "h:1", "sasl.mechanism": "OAUTHBEARER"}, "sasl.mechanism", "token callback"),
        (
            {"bootstrap.servers": "h:1", "ssl.keystore.location": "/k.p12"},
            "ssl.keystore.location",
            "not supported",
        ),
        (
            {"bootstrap.servers": "h:1", "sasl.oauthbearer.method": "oidc"},
            "sasl.oauthbearer.method",
            "not supported",
        ),
        ({"bootstrap.servers": "h:1", "security.protocol": "SASL_SSL"}, "sasl.username", "required"),
        (
            {"bootstrap.servers": "h:1", "sasl.username": "u"},
            "security.protocol",
            "SASL_PLAINTEXT or SASL_SSL",
        ),
        ({"bootstrap.servers": "h:1", "request.timeout.ms": "soon"}, "request.timeout.ms", "integer"),
    ],
)
def test_bad_extras_are_refused_clearly(extra: dict, field_fragment: str, rule_fragment: str) -> None:
    with pytest.raises(SubscriptionValidationError) as caught:
        to_kafka_python_kwargs(extra)
    assert field_fragment in caught.value.field
    assert rule_fragment in caught.value.rule
    assert "s3cret" not in str(caught.value)


def test_redaction_hides_secrets_only() -> None:
    extra = {
        "bootstrap.servers": "h:1",
        "sasl.username": "alice",
        "sasl.password": "s3cret",
        "ssl.key.password": "k",
    }
    assert redact(extra) == {
        "bootstrap.servers": "h:1",
        "sasl.username": "alice",
        "sasl.password": "***",
        "ssl.key.password": "***",
    }
    assert sorted(secret_values(extra)) == ["k", "s3cret"]


def test_java_properties_command_config() -> None:
    text = """
# admin.properties
security.protocol=SASL_PLAINTEXT
sasl.mechanism: PLAIN
! another comment
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\
    username="admin" password="admin-secret";
"""
    properties = read_java_properties(text)
    assert properties["security.protocol"] == "SASL_PLAINTEXT"
    assert properties["sasl.mechanism"] == "PLAIN"
    extra = java_client_properties_to_extra(properties)
    assert extra["sasl.username"] == "admin"
    assert extra["sasl.password"] == "admin-secret"
    assert "sasl.jaas.config" not in extra
