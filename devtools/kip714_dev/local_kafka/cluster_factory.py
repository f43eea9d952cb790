"""Starting throw-away local clusters on free ports (pytest fixtures, benchmarks) and stopping them all."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.broker_config import BrokerSettings
from kip714_dev.local_kafka.brokers import cluster_settings
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.plugin_jar import PLUGIN_JAR_ENV, default_plugin_jar
from kip714_dev.local_kafka.ports import PortInUseError, free_ports
from kip714_dev.local_kafka.tls import make_keystore
from kip714_dev.local_kafka.versions import DEFAULT_KAFKA_VERSION, KafkaVersion

log = logging.getLogger(__name__)

REQUIRE_PLUGIN_ENV: Final = "KIP714_REQUIRE_PLUGIN"
TEST_SASL_USERS: Final[Mapping[str, str]] = {"alice": "alice-secret"}
TEST_BROKER_METRICS_INTERVAL_MS: Final = 5_000
PORT_ATTEMPTS: Final = 3


class LocalKafkaClusterFactory:
    """Starts clusters in numbered folders under ``base_dir``; ``stop_all`` stops every one it started."""

    def __init__(self, base_dir: Path | None = None) -> None:
        self.base_dir = base_dir or Path(tempfile.mkdtemp(prefix="kip714-kafka-"))
        self.clusters: list[LocalKafkaCluster] = []

    def start(
        self,
        *,
        kafka_version: str = DEFAULT_KAFKA_VERSION,
        sasl_users: Mapping[str, str] = TEST_SASL_USERS,
        overrides: Mapping[str, str] | None = None,
        telemetry_max_bytes: int | None = None,
        telemetry_topic: str = DEFAULT_TELEMETRY_TOPIC,
        broker_metrics_interval_ms: int = TEST_BROKER_METRICS_INTERVAL_MS,
        with_plugin: bool = True,
        node_id: int = 1,
        name: str | None = None,
        brokers: int = 1,
        tls: bool = False,
    ) -> LocalKafkaCluster:
        """Start one more cluster of ``brokers`` nodes on fresh free ports; the plugin jar is loaded
        when built. ``tls``: the SASL listener speaks SASL_SSL (a throwaway certificate, ``tls.py``)."""
        plugin_jar = self._plugin_jar() if with_plugin else None
        data_dir = self.base_dir / (name or f"kafka-{kafka_version}-{len(self.clusters) + 1}")
        tls_keystore = make_keystore(data_dir / "tls") if tls else None
        for attempt in range(1, PORT_ATTEMPTS + 1):
            ports = free_ports(3 * brokers)
            node_ports = [tuple(ports[3 * k : 3 * k + 3]) for k in range(brokers)]
            port, controller_port, sasl_port = node_ports[0]
            settings = BrokerSettings(
                data_dir=data_dir,
                kafka_version=KafkaVersion.parse(kafka_version),
                port=port,
                controller_port=controller_port,
                sasl_port=sasl_port,
                node_id=node_id,
                sasl_users=dict(sasl_users),
                telemetry_max_bytes=telemetry_max_bytes,
                telemetry_topic=telemetry_topic,
                broker_metrics_interval_ms=broker_metrics_interval_ms,
                plugin_jar=plugin_jar,
                overrides=dict(overrides or {}),
                tls_keystore=tls_keystore,
            )
            try:
                cluster = LocalKafkaCluster.start(cluster_settings(settings, brokers, node_ports))
            except PortInUseError:
                # Another process took a port between picking and binding; pick again.
                if attempt == PORT_ATTEMPTS:
                    raise
                continue
            self.clusters.append(cluster)
            return cluster
        raise AssertionError("unreachable")

    @staticmethod
    def _plugin_jar() -> Path | None:
        jar = default_plugin_jar()
        if jar is not None and jar.is_file():
            return jar
        if os.environ.get(REQUIRE_PLUGIN_ENV) == "1":
            raise LocalKafkaError(
                f"{REQUIRE_PLUGIN_ENV}=1 but the broker plugin jar is not built "
                f"(run `make plugin` or set {PLUGIN_JAR_ENV})"
            )
        log.warning("broker plugin jar not built: the test cluster runs without it and clients will not push")
        return None

    def stop_all(self) -> None:
        """Stop every cluster this factory started, newest first; one failure does not skip the rest."""
        errors: list[str] = []
        for cluster in reversed(self.clusters):
            if cluster.stopped:
                continue
            try:
                cluster.stop()
            except LocalKafkaError as err:
                errors.append(str(err))
        self.clusters.clear()
        if errors:
            raise LocalKafkaError("; ".join(errors))

    def __enter__(self) -> LocalKafkaClusterFactory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        with contextlib.suppress(LocalKafkaError):
            self.stop_all()
