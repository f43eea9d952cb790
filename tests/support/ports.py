"""A free port on 127.0.0.1 for a server a test starts, from a range in the environment when one is set
(a shared machine where each user has a range), else any the kernel offers."""

from __future__ import annotations

import os

from kip714_dev.local_kafka.ports import free_ports, port_is_free


def free_port_in(range_env: str) -> int:
    """A free port from ``$range_env`` (``low-high``) when set, else any free port."""
    span = os.environ.get(range_env, "")
    if not span:
        return free_ports(1)[0]
    low, _, high = span.partition("-")
    for candidate in range(int(low), int(high) + 1):
        if port_is_free(candidate):
            return candidate
    raise RuntimeError(f"no free port in {range_env}={span}")
