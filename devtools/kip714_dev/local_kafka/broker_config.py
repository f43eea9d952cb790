"""What the local broker is asked to be, checked up front, and rendered as Kafka configuration files.

Every node runs KRaft combined mode (``process.roles=broker,controller``) with a static voter set:
one voter for a single broker, every node for ``--brokers N`` (3 voters survive one node's death),
so the same ``server.properties`` and storage format work on Kafka 3.7+ and 4.x. Every listener
binds 127.0.0.1. Optional SASL/PLAIN listener gives clients real principals (over TLS with a
keystore: SASL_SSL). Internal topics get
``min(3, N)`` replicas.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.tls import KEYSTORE_PASSWORD as TLS_KEYSTORE_PASSWORD
from kip714_dev.local_kafka.versions import KafkaVersion, LoggingBackend

LOOPBACK_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 9092
DEFAULT_CONTROLLER_PORT: Final = 9093
DEFAULT_SASL_PORT: Final = 9094
DEFAULT_NODE_ID: Final = 1
DEFAULT_BROKER_METRICS_INTERVAL_MS: Final = 30_000

PLAINTEXT_LISTENER: Final = "PLAINTEXT"
SASL_LISTENER: Final = "SASL_PLAINTEXT"
SASL_SSL_LISTENER: Final = "SASL_SSL"
CONTROLLER_LISTENER: Final = "CONTROLLER"

DATA_DIR_ENV: Final = "KIP714_LOCAL_KAFKA_DIR"

_USER_NAME: Final = re.compile(r"^[A-Za-z0-9._-]+$")
_CONFIG_KEY: Final = re.compile(r"^[A-Za-z0-9._-]+$")

# Keys the launcher owns: overriding them would break the listeners, the quorum or the storage layout.
RESERVED_KEYS: Final = frozenset(
    {
        "process.roles",
        "node.id",
        "listeners",
        "advertised.listeners",
        "controller.listener.names",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "inter.broker.listener.name",
        "listener.security.protocol.map",
        "log.dirs",
        "metadata.log.dir",
    }
)


def default_data_dir() -> Path:
    """``$KIP714_LOCAL_KAFKA_DIR`` or ``$XDG_STATE_HOME/kip714/local-kafka`` (``~/.local/state/...``)."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    state_home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state_home) / "kip714" / "local-kafka"


def parse_sasl_users(text: str) -> dict[str, str]:
    """Parse ``user:password,...``; names are plain tokens, passwords must be non-empty."""
    users: dict[str, str] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, separator, password = entry.partition(":")
        if not separator:
            raise LocalKafkaError(f"--sasl-users: each entry must be user:password, got {entry!r}")
        if not _USER_NAME.match(name):
            raise LocalKafkaError(
                f"--sasl-users: user name must use letters, digits, '.', '_' or '-', got {name!r}"
            )
        if not password:
            raise LocalKafkaError(f"--sasl-users: user {name!r} needs a non-empty password")
        if '"' in password or "\\" in password or "\n" in password:
            raise LocalKafkaError(
                f"--sasl-users: password of {name!r} must not contain quotes, backslashes or newlines"
            )
        if name in users:
            raise LocalKafkaError(f"--sasl-users: user {name!r} is listed twice")
        users[name] = password
    if not users:
        raise LocalKafkaError("--sasl-users: give at least one user:password")
    return users


def parse_overrides(entries: Iterable[str]) -> dict[str, str]:
    """Parse repeated ``--override key=value``; keys the launcher owns are refused."""
    overrides: dict[str, str] = {}
    for entry in entries:
        key, separator, value = entry.partition("=")
        key = key.strip()
        if not separator or not key:
            raise LocalKafkaError(f"--override: must be key=value, got {entry!r}")
        if not _CONFIG_KEY.match(key):
            raise LocalKafkaError(
                f"--override: key must be a Kafka config name (letters, digits, '.', '_', '-'), got {key!r}"
            )
        if key in RESERVED_KEYS:
            raise LocalKafkaError(
                f"--override: {key} is set by the launcher "
                "(use --port/--controller-port/--node-id/--data-dir)"
            )
        if "\n" in value:
            raise LocalKafkaError(f"--override: value of {key} must be a single line")
        overrides[key] = value.strip()
    return overrides


def _check_port(name: str, port: int) -> None:
    if not 1 <= port <= 65535:
        raise LocalKafkaError(f"{name}: must be a TCP port between 1 and 65535, got {port}")


