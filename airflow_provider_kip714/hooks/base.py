"""``Kip714KafkaBaseHook``: one place that turns an Airflow connection into client config, secrets masked.

As the apache-kafka provider's ``KafkaBaseHook``: the connection is a ``kafka`` connection whose JSON
extra is the librdkafka config (``kafka_default`` by default). Hooks that talk to Kafka derive from
it, whatever client they build from that config (confluent-kafka for the telemetry topic,
kafka-python for CLIENT_METRICS admin). Tests and the CLI pass ``config`` instead of a connection.

One lifetime for every hook: the connection is looked up once, the client is created on the first
``get_conn`` and kept until ``close()`` (the hook is a context manager that closes it).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, Self

from airflow.sdk import BaseHook

from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.settings import DEFAULT_KAFKA_CONN_ID
from airflow_provider_kip714.subscriptions.kafka_python_config import secret_values

DEFAULT_CONN_ID = DEFAULT_KAFKA_CONN_ID


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
        self._client: Any = None

    @property
    def config_source(self) -> str:
        """Where the config comes from, for error messages."""
        return "config" if self._explicit_config is not None else f"connection {self.kafka_config_id!r}"

    @cached_property
    def _config(self) -> dict[str, Any]:
        """The librdkafka-style config, the connection looked up once; its secrets masked in task logs."""
        if self._explicit_config is not None:
            config = dict(self._explicit_config)
        else:
            config = dict(self.get_connection(self.kafka_config_id).extra_dejson)
        mask_secrets(config)
        return config

    def client_config(self, *, require_bootstrap: bool = True) -> dict[str, Any]:
        """A fresh copy of the librdkafka-style config (the caller may add to it)."""
        config = dict(self._config)
        if require_bootstrap and not config.get("bootstrap.servers"):
            raise Kip714Error(f"bootstrap.servers: must be set in the {self.config_source} extra")
        return config

    # ---- the client's lifetime -------------------------------------------------------------------

    def _create_client(self) -> Any:
        """The hook's client, built from ``client_config()``; each hook says which."""
        raise NotImplementedError

    def get_conn(self) -> Any:
        """The hook's client: created on first use and kept, one per hook, until ``close()``."""
        if self._client is None:
            self._client = self._create_client()
        return self._client

    def close(self) -> None:
        """Close the client if one was created; a later ``get_conn`` creates a new one."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def mask_secrets(config: Mapping[str, Any]) -> None:
    """Register every secret value of ``config`` with Airflow's log masker."""
    values = secret_values(config)
    if not values:
        return
    from airflow.sdk.log import mask_secret

    for value in values:
        mask_secret(value)
