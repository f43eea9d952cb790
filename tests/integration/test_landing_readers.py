"""The native and the Python topic readers land the same files from a real local Kafka.

Landing consumes with ``kip714_native.TopicReader`` by default and falls back to confluent-kafka's
``Consumer`` (``landing_fetch``); both must land every record exactly as received, whatever its key,
value and headers, cut chunks and stop at the same places, and quarantine the same records.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Producer
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.tls import ca_location, make_keystore
from plugin_topic import subscription
from telemetry_helpers import client_headers, create_topic, producer_like_payload, read_dir

from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook
from airflow_provider_kip714.native_switches import READER_ENV
from airflow_provider_kip714.telemetry import landing_fetch
from airflow_provider_kip714.telemetry.landing import LandingResult, land_topic
from airflow_provider_kip714.telemetry.landing_fetch import software_identity
from airflow_provider_kip714.telemetry.topic_consumer import TopicReadError

pytestmark = pytest.mark.integration

ODD_HEADERS: list[tuple[str, bytes | None]] = [
    ("kip714.type", b"client"),
    ("kip714.note", b"\xff\xfe not utf-8"),
    ("kip714.empty", b""),
    ("kip714.null", None),
]


def _produce_every_shape(config: dict[str, Any], topic: str) -> int:
    """Records with every key, value and header shape a client can send; returns how many."""
    producer = Producer({**config, "enable.metrics.push": False, "linger.ms": 5})
    shapes: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]] = [
        (b"k", producer_like_payload(3, seed=1), client_headers()),
        (None, producer_like_payload(2, seed=2), client_headers(client_id="orders-<b>&")),
        (b"", b"", client_headers()),
        (b"k", None, client_headers()),
        (b"k", producer_like_payload(2, seed=3), None),
        (b"k", producer_like_payload(2, seed=4), ODD_HEADERS),
        (b"\x00\xff", b"\x01\x02 not protobuf", client_headers(client_id="訂單-🚀")),
        (
            b"k",
            producer_like_payload(4, seed=5),
            [*client_headers(), ("kip714.dup", b"1"), ("kip714.dup", b"2")],
        ),
    ]
    count = 0
    for round_ in range(9):
        for index, (key, value, headers) in enumerate(shapes):
            producer.produce(topic, value=value, key=key, headers=headers, partition=(round_ + index) % 3)
            count += 1
    assert producer.flush(30) == 0
    return count


def _land(config: dict[str, Any], topic: str, out: Path, reader: str, **options: Any) -> LandingResult:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(READER_ENV, reader)
        used: list[str] = []
        open_fetcher = landing_fetch.open_fetcher

        def spy(*args: Any, **kwargs: Any) -> landing_fetch.ChunkFetcher:
            chosen = open_fetcher(*args, **kwargs)
            used.append(type(chosen).__name__)
            return chosen

        patch.setattr("airflow_provider_kip714.telemetry.landing.open_fetcher", spy)
        result = land_topic(config, topic, out, fsync=False, **options)
    assert used == [{"native": "NativeFetcher", "python": "PythonFetcher"}[reader]]
    return result


def _sorted(table: pa.Table, drop: tuple[str, ...] = ()) -> pa.Table:
    table = table.drop_columns(list(drop))
    return table.sort_by([("partition", "ascending"), ("offset", "ascending")])


def test_both_readers_land_every_record_shape_identically(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=3)
    produced = _produce_every_shape(config, topic)

    native = _land(config, topic, tmp_path / "native", "native", chunk_records=5)
    python = _land(config, topic, tmp_path / "python", "python", chunk_records=5)

    for result in (native, python):
        assert result.records == produced == 72
        assert result.stop_reason == "reached the end offsets read at the start"
    assert (native.points, native.quarantined, native.chunks, native.partitions) == (
        python.points,
        python.quarantined,
        python.chunks,
        python.partitions,
    )
    # empty, null and garbage values, no headers and incomplete headers: 5 shapes x 9 rounds
    assert native.quarantined == 45
    assert native.points == 9 * (3 + 2 + 4)
    raw = _sorted(read_dir(tmp_path / "native" / "raw"))
    assert raw.equals(_sorted(read_dir(tmp_path / "python" / "raw")))
    assert raw.num_rows == produced
    keys = raw.column("key").to_pylist()
    assert {None, b"", b"\x00\xff", b"k"} <= set(keys)
    values = raw.column("value").to_pylist()
    assert values.count(None) == 9 and values.count(b"") == 9
    headers = raw.column("headers").to_pylist()
    assert headers.count([]) == 9  # no headers at all
    assert [
        ("kip714.type", "client"),
        ("kip714.note", "\ufffd\ufffd not utf-8"),
        ("kip714.empty", ""),
        ("kip714.null", None),
    ] in headers
    assert any(("kip714.dup", "1") in h and ("kip714.dup", "2") in h for h in headers)

    datapoints = _sorted(read_dir(tmp_path / "native" / "datapoints"))
    assert datapoints.equals(_sorted(read_dir(tmp_path / "python" / "datapoints")))
    assert datapoints.num_rows == native.points
    assert "orders-<b>&" in datapoints.column("client_id").to_pylist()
    quarantine = _sorted(read_dir(tmp_path / "native" / "quarantine"), drop=("quarantined_at",))
    assert quarantine.equals(_sorted(read_dir(tmp_path / "python" / "quarantine"), drop=("quarantined_at",)))


@pytest.mark.parametrize("reader", ["native", "python"])
def test_max_records_stops_mid_batch_and_the_next_run_resumes_exactly(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, reader: str
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=2)
    producer = Producer({**config, "enable.metrics.push": False})
    for index in range(500):
        producer.produce(
            topic, producer_like_payload(1, seed=index), headers=client_headers(), partition=index % 2
        )
    assert producer.flush(30) == 0

    first = _land(config, topic, tmp_path / "zone", reader, max_records=137, chunk_records=40)
    rest = _land(config, topic, tmp_path / "zone", reader, chunk_records=40)

    assert first.records == 137 and first.stop_reason == "max_records=137 reached"
    assert rest.records == 363
    raw = read_dir(tmp_path / "zone" / "raw")
    landed = sorted(zip(raw.column("partition").to_pylist(), raw.column("offset").to_pylist(), strict=True))
    assert landed == sorted((p, o) for p in range(2) for o in range(250))


def test_the_lander_tells_the_broker_the_same_software_with_either_reader(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """A subscription that matches (or excludes) the lander by ``client_software_name`` must not depend on
    the reader: the native one runs confluent-kafka's librdkafka and says what confluent-kafka says. The
    broker's view is read back from the telemetry topic, where the plugin records each push's identity."""
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    config = kafka_cluster.client_config()
    prefix = f"lander-{uuid.uuid4().hex[:8]}"
    name = f"kip714-test-{prefix}"
    topic = create_topic(config, 2, prefix="identity")
    producer = Producer({**config, "enable.metrics.push": False})
    for index in range(50):
        producer.produce(topic, value=producer_like_payload(2, seed=index), headers=client_headers())
    assert producer.flush(30) == 0
    expected = {f"{prefix}-{reader}": reader for reader in ("native", "python")}
    with subscription(kafka_cluster.bootstrap_servers, name, f"client_id={prefix}-.*", interval_ms=500):
        for client_id, reader in expected.items():
            lander = {**config, "client.id": client_id, "enable.metrics.push": True}
            deadline = time.monotonic() + 30
            # a run shorter than the first push's jitter pushes nothing: land (an empty run) until it did
            while not _identities(config, kafka_cluster.telemetry_topic, client_id):
                assert time.monotonic() < deadline, f"no push from the {reader} reader's client"
                _land(lander, topic, tmp_path / reader, reader)
    seen = {
        client_id: _identities(config, kafka_cluster.telemetry_topic, client_id) for client_id in expected
    }
    native, python = (seen[f"{prefix}-{reader}"] for reader in ("native", "python"))
    assert (
        python
        == native
        == {(software_identity()["client.software.name"], software_identity()["client.software.version"])}
    )


def _identities(config: dict[str, Any], telemetry_topic: str, client_id: str) -> set[tuple[str, str]]:
    """(software name, version) of every landed push by ``client_id`` on the telemetry topic."""
    hook = TelemetryTopicHook(config=config, topic=telemetry_topic)
    found: set[tuple[str, str]] = set()
    for item in hook.iter_records("earliest", decode=False, timeout_s=5):
        headers = {key: (value or b"").decode() for key, value in item.record.headers or []}
        if headers.get(Header.CLIENT_ID) == client_id:
            found.add((headers[Header.CLIENT_SOFTWARE_NAME], headers[Header.CLIENT_SOFTWARE_VERSION]))
    return found


def test_both_readers_land_over_sasl_ssl_and_refuse_a_broker_they_do_not_trust(
    tls_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """The native reader runs confluent-kafka's librdkafka, OpenSSL included: the same TLS handshake,
    hostname check and error. Landing over SASL_SSL gives both readers the same files; a CA that did
    not sign the broker's certificate fails the run in one line and lands nothing."""
    config = tls_cluster.client_config(sasl_user=sorted(tls_cluster.sasl_users)[0])
    assert config["security.protocol"] == "SASL_SSL" and Path(config["ssl.ca.location"]).is_file()
    topic = create_topic(config, partitions=3)
    produced = _produce_every_shape(config, topic)

    native = _land(config, topic, tmp_path / "native", "native")
    python = _land(config, topic, tmp_path / "python", "python")
    assert native.records == python.records == produced
    for table in ("raw", "datapoints"):
        landed = _sorted(read_dir(tmp_path / "native" / table))
        assert landed.equals(_sorted(read_dir(tmp_path / "python" / table))), table

    stranger = ca_location(make_keystore(tmp_path / "another-ca"))
    for reader in ("native", "python"):
        untrusting = {**config, "ssl.ca.location": str(stranger)}
        with pytest.raises(TopicReadError) as refused:
            _land(untrusting, topic, tmp_path / f"refused-{reader}", reader, metadata_timeout_s=10)
        message = str(refused.value)
        assert message.startswith("connection: TLS handshake failed (") and "\n" not in message, message
        assert "certificate verify failed" in message and "check ssl.ca.location" in message
        assert not list((tmp_path / f"refused-{reader}").rglob("*.parquet"))
    wrong_password = {**config, "sasl.password": "not-the-password"}
    started = time.monotonic()
    with pytest.raises(
        TopicReadError, match=r"^connection: authentication failed \(.*Invalid username or password"
    ):
        _land(wrong_password, topic, tmp_path / "wrong-password", "native", metadata_timeout_s=30)
    assert time.monotonic() - started < 15  # refused at once, not after the 30 s a dead broker gets


