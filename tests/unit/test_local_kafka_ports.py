"""Port checks behind "port in use" start-up errors and the fixtures' free ports (real sockets)."""

from __future__ import annotations

import socket

import pytest
from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.ports import (
    accepts_connections,
    free_ports,
    port_is_free,
    require_free_ports,
)


def test_a_listening_port_is_detected_as_in_use() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not port_is_free(port)
        assert accepts_connections(port)
        with pytest.raises(
            LocalKafkaError, match=rf"--sasl-port: port {port} on 127.0.0.1 is already in use"
        ):
            require_free_ports({"--port": free_ports(1)[0], "--sasl-port": port})
    assert port_is_free(port)
    assert not accepts_connections(port, timeout_s=0.5)


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3
    assert all(port_is_free(port) for port in ports)
    require_free_ports({f"p{index}": port for index, port in enumerate(ports)})
