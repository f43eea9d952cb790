"""Local TCP port checks: refuse to start on a busy port, and pick free ones for tests."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Mapping

from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.broker_config import LOOPBACK_HOST


class PortInUseError(LocalKafkaError):
    """A port the broker needs is taken by another process."""


def port_is_free(port: int, host: str = LOOPBACK_HOST) -> bool:
    """True when a listener could bind ``host:port`` now (SO_REUSEADDR, as the JVM does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def require_free_ports(named_ports: Mapping[str, int], host: str = LOOPBACK_HOST) -> None:
    """Raise naming the first option whose port is taken."""
    for option, port in named_ports.items():
        if not port_is_free(port, host):
            raise PortInUseError(f"{option}: port {port} on {host} is already in use; pick another port")


def free_ports(count: int, host: str = LOOPBACK_HOST) -> list[int]:
    """``count`` distinct ports the kernel reports free right now (held open together so they differ)."""
    with contextlib.ExitStack() as stack:
        sockets = []
        for _ in range(count):
            holder = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            holder.bind((host, 0))
            sockets.append(holder)
        return [holder.getsockname()[1] for holder in sockets]


def accepts_connections(port: int, host: str = LOOPBACK_HOST, timeout_s: float = 1.0) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout_s):
        return True
    return False


def free_port_in(range_env: str) -> int:
    """A free port on 127.0.0.1 for a server a test or the demo starts: from ``$range_env`` (``low-high``)
    when set (a shared machine where each user has a range), else any free port the kernel offers."""
    span = os.environ.get(range_env, "")
    if not span:
        return free_ports(1)[0]
    low, _, high = span.partition("-")
    for candidate in range(int(low), int(high) + 1):
        if port_is_free(candidate):
            return candidate
    raise RuntimeError(f"no free port in {range_env}={span}")
