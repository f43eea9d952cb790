"""A handle on a running local broker for Python callers (the pytest fixtures, the demo, benchmarks)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.broker_config import BrokerSettings
from kip714_dev.local_kafka.launcher import (
    DEFAULT_READY_TIMEOUT_S,
    DEFAULT_STOP_TIMEOUT_S,
    BrokerNotReadyError,
    StopOutcome,
    broker_status,
    start_broker,
    stop_broker,
)
from kip714_dev.local_kafka.state import LocalKafkaState


@dataclass
class LocalKafkaCluster:
    """One running single-node Kafka: where to reach it, where it logs, and how to stop or restart it."""

    settings: BrokerSettings
    state: LocalKafkaState
    stopped: bool = field(default=False)

    @classmethod
    def start(
        cls,
        settings: BrokerSettings,
        *,
        ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
        repair_cache: bool = True,
    ) -> LocalKafkaCluster:
        started = start_broker(settings, ready_timeout_s=ready_timeout_s, repair_cache=repair_cache)
        return cls(settings=replace(settings, data_dir=Path(started.state.data_dir)), state=started.state)

    @property
    def bootstrap_servers(self) -> str:
        return self.state.bootstrap_servers

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        return self.state.sasl_bootstrap_servers

    @property
    def sasl_users(self) -> dict[str, str]:
        return dict(self.settings.sasl_users)

    @property
    def kafka_version(self) -> str:
        return self.state.kafka_version

    @property
    def data_dir(self) -> Path:
        return Path(self.state.data_dir)

    @property
    def log_path(self) -> Path:
        return Path(self.state.log_path)

    @property
    def pid(self) -> int:
        return self.state.pid

    @property
    def node_id(self) -> int:
        return self.state.node_id

    @property
    def telemetry_topic(self) -> str:
        return self.state.telemetry_topic

    @property
    def plugin_jar(self) -> Path | None:
        return None if self.state.plugin_jar is None else Path(self.state.plugin_jar)

    @property
    def plugin_loaded(self) -> bool:
        """True when the KIP-714 broker plugin is on the classpath and configured as a metric reporter."""
        return self.plugin_jar is not None

    def client_config(self, sasl_user: str | None = None, **extra: Any) -> dict[str, Any]:
        """confluent-kafka settings for the PLAINTEXT listener, or SASL/PLAIN as ``sasl_user``."""
        config: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers}
        if sasl_user is not None:
            if self.sasl_bootstrap_servers is None or sasl_user not in self.settings.sasl_users:
                raise LocalKafkaError(f"sasl_user: {sasl_user!r} is not a SASL user of this cluster")
            config = {
                "bootstrap.servers": self.sasl_bootstrap_servers,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": sasl_user,
                "sasl.password": self.settings.sasl_users[sasl_user],
            }
        config.update(extra)
        return config

    def is_running(self) -> bool:
        try:
            return broker_status(self.data_dir) is not None
        except BrokerNotReadyError:
            return False

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> StopOutcome:
        outcome = stop_broker(self.data_dir, timeout_s)
        self.stopped = True
        return outcome

    def restart(self, *, ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> None:
        """Stop and start again on the same ports and storage (not formatted again)."""
        self.stop()
        started = start_broker(self.settings, ready_timeout_s=ready_timeout_s)
        self.state = started.state
        self.stopped = False
