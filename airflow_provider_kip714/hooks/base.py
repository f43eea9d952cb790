"""``Kip714KafkaBaseHook``: one place that turns an Airflow connection into client config, secrets masked.

As the apache-kafka provider's ``KafkaBaseHook``: the connection is a ``kafka`` connection whose JSON
extra is the librdkafka config (``kafka_default`` by default). Hooks that talk to Kafka derive from
it, whatever client they build from that config (confluent-kafka for the telemetry topic,
kafka-python for CLIENT_METRICS admin). Tests and the CLI pass ``config`` instead of a connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import BaseHook

from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.subscriptions.kafka_python_config import secret_values

DEFAULT_CONN_ID = "kafka_default"


class Kip714KafkaBaseHook(BaseHook):
    """Connection (or explicit ``config``) -> librdkafka-style config, with its secrets masked in logs.

    :param kafka_config_id: Airflow connection whose extra is the librdkafka config.
    :param config: use this librdkafka-style dict instead of a connection (CLI, tests).
    """

    conn_name_attr = "kafka_config_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "kafka"

    def __init__(
        self, kafka_config_id: str = DEFAULT_CONN_ID, config: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__()
        self.kafka_config_id = kafka_config_id
        self._explicit_config = dict(config) if config is not None else None

    @property
    def config_source(self) -> str:
        """Where the config comes from, for error messages."""
        return "config" if self._explicit_config is not None else f"connection {self.kafka_config_id!r}"

    def client_config(self, *, require_bootstrap: bool = True) -> dict[str, Any]:
        """A fresh copy of the librdkafka-style config; every secret in it is masked in task logs."""
        if self._explicit_config is not None:
            config = dict(self._explicit_config)
        else:
            config = dict(self.get_connection(self.kafka_config_id).extra_dejson)
        mask_secrets(config)
        if require_bootstrap and not config.get("bootstrap.servers"):
            raise Kip714Error(f"bootstrap.servers: must be set in the {self.config_source} extra")
        return config


def mask_secrets(config: Mapping[str, Any]) -> None:
    """Register every secret value of ``config`` with Airflow's log masker."""
    values = secret_values(config)
    if not values:
        return
    from airflow.sdk.log import mask_secret

    for value in values:
        mask_secret(value)
