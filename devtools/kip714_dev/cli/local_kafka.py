"""``kip714 local-kafka install|start|stop|status``: a real Apache Kafka on 127.0.0.1, one or more brokers."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from airflow_provider_kip714.cli.arguments import ascii_int
from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from kip714_dev.cli import service_commands as service
from kip714_dev.cli.options import data_dir, port, seconds
from kip714_dev.local_kafka.broker_config import (
    DEFAULT_BROKER_METRICS_INTERVAL_MS,
    DEFAULT_CONTROLLER_PORT,
    DEFAULT_NODE_ID,
    DEFAULT_PORT,
    DEFAULT_SASL_PORT,
    BrokerSettings,
    default_data_dir,
    parse_overrides,
    parse_sasl_users,
)
from kip714_dev.local_kafka.brokers import cluster_settings, cluster_status, start_cluster, stop_cluster
from kip714_dev.local_kafka.distribution import ensure_distribution
from kip714_dev.local_kafka.launcher import (
    DEFAULT_READY_TIMEOUT_S,
    DEFAULT_STOP_TIMEOUT_S,
    BrokerNotReadyError,
    check_plugin_jar,
)
from kip714_dev.local_kafka.plugin_jar import default_plugin_jar
from kip714_dev.local_kafka.state import LocalKafkaState
from kip714_dev.local_kafka.versions import DEFAULT_KAFKA_VERSION, KafkaVersion

log = logging.getLogger(__name__)


def register(subparsers: service.SubParsers) -> None:
    commands = service.add_group(
        subparsers,
        "local-kafka",
        help="run a real Apache Kafka (KRaft, one or more brokers) on 127.0.0.1",
        description="Run a real Apache Kafka (KRaft combined mode, 1 to 9 brokers) from Maven Central jars.",
    )
    install = commands.add_parser("install", help="resolve Kafka's jars into the cache (no broker started)")
    _add_version_option(install)
    install.set_defaults(func=run_install)
    start, stop = service.add_lifecycle(
        commands,
        data_dir_option=_add_data_dir_option,
        helps=(
            "start the broker in the background and wait until it answers",
            "exit 0 when every broker runs, 3 when one does not",
            "stop every broker cleanly (SIGTERM, SIGKILL only after a timeout)",
        ),
        run=(run_start, run_status, run_stop),
    )
    _add_version_option(start)
    _add_listener_options(start)
    _add_plugin_options(start)
    start.add_argument(
        "--ready-timeout",
        type=seconds(),
        default=DEFAULT_READY_TIMEOUT_S,
        help="seconds to wait for the broker",
    )
    start.add_argument(
        "--repair-cache",
        action="store_true",
        help="re-resolve a damaged jar cache instead of refusing to start",
    )
    stop.add_argument(
        "--timeout",
        type=seconds(),
        default=DEFAULT_STOP_TIMEOUT_S,
        help="seconds before SIGKILL (default %(default)s)",
    )


def _add_listener_options(start: argparse.ArgumentParser) -> None:
    """Ports, node ids, the cluster's size, SASL users and broker config."""
    start.add_argument(
        "--port", type=port, default=DEFAULT_PORT, help="PLAINTEXT listener port (default %(default)s)"
    )
    start.add_argument(
        "--controller-port",
        type=port,
        default=None,
        help=f"KRaft controller port (default --port + N: {DEFAULT_CONTROLLER_PORT} for one broker)",
    )
    start.add_argument(
        "--sasl-port",
        type=port,
        default=None,
        help=f"SASL_PLAINTEXT listener port (default --port + 2N: {DEFAULT_SASL_PORT} for one broker)",
    )
    start.add_argument(
        "--node-id", type=ascii_int, default=DEFAULT_NODE_ID, help="KRaft node id (default %(default)s)"
    )
    start.add_argument(
        "--brokers",
        type=ascii_int,
        default=1,
        help="brokers in the cluster, each a KRaft voter; broker k (from 0) uses --node-id + k and "
        "each port + k; ports left out follow --port in blocks of N (default %(default)s)",
    )
    start.add_argument(
        "--sasl-users",
        metavar="USER:PASSWORD,...",
        help="add a SASL_PLAINTEXT listener (mechanism PLAIN) with these users",
    )
    start.add_argument(
        "--telemetry-max-bytes", type=ascii_int, help="broker telemetry.max.bytes (Kafka default 1 MiB)"
    )
    start.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra broker config; repeat for several",
    )


def _add_plugin_options(start: argparse.ArgumentParser) -> None:
    """Which broker plugin, the topic it writes and how often it writes broker metrics."""
    plugin = start.add_mutually_exclusive_group()
    plugin.add_argument(
        "--plugin-jar",
        type=Path,
        help="KIP-714 broker plugin jar (default: $KIP714_PLUGIN_JAR or "
        "broker_plugin/target/kip714-broker-plugin.jar)",
    )
    plugin.add_argument("--no-plugin", action="store_true", help="start without the broker plugin")
    start.add_argument(
        "--telemetry-topic",
        default=DEFAULT_TELEMETRY_TOPIC,
        help="topic the plugin writes (default %(default)s)",
    )
    start.add_argument(
        "--broker-metrics-interval-ms",
        type=ascii_int,
        default=DEFAULT_BROKER_METRICS_INTERVAL_MS,
        help="how often the plugin writes broker-metric records (default %(default)s)",
    )


def _add_version_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kafka-version", default=DEFAULT_KAFKA_VERSION, help="Apache Kafka release (default %(default)s)"
    )


def _add_data_dir_option(parser: argparse.ArgumentParser) -> None:
    service.add_data_dir_option(
        parser,
        parse=data_dir,
        default=None,
        help="storage, config, logs, PID and state "
        "(default $KIP714_LOCAL_KAFKA_DIR or ~/.local/state/kip714/local-kafka)",
    )


