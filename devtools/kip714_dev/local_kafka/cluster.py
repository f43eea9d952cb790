"""Handles on a running local cluster for Python callers (the pytest fixtures, the demo, benchmarks).

``LocalKafkaCluster`` is one or more brokers (``brokers.py``); the single-broker attributes (``pid``,
``node_id``, ``log_path``, ``settings``, ``state``) are those of its first node, so callers written for
one broker work unchanged. ``kill`` and ``start_node`` are how tests and the demo fail a broker.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.broker_config import BrokerSettings, DataDirLayout
from kip714_dev.local_kafka.brokers import await_formed, start_cluster, stop_together
from kip714_dev.local_kafka.launcher import (
    DEFAULT_READY_TIMEOUT_S,
    DEFAULT_STOP_TIMEOUT_S,
    BrokerNotReadyError,
    StopOutcome,
    broker_status,
    start_broker,
    stop_broker,
)
from kip714_dev.local_kafka.process_control import is_our_broker, wait_for_exit
from kip714_dev.local_kafka.state import LocalKafkaState
from kip714_dev.local_kafka.tls import ca_location


@dataclass
class LocalBroker:
    """One node: its settings, the state it reported when it became ready, and whether it is stopped."""

    settings: BrokerSettings
    state: LocalKafkaState
    stopped: bool = field(default=False)

    @property
    def node_id(self) -> int:
        return self.state.node_id

    @property
    def pid(self) -> int:
        return self.state.pid

    @property
    def data_dir(self) -> Path:
        return Path(self.state.data_dir)

    def is_running(self) -> bool:
        try:
            return broker_status(self.data_dir) is not None
        except BrokerNotReadyError:
            return False

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> StopOutcome:
        outcome = stop_broker(self.data_dir, timeout_s)
        self.stopped = True
        return outcome

    def kill(self) -> None:
        """SIGKILL, as a crashed machine would: no clean shutdown, no controlled leader moves."""
        layout = DataDirLayout(self.data_dir)
        if is_our_broker(self.pid, layout.server_properties):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            if not wait_for_exit(self.pid, 10):
                raise LocalKafkaError(f"broker pid {self.pid} survived SIGKILL; check the machine")
        layout.pid_file.unlink(missing_ok=True)
        layout.state_file.unlink(missing_ok=True)
        self.stopped = True

    def start(self, *, ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> None:
        """Start again on the same ports and storage (not formatted again)."""
        self.state = start_broker(self.settings, ready_timeout_s=ready_timeout_s).state
        self.stopped = False


@dataclass
class LocalKafkaCluster:
    """A running local Kafka of one or more brokers: where to reach it, how to stop, fail or restart it."""

    brokers: list[LocalBroker]
    root: Path

    @classmethod
    def start(
        cls,
        settings: BrokerSettings | Sequence[BrokerSettings],
        *,
        ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
        repair_cache: bool = True,
    ) -> LocalKafkaCluster:
        members = [settings] if isinstance(settings, BrokerSettings) else list(settings)
        started = start_cluster(members, ready_timeout_s=ready_timeout_s, repair_cache=repair_cache)
        brokers = [
            LocalBroker(settings=replace(member, data_dir=Path(node.state.data_dir)), state=node.state)
            for member, node in zip(members, started, strict=True)
        ]
        root = brokers[0].data_dir if len(brokers) == 1 else brokers[0].data_dir.parent
        return cls(brokers=brokers, root=root)

    # ---- the first node, for callers written for one broker ------------------------------------

    @property
    def settings(self) -> BrokerSettings:
        return self.brokers[0].settings

    @property
    def state(self) -> LocalKafkaState:
        return self.brokers[0].state

    @property
    def pid(self) -> int:
        return self.brokers[0].pid

    @property
    def node_id(self) -> int:
        return self.brokers[0].node_id

    @property
    def log_path(self) -> Path:
        return Path(self.brokers[0].state.log_path)

    # ---- the cluster ---------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """Every node's PLAINTEXT listener (clients find the live ones)."""
        return ",".join(broker.state.bootstrap_servers for broker in self.brokers)

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        servers = [b.state.sasl_bootstrap_servers for b in self.brokers if b.state.sasl_bootstrap_servers]
        return ",".join(servers) if servers else None

    @property
    def sasl_users(self) -> dict[str, str]:
        return dict(self.settings.sasl_users)

    @property
    def kafka_version(self) -> str:
        return self.state.kafka_version

    @property
    def data_dir(self) -> Path:
        return self.root

    @property
    def stopped(self) -> bool:
        return all(broker.stopped for broker in self.brokers)

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

    def broker(self, node_id: int) -> LocalBroker:
        for broker in self.brokers:
            if broker.node_id == node_id:
                return broker
        raise LocalKafkaError(f"node_id: no broker {node_id} in this cluster ({self.node_ids})")

    @property
    def node_ids(self) -> list[int]:
        return [broker.node_id for broker in self.brokers]

    def client_config(self, sasl_user: str | None = None, **extra: Any) -> dict[str, Any]:
        """confluent-kafka settings for the PLAINTEXT listeners, or SASL/PLAIN as ``sasl_user`` (over TLS,
        trusting the cluster's certificate, when it was started with ``tls``)."""
        config: dict[str, Any] = {"bootstrap.servers": self.bootstrap_servers}
        if sasl_user is not None:
            if self.sasl_bootstrap_servers is None or sasl_user not in self.settings.sasl_users:
                raise LocalKafkaError(f"sasl_user: {sasl_user!r} is not a SASL user of this cluster")
            config = {
                "bootstrap.servers": self.sasl_bootstrap_servers,
                "security.protocol": self.settings.sasl_listener,
                "sasl.mechanism": "PLAIN",
                "sasl.username": sasl_user,
                "sasl.password": self.settings.sasl_users[sasl_user],
            }
            if self.settings.tls_keystore is not None:
                config["ssl.ca.location"] = str(ca_location(self.settings.tls_keystore))
        config.update(extra)
        return config

    def is_running(self) -> bool:
        return all(broker.is_running() for broker in self.brokers)

    def kill(self, node_id: int) -> LocalBroker:
        """SIGKILL one node (the others keep serving); ``start_node`` brings it back."""
        broker = self.broker(node_id)
        broker.kill()
        return broker

    def start_node(self, node_id: int, *, ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> None:
        """Start a stopped node again; returns once every running node's metadata lists it."""
        self.broker(node_id).start(ready_timeout_s=ready_timeout_s)
        running = [broker.settings for broker in self.brokers if not broker.stopped]
        if len(running) > 1:
            await_formed(running, ready_timeout_s)

    def stop(self, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> StopOutcome:
        """Stop every running node at once; returns the first node's outcome."""
        running = [broker for broker in self.brokers if not broker.stopped]
        outcomes = stop_together([broker.data_dir for broker in running], timeout_s)
        for broker in running:
            broker.stopped = True
        first = [o for broker, o in zip(running, outcomes, strict=True) if broker is self.brokers[0]]
        return first[0] if first else StopOutcome(was_running=False, killed=False, pid=None)

    def restart(self, *, ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> None:
        """Stop and start every node again on the same ports and storage (not formatted again)."""
        self.stop()
        started = start_cluster([broker.settings for broker in self.brokers], ready_timeout_s=ready_timeout_s)
        for broker, node in zip(self.brokers, started, strict=True):
            broker.state, broker.stopped = node.state, False
