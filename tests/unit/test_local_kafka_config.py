"""Broker config rendering and option validation for ``kip714 local-kafka`` (no servers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kip714_dev.cli.local_kafka import settings_from_args
from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.broker_config import (
    BrokerSettings,
    DataDirLayout,
    broker_properties,
    logging_system_property,
    parse_overrides,
    parse_sasl_users,
    render_logging_config,
    render_properties,
)
from kip714_dev.local_kafka.versions import (
    PLUGIN_CLASS_EXPORTER,
    PLUGIN_CLASS_LEGACY,
    KafkaVersion,
    LoggingBackend,
)

from airflow_provider_kip714.cli.main import build_parser

V44 = KafkaVersion.parse("4.4.0")
V39 = KafkaVersion.parse("3.9.2")


def _settings(tmp_path: Path, **changes: object) -> BrokerSettings:
    values: dict[str, object] = {
        "data_dir": tmp_path,
        "kafka_version": V44,
        "port": 29092,
        "controller_port": 29093,
    }
    values.update(changes)
    return BrokerSettings(**values)  # type: ignore[arg-type]


def test_plaintext_only_config_is_kraft_combined_on_loopback(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    properties = broker_properties(settings, DataDirLayout(tmp_path))
    assert properties["process.roles"] == "broker,controller"
    assert properties["controller.quorum.voters"] == "1@127.0.0.1:29093"
    assert properties["listeners"] == "PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29093"
    assert properties["advertised.listeners"] == "PLAINTEXT://127.0.0.1:29092"
    assert properties["log.dirs"] == str(tmp_path / "kraft-logs")
    assert properties["offsets.topic.replication.factor"] == "1"
    assert properties["transaction.state.log.replication.factor"] == "1"
    assert properties["group.initial.rebalance.delay.ms"] == "0"
    assert properties["auto.create.topics.enable"] == "true"
    assert properties["num.partitions"] == "3"
    assert "sasl.enabled.mechanisms" not in properties
    assert "metric.reporters" not in properties
    assert settings.sasl_bootstrap_servers is None


def test_sasl_users_add_a_plain_listener_with_jaas_users(tmp_path: Path) -> None:
    settings = _settings(tmp_path, sasl_port=29094, sasl_users={"alice": "alice-secret", "bob": "b0b"})
    properties = broker_properties(settings, DataDirLayout(tmp_path))
    assert "SASL_PLAINTEXT://127.0.0.1:29094" in properties["listeners"].split(",")
    assert "SASL_PLAINTEXT:SASL_PLAINTEXT" in properties["listener.security.protocol.map"].split(",")
    assert properties["sasl.enabled.mechanisms"] == "PLAIN"
    jaas = properties["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert jaas.startswith("org.apache.kafka.common.security.plain.PlainLoginModule required ")
    assert 'user_alice="alice-secret"' in jaas
    assert 'user_bob="b0b"' in jaas
    assert jaas.endswith(";")
    assert settings.sasl_bootstrap_servers == "127.0.0.1:29094"


@pytest.mark.parametrize(
    ("version", "expected_class"), [(V44, PLUGIN_CLASS_EXPORTER), (V39, PLUGIN_CLASS_LEGACY)]
)
def test_plugin_configs_follow_the_kafka_version(
    tmp_path: Path, version: KafkaVersion, expected_class: str
) -> None:
    jar = tmp_path / "plugin.jar"
    settings = _settings(
        tmp_path,
        kafka_version=version,
        plugin_jar=jar,
        telemetry_topic="telemetry_x",
        broker_metrics_interval_ms=5000,
        telemetry_max_bytes=4096,
    )
    properties = broker_properties(settings, DataDirLayout(tmp_path))
    assert properties["metric.reporters"] == expected_class
    assert properties["kip714.topic"] == "telemetry_x"
    assert properties["kip714.broker.metrics.interval.ms"] == "5000"
    assert properties["kip714.bootstrap.servers"] == "127.0.0.1:29092"
    assert properties["telemetry.max.bytes"] == "4096"


def test_kafka_version_boundary_for_exporter_class() -> None:
    assert KafkaVersion.parse("4.1.2").plugin_class == PLUGIN_CLASS_LEGACY
    assert KafkaVersion.parse("4.2.0").plugin_class == PLUGIN_CLASS_EXPORTER
    assert KafkaVersion.parse("4.0.0").logging_backend is LoggingBackend.LOG4J2
    assert KafkaVersion.parse("3.7.0").logging_backend is LoggingBackend.RELOAD4J


@pytest.mark.parametrize("text", ["4.4", "latest", "4.4.0-rc1", "3.6.2", "2.8.0"])
def test_bad_kafka_versions_are_refused_naming_the_option(text: str) -> None:
    with pytest.raises(LocalKafkaError, match="--kafka-version"):
        KafkaVersion.parse(text)


def test_overrides_come_last_and_win(tmp_path: Path) -> None:
    overrides = parse_overrides(["num.partitions=1", "log.retention.ms = 60000", "a.b=x=y"])
    assert overrides == {"num.partitions": "1", "log.retention.ms": "60000", "a.b": "x=y"}
    properties = broker_properties(_settings(tmp_path, overrides=overrides), DataDirLayout(tmp_path))
    assert properties["num.partitions"] == "1"
    assert properties["log.retention.ms"] == "60000"
    assert properties["a.b"] == "x=y"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("num.partitions", "must be key=value"),
        ("=3", "must be key=value"),
        ("bad key=1", "must be a Kafka config name"),
        ("listeners=PLAINTEXT://0.0.0.0:9092", "set by the launcher"),
        ("node.id=7", "set by the launcher"),
        ("log.dirs=/tmp/x", "set by the launcher"),
    ],
)
def test_bad_overrides_are_refused(entry: str, message: str) -> None:
    with pytest.raises(LocalKafkaError, match=message) as raised:
        parse_overrides([entry])
    assert str(raised.value).startswith("--override:")


def test_sasl_users_parse() -> None:
    assert parse_sasl_users("alice:alice-secret, bob:p:w") == {"alice": "alice-secret", "bob": "p:w"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("alice", "must be user:password"),
        ("alice:", "non-empty password"),
        (":secret", "user name must use"),
        ("al ice:x", "user name must use"),
        ('alice:se"cret', "must not contain quotes"),
        ("alice:a,alice:b", "listed twice"),
        (" , ", "at least one"),
    ],
)
def test_bad_sasl_users_are_refused(text: str, message: str) -> None:
    with pytest.raises(LocalKafkaError, match=message) as raised:
        parse_sasl_users(text)
    assert str(raised.value).startswith("--sasl-users:")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"port": 0}, "--port: must be a TCP port"),
        ({"controller_port": 70000}, "--controller-port: must be a TCP port"),
        ({"controller_port": 29092}, "must be distinct"),
        ({"sasl_users": {"a": "b"}, "sasl_port": 29093}, "must be distinct"),
        ({"node_id": -1}, "--node-id"),
        ({"telemetry_max_bytes": 0}, "--telemetry-max-bytes"),
        ({"broker_metrics_interval_ms": 10}, "--broker-metrics-interval-ms"),
        ({"telemetry_topic": "bad topic"}, "--telemetry-topic"),
    ],
)
def test_settings_validation_names_the_option(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(LocalKafkaError, match=message):
        _settings(tmp_path, **changes)


def test_properties_rendering_escapes_backslashes() -> None:
    text = render_properties({"a": "C:\\dir", "b": " leading"})
    assert "a=C:\\\\dir\n" in text
    assert "b=\\ leading\n" in text


def test_logging_config_writes_to_the_server_log(tmp_path: Path) -> None:
    server_log = tmp_path / "logs" / "server.log"
    log4j2 = render_logging_config(LoggingBackend.LOG4J2, server_log)
    assert f"appender.file.fileName = {server_log}" in log4j2
    assert "rootLogger.appenderRef.file.ref = FILE" in log4j2
    reload4j = render_logging_config(LoggingBackend.RELOAD4J, server_log)
    assert f"log4j.appender.file.File={server_log}" in reload4j
    config = tmp_path / "logging.properties"
    assert logging_system_property(LoggingBackend.LOG4J2, config) == f"-Dlog4j2.configurationFile={config}"
    assert logging_system_property(LoggingBackend.RELOAD4J, config) == f"-Dlog4j.configuration=file:{config}"


def _start_args(*options: str) -> object:
    return build_parser().parse_args(["local-kafka", "start", "--no-plugin", *options])


def test_cli_options_become_settings(tmp_path: Path) -> None:
    args = _start_args(
        "--data-dir", str(tmp_path), "--kafka-version", "3.9.2",
        "--port", "30001", "--controller-port", "30002", "--sasl-port", "30003", "--node-id", "5",
        "--sasl-users", "alice:alice-secret", "--telemetry-max-bytes", "2048",
        "--override", "num.partitions=6", "--override", "log.retention.ms=1000",
        "--telemetry-topic", "tel", "--broker-metrics-interval-ms", "1000",
    )  # fmt: skip
    settings = settings_from_args(args)  # type: ignore[arg-type]
    assert settings.data_dir == tmp_path.resolve()
    assert str(settings.kafka_version) == "3.9.2"
    assert (settings.port, settings.controller_port, settings.sasl_port, settings.node_id) == (
        30001,
        30002,
        30003,
        5,
    )
    assert dict(settings.sasl_users) == {"alice": "alice-secret"}
    assert settings.telemetry_max_bytes == 2048
    assert dict(settings.overrides) == {"num.partitions": "6", "log.retention.ms": "1000"}
    assert settings.plugin_jar is None


def test_cli_refuses_a_missing_plugin_jar(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        ["local-kafka", "start", "--data-dir", str(tmp_path), "--plugin-jar", str(tmp_path / "nope.jar")]
    )
    with pytest.raises(LocalKafkaError, match=r"--plugin-jar: .*nope\.jar does not exist"):
        settings_from_args(args)


def test_a_cluster_of_three_gets_consecutive_ports_node_ids_and_three_voters(tmp_path: Path) -> None:
    from kip714_dev.local_kafka.brokers import cluster_settings

    base = BrokerSettings(
        data_dir=tmp_path, kafka_version=KafkaVersion.parse("4.4.0"), port=19092, controller_port=19192
    )
    members = cluster_settings(base, 3)
    assert [m.node_id for m in members] == [1, 2, 3]
    assert [m.port for m in members] == [19092, 19093, 19094]
    assert [m.data_dir.name for m in members] == ["broker-1", "broker-2", "broker-3"]
    properties = broker_properties(members[1], DataDirLayout(members[1].data_dir))
    assert properties["controller.quorum.voters"] == ("1@127.0.0.1:19192,2@127.0.0.1:19193,3@127.0.0.1:19194")
    assert properties["offsets.topic.replication.factor"] == "3"
    assert properties["transaction.state.log.min.isr"] == "2"


@pytest.mark.parametrize(
    ("brokers", "ports", "message"),
    [
        (0, {}, "--brokers: must be between 1 and 9"),
        (10, {}, "--brokers: must be between 1 and 9"),
        (3, {"port": 19092, "controller_port": 19093}, "ranges overlap"),
    ],
)
def test_cluster_settings_refuse_bad_counts_and_overlapping_ports(
    tmp_path: Path, brokers: int, ports: dict[str, int], message: str
) -> None:
    from kip714_dev.local_kafka.brokers import cluster_settings

    base = BrokerSettings(data_dir=tmp_path, kafka_version=KafkaVersion.parse("4.4.0"), **ports)
    with pytest.raises(LocalKafkaError, match=message):
        cluster_settings(base, brokers)


def test_a_keystore_turns_the_sasl_listener_into_sasl_ssl(tmp_path: Path) -> None:
    keystore = tmp_path / "tls" / "broker.p12"
    settings = _settings(tmp_path, sasl_port=29094, sasl_users={"alice": "a"}, tls_keystore=keystore)
    properties = broker_properties(settings, DataDirLayout(tmp_path))
    assert (
        properties["listeners"].startswith("PLAINTEXT://127.0.0.1:")
        and "SASL_SSL://127.0.0.1:29094" in (properties["listeners"])
    )
    assert "SASL_SSL:SASL_SSL" in properties["listener.security.protocol.map"]
    assert properties["listener.name.sasl_ssl.ssl.keystore.location"] == str(keystore)
    assert properties["listener.name.sasl_ssl.ssl.keystore.type"] == "PKCS12"
    assert "user_alice" in properties["listener.name.sasl_ssl.plain.sasl.jaas.config"]
    assert "SASL_PLAINTEXT" not in properties["listeners"]
    with pytest.raises(LocalKafkaError, match=r"^tls_keystore: TLS is served on the SASL listener"):
        _settings(tmp_path, tls_keystore=keystore)


@pytest.mark.parametrize("brokers", [1, 2, 3, 9])
def test_default_ports_work_for_any_cluster_size(tmp_path: Path, brokers: int) -> None:
    """``local-kafka start --brokers N`` with no port options was refused: the fixed ports overlapped."""
    from kip714_dev.local_kafka.brokers import cluster_settings

    args = _start_args("--data-dir", str(tmp_path), "--brokers", str(brokers), "--sasl-users", "a:b")
    members = cluster_settings(settings_from_args(args), brokers)  # type: ignore[arg-type]
    assert [m.port for m in members] == [9092 + k for k in range(brokers)]
    ports = [port for member in members for port in (member.port, member.controller_port, member.sasl_port)]
    assert len(set(ports)) == 3 * brokers
    if brokers == 1:
        assert (members[0].controller_port, members[0].sasl_port) == (9093, 9094)


def test_an_explicit_port_moves_the_default_blocks_and_explicit_ones_win(tmp_path: Path) -> None:
    args = _start_args(
        "--data-dir", str(tmp_path), "--brokers", "3", "--port", "41100", "--sasl-port", "41200"
    )
    settings = settings_from_args(args)  # type: ignore[arg-type]
    assert (settings.port, settings.controller_port, settings.sasl_port) == (41100, 41103, 41200)