def _data_dir(args: argparse.Namespace) -> Path:
    return (args.data_dir or default_data_dir()).expanduser().resolve()


def run_install(args: argparse.Namespace) -> int:
    version = KafkaVersion.parse(args.kafka_version)
    distribution = ensure_distribution(version, repair=True)
    print(f"Apache Kafka {version}: {len(distribution.classpath())} jars in {distribution.libs_dir}")
    return 0


def default_ports(port: int, brokers: int) -> tuple[int, int]:
    """Controller and SASL ports when not given: the blocks after ``port``'s, one port per broker.

    Node ``k`` listens on each port ``+ k``, so with N brokers the PLAINTEXT ports take ``port`` to
    ``port + N - 1``; the controller ports follow at ``port + N`` and the SASL ports at ``port + 2N``
    (9093 and 9094 for one broker, as Kafka's examples use). Fixed defaults overlapped from 2 brokers on.
    """
    count = max(1, brokers)
    return port + count, port + 2 * count


def settings_from_args(args: argparse.Namespace) -> BrokerSettings:
    """Turn ``start``'s options into checked broker settings (errors name the option)."""
    plugin_jar: Path | None = None
    if args.plugin_jar is not None:
        plugin_jar = args.plugin_jar.expanduser().resolve()
        check_plugin_jar(plugin_jar)
    elif not args.no_plugin:
        plugin_jar = default_plugin_jar()
        if plugin_jar is None:
            log.warning(
                "broker plugin jar not built (run `make plugin`); starting without it: "
                "the broker will not advertise the KIP-714 APIs and clients will not push"
            )
    controller_port, sasl_port = default_ports(args.port, getattr(args, "brokers", 1))
    if args.controller_port is not None:
        controller_port = args.controller_port
    if args.sasl_port is not None:
        sasl_port = args.sasl_port
    return BrokerSettings(
        data_dir=_data_dir(args),
        kafka_version=KafkaVersion.parse(args.kafka_version),
        port=args.port,
        controller_port=controller_port,
        sasl_port=sasl_port,
        node_id=args.node_id,
        sasl_users=parse_sasl_users(args.sasl_users) if args.sasl_users is not None else {},
        telemetry_max_bytes=args.telemetry_max_bytes,
        telemetry_topic=args.telemetry_topic,
        broker_metrics_interval_ms=args.broker_metrics_interval_ms,
        plugin_jar=plugin_jar,
        overrides=parse_overrides(args.override),
    )


def run_start(args: argparse.Namespace) -> int:
    members = cluster_settings(settings_from_args(args), args.brokers)
    started = start_cluster(members, ready_timeout_s=args.ready_timeout, repair_cache=args.repair_cache)
    states = [node.state for node in started]
    if args.json:
        service.print_json(_describe(states))
        return 0
    first = states[0]
    plugin = f"plugin {first.plugin_jar}" if first.plugin_jar else "no broker plugin"
    brokers = ", ".join(f"node {s.node_id} pid {s.pid}" for s in states)
    print(f"Apache Kafka {first.kafka_version} ready: {len(states)} broker(s), {brokers} ({plugin})")
    print(f"bootstrap servers: {_joined(s.bootstrap_servers for s in states)}")
    if first.sasl_bootstrap_servers:
        print(
            f"SASL_PLAINTEXT (PLAIN) bootstrap servers: {_joined(s.sasl_bootstrap_servers for s in states)} "
            f"users: {', '.join(first.sasl_users)}"
        )
    print(f"logs: {_joined(s.log_path for s in states)}")
    return 0


def _joined(values: Iterable[str | None]) -> str:
    return ",".join(value for value in values if value)


def _describe(states: list[LocalKafkaState]) -> dict[str, object]:
    """The first broker's state (one-broker callers read it as before) plus the whole cluster."""
    return {
        **asdict(states[0]),
        "bootstrap_servers": _joined(s.bootstrap_servers for s in states),
        "sasl_bootstrap_servers": _joined(s.sasl_bootstrap_servers for s in states) or None,
        "brokers": [
            {
                "node_id": s.node_id,
                "port": int(s.bootstrap_servers.rsplit(":", 1)[1]),
                "pid": s.pid,
                "data_dir": s.data_dir,
                "log_path": s.log_path,
            }
            for s in states
        ],
    }


def run_status(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    try:
        members = cluster_status(data_dir)
    except BrokerNotReadyError as err:
        print(str(err), file=sys.stderr)
        return service.EXIT_NOT_RUNNING
    states = [state for _, state in members if state is not None]
    down = [str(member) for member, state in members if state is None]
    if not states:
        return service.not_running("local Kafka", data_dir, as_json=args.json)
    if args.json:
        service.print_json({**_describe(states), "stopped": down})
    else:
        for state in states:
            sasl = f", SASL_PLAINTEXT {state.sasl_bootstrap_servers}" if state.sasl_bootstrap_servers else ""
            print(
                f"running: Apache Kafka {state.kafka_version} node {state.node_id} pid {state.pid}, "
                f"bootstrap {state.bootstrap_servers}{sasl}, logs {state.log_path}"
            )
        for member in down:
            print(f"not running: the broker of {member}")
    return service.EXIT_NOT_RUNNING if down else 0


def run_stop(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    outcomes = [outcome for outcome in stop_cluster(data_dir, args.timeout) if outcome.was_running]
    if not outcomes:
        print(f"no local Kafka runs from {data_dir}")
    for outcome in outcomes:
        if outcome.killed:
            print(
                f"stopped pid {outcome.pid} with SIGKILL after {args.timeout:.0f} s without a clean shutdown"
            )
        else:
            print(f"stopped pid {outcome.pid}")
    return 0