def test_reading_and_testing_the_connection_name_a_refused_handshake_or_login(
    tls_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """The hook's reads, its connection test (Airflow's "Test" button) and the arrival trigger share the
    first contact of ``topic_consumer.partitions_of``: a wrong CA or password is named, at once."""
    config = tls_cluster.client_config(sasl_user=sorted(tls_cluster.sasl_users)[0])
    topic = create_topic(config, partitions=1)
    stranger = str(ca_location(make_keystore(tmp_path / "another-ca")))
    cases = {
        "connection: TLS handshake failed (": {**config, "ssl.ca.location": stranger},
        "connection: authentication failed (": {**config, "sasl.password": "not-the-password"},
    }
    for expected, broken in cases.items():
        hook = TelemetryTopicHook(config=broken, topic=topic)
        started = time.monotonic()
        ok, message = hook.test_connection()
        assert not ok and message.startswith(expected) and "\n" not in message, message
        with pytest.raises(TopicReadError, match=f"^{re.escape(expected)}"):
            list(hook.iter_records("earliest", timeout_s=25))
        assert time.monotonic() - started < 20  # not two metadata timeouts (2 x 10 s or more)
    assert TelemetryTopicHook(config=config, topic=topic).test_connection() == (
        True,
        f"topic {topic!r}: 1 partitions",
    )
