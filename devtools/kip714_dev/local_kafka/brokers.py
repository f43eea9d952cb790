"""Several brokers in one data dir: one KRaft quorum of N combined-mode nodes on 127.0.0.1.

A single broker keeps today's layout (the data dir is the broker's own). With ``--brokers N`` (N > 1)
the data dir holds ``cluster.json`` (the cluster id and the nodes) and one folder per node,
``broker-<node id>/``, each a complete single-broker layout. Node ``k`` (0-based) listens on
``port + k``, ``controller_port + k`` and ``sasl_port + k``. Every node is launched before any is
awaited: a quorum's nodes only become ready together.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Final

from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.broker_config import BrokerSettings
from kip714_dev.local_kafka.launcher import (
    DEFAULT_READY_TIMEOUT_S,
    DEFAULT_STOP_TIMEOUT_S,
    BrokerNotReadyError,
    LaunchedBroker,
    StartedBroker,
    StopOutcome,
    abandon,
    await_ready,
    broker_status,
    launch_broker,
    listed_brokers,
    new_cluster_id,
    stop_broker,
)
from kip714_dev.local_kafka.state import LocalKafkaState

CLUSTER_FILE: Final = "cluster.json"
MAX_BROKERS: Final = 9


def node_data_dir(root: Path, node_id: int) -> Path:
    return root / f"broker-{node_id}"


def cluster_settings(
    base: BrokerSettings, brokers: int, node_ports: Sequence[tuple[int, int, int]] | None = None
) -> list[BrokerSettings]:
    """The settings of each node of a ``brokers``-node cluster rooted at ``base.data_dir``.

    ``node_ports`` gives each node's (PLAINTEXT, controller, SASL) ports; by default node ``k`` uses
    ``base``'s ports plus ``k``.
    """
    if not 1 <= brokers <= MAX_BROKERS:
        raise LocalKafkaError(f"--brokers: must be between 1 and {MAX_BROKERS}, got {brokers}")
    if brokers == 1:
        return [base]
    ports_of = list(
        node_ports or [(base.port + k, base.controller_port + k, base.sasl_port + k) for k in range(brokers)]
    )
    if len(ports_of) != brokers:
        raise LocalKafkaError(
            f"node_ports: {brokers} brokers need {brokers} port triples, got {len(ports_of)}"
        )
    nodes = tuple((base.node_id + k, ports_of[k][1], ports_of[k][0]) for k in range(brokers))
    members = [
        replace(
            base,
            data_dir=node_data_dir(base.data_dir, base.node_id + k),
            node_id=base.node_id + k,
            port=ports_of[k][0],
            controller_port=ports_of[k][1],
            sasl_port=ports_of[k][2],
            cluster_nodes=nodes,
        )
        for k in range(brokers)
    ]
    ports = [port for member in members for port in member.ports.values()]
    if len(set(ports)) != len(ports):
        raise LocalKafkaError(
            f"--port/--controller-port/--sasl-port: {brokers} brokers use each port and the next "
            f"{brokers - 1}; these ranges overlap ({sorted(ports)}): space the ports further apart"
        )
    return members


def member_dirs(root: Path) -> list[Path]:
    """The broker data dirs of the cluster in ``root`` (``root`` itself for a single broker)."""
    described = _read_cluster_file(root)
    if described is None:
        return [root]
    return [node_data_dir(root, node_id) for node_id in described["node_ids"]]


def start_cluster(
    members: list[BrokerSettings],
    *,
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
    repair_cache: bool = False,
) -> list[StartedBroker]:
    """Launch every node, then wait for each; on any failure stop the ones already launched."""
    cluster_id = None
    if len(members) > 1:
        cluster_id = _cluster_id(members[0].data_dir.parent.resolve(), [m.node_id for m in members])
    launched: list[LaunchedBroker] = []
    try:
        for member in members:
            launched.append(launch_broker(member, repair_cache=repair_cache, cluster_id=cluster_id))
        started = [await_ready(node, ready_timeout_s) for node in launched]
        if len(members) > 1:
            await_formed(members, ready_timeout_s)
        return started
    except BaseException:
        for node in launched:
            abandon(node)
        raise


def await_formed(members: Sequence[BrokerSettings], timeout_s: float) -> None:
    """Wait until every node's metadata lists every node of ``members`` (the running ones).

    A node answers for itself as soon as it has registered, while its image of the others can still lag:
    right after a start, or after one node came back, a client could see 2 brokers of 3."""
    node_ids = {member.node_id for member in members}
    deadline = time.monotonic() + timeout_s
    while True:
        views = {member.node_id: listed_brokers(member) for member in members}
        lagging = {node: view for node, view in views.items() if view is None or not node_ids <= view}
        if not lagging:
            return
        if time.monotonic() >= deadline:
            seen = ", ".join(
                f"node {node} lists {sorted(view) if view is not None else 'nothing (no answer)'}"
                for node, view in sorted(lagging.items())
            )
            raise LocalKafkaError(
                f"the cluster did not form within {timeout_s:.0f} s (nodes {sorted(node_ids)}): {seen}"
            )
        time.sleep(0.5)


def cluster_status(root: Path) -> list[tuple[Path, LocalKafkaState | None]]:
    """Each node's data dir and state (``None``: not running); raises while a node is still starting."""
    return [(member, broker_status(member)) for member in member_dirs(root)]


def stop_cluster(root: Path, timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> list[StopOutcome]:
    """Stop every node at once (each by its own PID file).

    One at a time, the last node would wait for a quorum that has already gone and end in SIGKILL.
    """
    return stop_together(member_dirs(root), timeout_s)


def stop_together(data_dirs: Sequence[Path], timeout_s: float = DEFAULT_STOP_TIMEOUT_S) -> list[StopOutcome]:
    with ThreadPoolExecutor(max_workers=max(1, len(data_dirs))) as pool:
        return list(pool.map(lambda data_dir: stop_broker(data_dir, timeout_s), data_dirs))


def _cluster_id(root: Path, node_ids: list[int]) -> str:
    """The cluster's id, written before any node is formatted so a retried start reuses it."""
    described = _read_cluster_file(root)
    if described is not None:
        if described["node_ids"] != node_ids:
            raise LocalKafkaError(
                f"--brokers: {root} holds a cluster of nodes {described['node_ids']}, not {node_ids}; "
                "use another --data-dir or delete this one"
            )
        return str(described["cluster_id"])
    if (root / "meta.properties").exists() or (root / "kraft-logs").exists():
        raise LocalKafkaError(f"--brokers: {root} holds a single broker; use another --data-dir")
    root.mkdir(parents=True, exist_ok=True)
    cluster_id = new_cluster_id()
    partial = root / f"{CLUSTER_FILE}.partial"
    partial.write_text(json.dumps({"cluster_id": cluster_id, "node_ids": node_ids}, indent=2) + "\n")
    os.replace(partial, root / CLUSTER_FILE)
    return cluster_id


def _read_cluster_file(root: Path) -> dict[str, object] | None:
    path = root / CLUSTER_FILE
    if not path.exists():
        return None
    try:
        described = json.loads(path.read_text())
        described["node_ids"] = [int(node) for node in described["node_ids"]]
        str(described["cluster_id"])
    except (OSError, ValueError, TypeError, KeyError) as err:
        raise LocalKafkaError(f"{path} is unreadable ({err}); delete {root} if no broker runs") from err
    return described


__all__ = [
    "CLUSTER_FILE",
    "BrokerNotReadyError",
    "LaunchedBroker",
    "await_formed",
    "cluster_settings",
    "cluster_status",
    "member_dirs",
    "start_cluster",
    "stop_cluster",
]