@dataclass(frozen=True)
class BrokerSettings:
    """Everything that shapes one local broker; ``validate`` runs on construction."""

    data_dir: Path
    kafka_version: KafkaVersion
    port: int = DEFAULT_PORT
    controller_port: int = DEFAULT_CONTROLLER_PORT
    sasl_port: int = DEFAULT_SASL_PORT
    node_id: int = DEFAULT_NODE_ID
    sasl_users: Mapping[str, str] = field(default_factory=dict)
    telemetry_max_bytes: int | None = None
    telemetry_topic: str = DEFAULT_TELEMETRY_TOPIC
    broker_metrics_interval_ms: int = DEFAULT_BROKER_METRICS_INTERVAL_MS
    plugin_jar: Path | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    # PKCS12 keystore (``tls.make_keystore``): the SASL listener speaks SASL_SSL instead of SASL_PLAINTEXT.
    tls_keystore: Path | None = None
    # Every node of the cluster as (node id, controller port, PLAINTEXT port); empty: this node alone.
    cluster_nodes: tuple[tuple[int, int, int], ...] = ()

    def __post_init__(self) -> None:
        _check_port("--port", self.port)
        _check_port("--controller-port", self.controller_port)
        if self.sasl_users:
            _check_port("--sasl-port", self.sasl_port)
        ports = [self.port, self.controller_port] + ([self.sasl_port] if self.sasl_users else [])
        if len(set(ports)) != len(ports):
            raise LocalKafkaError(f"--port/--controller-port/--sasl-port: must be distinct, got {ports}")
        if self.node_id < 0:
            raise LocalKafkaError(f"--node-id: must be 0 or more, got {self.node_id}")
        if self.telemetry_max_bytes is not None and self.telemetry_max_bytes < 1:
            raise LocalKafkaError(
                f"--telemetry-max-bytes: must be a positive byte count, got {self.telemetry_max_bytes}"
            )
        if self.broker_metrics_interval_ms < 100:
            raise LocalKafkaError(
                f"--broker-metrics-interval-ms: must be at least 100, got {self.broker_metrics_interval_ms}"
            )
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", self.telemetry_topic):
            raise LocalKafkaError(
                f"--telemetry-topic: must be a legal Kafka topic name (letters, digits, '.', '_', '-'), "
                f"got {self.telemetry_topic!r}"
            )
        if self.tls_keystore is not None and not self.sasl_users:
            raise LocalKafkaError("tls_keystore: TLS is served on the SASL listener; give SASL users too")
        for key in self.overrides:
            if key in RESERVED_KEYS:
                raise LocalKafkaError(f"--override: {key} is set by the launcher")
        if self.cluster_nodes and self.node_id not in {node for node, _, _ in self.cluster_nodes}:
            raise LocalKafkaError(f"--node-id: {self.node_id} is not one of the cluster's nodes")

    @property
    def nodes(self) -> tuple[tuple[int, int, int], ...]:
        """(node id, controller port, PLAINTEXT port) of every node, this one included."""
        return self.cluster_nodes or ((self.node_id, self.controller_port, self.port),)

    @property
    def cluster_bootstrap_servers(self) -> str:
        return ",".join(f"{LOOPBACK_HOST}:{port}" for _, _, port in self.nodes)

    @property
    def replication_factor(self) -> int:
        """Replicas of internal topics: survives one node's death from 2 nodes on, never more than 3."""
        return min(3, len(self.nodes))

    @property
    def bootstrap_servers(self) -> str:
        return f"{LOOPBACK_HOST}:{self.port}"

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        return f"{LOOPBACK_HOST}:{self.sasl_port}" if self.sasl_users else None

    @property
    def sasl_listener(self) -> str:
        """Name and security protocol of the SASL listener: SASL_SSL with a keystore, else SASL_PLAINTEXT."""
        return SASL_SSL_LISTENER if self.tls_keystore is not None else SASL_LISTENER

    @property
    def ports(self) -> dict[str, int]:
        named = {"--port": self.port, "--controller-port": self.controller_port}
        if self.sasl_users:
            named["--sasl-port"] = self.sasl_port
        return named


@dataclass(frozen=True)
class DataDirLayout:
    """Where one broker keeps its files inside ``--data-dir``."""

    root: Path

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def server_properties(self) -> Path:
        return self.config_dir / "server.properties"

    @property
    def logging_config(self) -> Path:
        return self.config_dir / "logging.properties"

    @property
    def log_dirs(self) -> Path:
        return self.root / "kraft-logs"

    @property
    def plugin_dir(self) -> Path:
        return self.root / "plugin"

    @property
    def meta_properties(self) -> Path:
        return self.log_dirs / "meta.properties"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def server_log(self) -> Path:
        return self.logs_dir / "server.log"

    @property
    def console_log(self) -> Path:
        return self.logs_dir / "kafka.out"

    @property
    def pid_file(self) -> Path:
        return self.root / "kafka.pid"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def formatted_marker(self) -> Path:
        """Records which Kafka version formatted the storage (a different one may not read it)."""
        return self.root / "formatted-with-version"


