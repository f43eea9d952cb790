"""The cluster demo's broker failure: SIGKILL one of three brokers in the middle of the troubleshooting
window, start it again, and show from the landed data that the window carried on.

librdkafka sends its pushes to one broker it picks; when that broker dies it picks another (KIP-714),
and the plugin on every broker writes to the replicated telemetry topic, so the window keeps landing.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.telemetry.landing_zone import LandingZone
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

DOWN_S = 15.0


@dataclass
class BrokerFailure:
    """When a broker was killed and back, filled in by the thread ``fail_a_broker_mid_window`` starts."""

    node_id: int
    killed_at: datetime | None = None
    restarted_at: datetime | None = None
    errors: list[str] = field(default_factory=list)

    def lines(self, area: RunArea, topic: str) -> list[str]:
        """What happened, and what the window landed before, during and after it, per broker."""
        if self.killed_at is None or self.restarted_at is None:
            return [
                f"broker {self.node_id} was not failed: {'; '.join(self.errors) or 'the window never opened'}"
            ]
        raw = LandingZone(area.landing, topic).read_table("raw", columns=["timestamp", "headers"])
        phases: dict[str, Counter[str]] = {"before": Counter(), "down": Counter(), "after": Counter()}
        for moment, headers in zip(
            raw.column("timestamp").to_pylist(), raw.column("headers").to_pylist(), strict=True
        ):
            labels = dict(headers or [])
            if labels.get(Header.TYPE) != "client":
                continue
            phase = "before" if moment < self.killed_at else "down" if moment < self.restarted_at else "after"
            phases[phase][labels.get(Header.NODE_ID, "?")] += 1
        down_s = (self.restarted_at - self.killed_at).total_seconds()
        return [
            f"broker {self.node_id} SIGKILLed at {self.killed_at:%H:%M:%S}, started again at "
            f"{self.restarted_at:%H:%M:%S} ({down_s:.0f} s down, ready included)",
            *(
                f"pushes landed {name}: {sum(counts.values())} "
                f"(by broker: {', '.join(f'{node}: {n}' for node, n in sorted(counts.items())) or 'none'})"
                for name, counts in (
                    ("before the kill", phases["before"]),
                    ("while it was down", phases["down"]),
                    ("after its restart", phases["after"]),
                )
            ),
            "the window carried on: its landing, analytics and report ran with a broker down"
            if phases["down"] or phases["after"]
            else "nothing landed after the kill: the window did NOT carry on",
        ]


def fail_a_broker_mid_window(
    cluster: LocalKafkaCluster,
    admin: ClientMetricsAdmin,
    window_s: float,
    node_id: int = 2,
) -> tuple[threading.Thread, BrokerFailure]:
    """A thread that waits for the window's subscription, lets it run a third of the window, kills
    ``node_id``, keeps it down ``DOWN_S`` seconds and starts it again, printing each step."""
    failure = BrokerFailure(node_id)
    before = set(admin.list_names())

    def run() -> None:
        try:
            deadline = time.monotonic() + 300
            while (
                time.monotonic() < deadline
                and not {n for n in admin.list_names() if "troubleshoot" in n} - before
            ):
                time.sleep(1)
            time.sleep(window_s / 3)
            failure.killed_at = datetime.now(UTC)
            pid = cluster.broker(node_id).pid
            print(f"  [{failure.killed_at:%H:%M:%S}] SIGKILL broker {node_id} (pid {pid})", flush=True)
            cluster.kill(node_id)
            time.sleep(DOWN_S)
            cluster.start_node(node_id)
            failure.restarted_at = datetime.now(UTC)
            pid = cluster.broker(node_id).pid
            print(f"  [{failure.restarted_at:%H:%M:%S}] broker {node_id} is back (pid {pid})", flush=True)
        except Exception as err:  # reported in the results, never a hung demo
            failure.errors.append(f"{type(err).__name__}: {err}")

    thread = threading.Thread(target=run, name="kip714-demo-broker-failure", daemon=True)
    thread.start()
    return thread, failure
