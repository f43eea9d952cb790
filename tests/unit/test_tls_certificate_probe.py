"""``refused_certificate``: which answers of a bootstrap server name a TLS refusal at once, and which
leave the verdict to kafka-python (real sockets on loopback; the refused certificate itself is
checked against a real SASL_SSL broker in ``tests/integration/test_client_metrics_admin.py``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from airflow_provider_kip714.subscriptions.tls_probe import _server_address, refused_certificate


class PlainTcpServer:
    """Accepts and closes at once (not TLS, so no certificate to refuse); counts its connections."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()


@pytest.fixture
def plain_tcp_server() -> Iterator[PlainTcpServer]:
    server = PlainTcpServer()
    yield server
    server.listener.close()


def closed_port() -> str:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return f"127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.parametrize(
    ("server", "address"),
    [
        ("broker-1:9093", ("broker-1", 9093)),
        (" 127.0.0.1:9092", ("127.0.0.1", 9092)),
        ("[::1]:9093", ("::1", 9093)),
        ("broker-1", None),
        ("broker-1:tls", None),
        (":9093", None),
    ],
)
def test_bootstrap_servers_are_read_as_socket_addresses(server: str, address: object) -> None:
    assert _server_address(server) == address


def test_plaintext_settings_are_not_probed(plain_tcp_server: PlainTcpServer) -> None:
    for protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
        settings = {"bootstrap_servers": [plain_tcp_server.address], "security_protocol": protocol}
        assert refused_certificate(settings) is None
    settings = {"bootstrap_servers": plain_tcp_server.address}  # no protocol: PLAINTEXT
    assert refused_certificate(settings) is None
    time.sleep(0.2)
    assert plain_tcp_server.accepted == 0


def test_a_server_that_is_down_or_not_tls_leaves_the_verdict_to_kafka_python(
    plain_tcp_server: PlainTcpServer,
) -> None:
    servers = [closed_port(), plain_tcp_server.address, "no-port"]
    began = time.monotonic()
    assert refused_certificate({"bootstrap_servers": servers, "security_protocol": "SSL"}) is None
    assert time.monotonic() - began < 5
    deadline = time.monotonic() + 2
    while plain_tcp_server.accepted == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert plain_tcp_server.accepted == 1  # it was probed, and its answer was not a refusal


def test_unreadable_tls_files_are_left_to_kafka_python(tmp_path) -> None:
    settings = {
        "bootstrap_servers": [closed_port()],
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(tmp_path / "missing-ca.pem"),
    }
    assert refused_certificate(settings) is None