def broker_properties(settings: BrokerSettings, layout: DataDirLayout) -> dict[str, str]:
    """The broker's configuration, in file order: launcher-owned keys, defaults, plugin, overrides."""
    listeners = [f"{PLAINTEXT_LISTENER}://{settings.bootstrap_servers}"]
    protocol_map = [f"{CONTROLLER_LISTENER}:PLAINTEXT", f"{PLAINTEXT_LISTENER}:PLAINTEXT"]
    if settings.sasl_users:
        listeners.append(f"{settings.sasl_listener}://{settings.sasl_bootstrap_servers}")
        protocol_map.append(f"{settings.sasl_listener}:{settings.sasl_listener}")
    advertised = ",".join(listeners)
    controller = f"{CONTROLLER_LISTENER}://{LOOPBACK_HOST}:{settings.controller_port}"
    voters = ",".join(f"{node}@{LOOPBACK_HOST}:{port}" for node, port, _ in settings.nodes)
    replicas = str(settings.replication_factor)
    min_isr = str(max(1, settings.replication_factor - 1))
    properties: dict[str, str] = {
        "process.roles": "broker,controller",
        "node.id": str(settings.node_id),
        "controller.quorum.voters": voters,
        "listeners": f"{advertised},{controller}",
        "advertised.listeners": advertised,
        "controller.listener.names": CONTROLLER_LISTENER,
        "inter.broker.listener.name": PLAINTEXT_LISTENER,
        "listener.security.protocol.map": ",".join(protocol_map),
        "log.dirs": str(layout.log_dirs),
        "num.partitions": "3",
        "auto.create.topics.enable": "true",
        "default.replication.factor": replicas,
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": min_isr,
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "3",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "log.retention.hours": "168",
        "log.segment.bytes": str(64 * 1024 * 1024),
    }
    if settings.sasl_users:
        jaas_users = " ".join(f'user_{name}="{password}"' for name, password in settings.sasl_users.items())
        listener_prefix = f"listener.name.{settings.sasl_listener.lower()}"
        properties["sasl.enabled.mechanisms"] = "PLAIN"
        properties[f"{listener_prefix}.plain.sasl.jaas.config"] = (
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {jaas_users};"
        )
        if settings.tls_keystore is not None:
            properties[f"{listener_prefix}.ssl.keystore.type"] = "PKCS12"
            properties[f"{listener_prefix}.ssl.keystore.location"] = str(settings.tls_keystore)
            properties[f"{listener_prefix}.ssl.keystore.password"] = TLS_KEYSTORE_PASSWORD
            properties[f"{listener_prefix}.ssl.key.password"] = TLS_KEYSTORE_PASSWORD
    if settings.telemetry_max_bytes is not None:
        properties["telemetry.max.bytes"] = str(settings.telemetry_max_bytes)
    if settings.plugin_jar is not None:
        properties["metric.reporters"] = settings.kafka_version.plugin_class
        properties["kip714.topic"] = settings.telemetry_topic
        properties["kip714.broker.metrics.interval.ms"] = str(settings.broker_metrics_interval_ms)
        properties["kip714.bootstrap.servers"] = settings.cluster_bootstrap_servers
        # Explicit, as production should set it: the first node up would otherwise see one live broker.
        properties["kip714.topic.replication.factor"] = replicas
    properties.update(settings.overrides)
    return properties


def render_properties(properties: Mapping[str, str]) -> str:
    """Java properties text; values are escaped so backslashes and leading spaces survive."""
    lines = ["# Written by `kip714 local-kafka start`; regenerated on every start."]
    for key, value in properties.items():
        escaped = value.replace("\\", "\\\\")
        if escaped.startswith(" "):
            escaped = "\\" + escaped
        lines.append(f"{key}={escaped}")
    return "\n".join(lines) + "\n"


def render_logging_config(backend: LoggingBackend, server_log: Path) -> str:
    """Logging config that sends the broker's logs to ``server_log`` (log4j2 for 4.x, log4j 1 for 3.x)."""
    pattern = "[%d] %p %m (%c)%n"
    quiet_loggers = {
        "kafka.request.logger": "WARN",
        "state.change.logger": "WARN",
        "kafka.controller": "INFO",
    }
    if backend is LoggingBackend.LOG4J2:
        lines = [
            "status = warn",
            "shutdownHook = disable",  # keep logging through Kafka's own shutdown sequence
            "appender.file.type = File",
            "appender.file.name = FILE",
            f"appender.file.fileName = {server_log}",
            "appender.file.layout.type = PatternLayout",
            f"appender.file.layout.pattern = {pattern}",
            "rootLogger.level = INFO",
            "rootLogger.appenderRef.file.ref = FILE",
        ]
        for index, (name, level) in enumerate(quiet_loggers.items()):
            lines += [f"logger.quiet{index}.name = {name}", f"logger.quiet{index}.level = {level}"]
        return "\n".join(lines) + "\n"
    lines = [
        "log4j.rootLogger=INFO, file",
        "log4j.appender.file=org.apache.log4j.FileAppender",
        f"log4j.appender.file.File={server_log}",
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.file.layout.ConversionPattern={pattern}",
    ]
    lines += [f"log4j.logger.{name}={level}" for name, level in quiet_loggers.items()]
    return "\n".join(lines) + "\n"


def logging_system_property(backend: LoggingBackend, config_path: Path) -> str:
    """The JVM flag that points the backend at its config file."""
    if backend is LoggingBackend.LOG4J2:
        return f"-Dlog4j2.configurationFile={config_path}"
    return f"-Dlog4j.configuration=file:{config_path}"
