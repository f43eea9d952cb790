"""Start and stop the demo's fleet of real Kafka clients, each its own process with its own log."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_kip714.exceptions import Kip714Error
from kip714_dev.client_quotas import set_client_quota
from kip714_dev.demo.fleet_client import ClientBehaviour, ClientSpec

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[3]
JAVA_CLIENT_JAR = REPO_ROOT / "tests" / "java_client" / "target" / "kip714-java-client.jar"
JAVA_CLIENT_MAIN = "io.kip714.javaclient.TelemetryClient"
BURSTY_PRODUCER_BYTE_RATE = 100_000.0
DEMO_TELEMETRY_MAX_BYTES = 6144
"""The demo broker's ``telemetry.max.bytes``: librdkafka pushes (about 1 to 2 KB decompressed) fit; the
Java producer's full metric set (about 10 KB) does not, so the broker refuses its first push and the Java
client switches its telemetry off (a client only the broker's instance count shows)."""
KILLED_AFTER_S = 60.0
"""The killed producer's lifetime: it pushes for a while, then dies by SIGKILL mid-run."""


def default_fleet(prefix: str = "demo") -> list[ClientSpec]:
    """Two consumer groups (one slowing member among three audit consumers: a peer anomaly), steady
    producers, one throttled bursty producer, a Java producer whose pushes are too large for the demo
    broker, and a producer killed with SIGKILL mid-run (the two silent clients)."""
    orders, audit = f"{prefix}-orders", f"{prefix}-audit"
    return [
        ClientSpec(f"{prefix}-orders-producer-1", ClientBehaviour.STEADY_PRODUCER, orders),
        ClientSpec(f"{prefix}-orders-producer-2", ClientBehaviour.STEADY_PRODUCER, orders),
        # One request in flight: while the broker throttles it, records wait in the queue (seconds).
        ClientSpec(
            f"{prefix}-payments-producer",
            ClientBehaviour.BURSTY_PRODUCER,
            orders,
            messages_per_s=10,
            extra_config={"max.in.flight.requests.per.connection": 1},
        ),
        ClientSpec(
            f"{prefix}-orders-consumer-1", ClientBehaviour.STEADY_CONSUMER, orders, f"{prefix}-orders-app"
        ),
        ClientSpec(
            f"{prefix}-orders-consumer-2", ClientBehaviour.STEADY_CONSUMER, orders, f"{prefix}-orders-app"
        ),
        ClientSpec(f"{prefix}-audit-consumer-1", ClientBehaviour.STEADY_CONSUMER, orders, audit),
        ClientSpec(f"{prefix}-audit-consumer-2", ClientBehaviour.STEADY_CONSUMER, orders, audit),
        ClientSpec(f"{prefix}-audit-consumer-slow", ClientBehaviour.SLOW_CONSUMER, orders, audit),
        ClientSpec(f"{prefix}-java-producer", ClientBehaviour.JAVA_PRODUCER, orders),
        ClientSpec(
            f"{prefix}-killed-producer", ClientBehaviour.STEADY_PRODUCER, orders, kill_after_s=KILLED_AFTER_S
        ),
    ]


def expected_pushers(specs: Sequence[ClientSpec]) -> list[str]:
    """Client ids whose pushes land: all but the Java producer (``DEMO_TELEMETRY_MAX_BYTES``)."""
    return [spec.client_id for spec in specs if spec.behaviour is not ClientBehaviour.JAVA_PRODUCER]


@dataclass
class RunningClient:
    spec: ClientSpec
    process: subprocess.Popen[bytes]
    log_path: Path


class ClientFleet:
    """Context manager: start every client, stop them all (SIGTERM, so each sends its final push)."""

    def __init__(
        self, bootstrap: str, specs: Sequence[ClientSpec], log_dir: Path, max_seconds: float
    ) -> None:
        self.bootstrap = bootstrap
        self.specs = list(specs)
        self.log_dir = log_dir
        self.max_seconds = max_seconds
        self.clients: list[RunningClient] = []

    def __enter__(self) -> ClientFleet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for spec in self.specs:
            if spec.behaviour is ClientBehaviour.BURSTY_PRODUCER:
                set_client_quota(
                    self.bootstrap, spec.client_id, "producer_byte_rate", BURSTY_PRODUCER_BYTE_RATE
                )
            log_path = self.log_dir / f"{spec.client_id}.log"
            with log_path.open("wb") as log_file:
                process = subprocess.Popen(
                    self._command(spec),
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            self.clients.append(RunningClient(spec, process, log_path))
            log.info("started %-32s %-16s pid %d", spec.client_id, spec.behaviour, process.pid)

    def _command(self, spec: ClientSpec) -> list[str]:
        if spec.behaviour is ClientBehaviour.JAVA_PRODUCER:
            if not JAVA_CLIENT_JAR.is_file():
                raise Kip714Error(f"Java client harness missing: {JAVA_CLIENT_JAR} (run: make java-client)")
            return [
                "java",
                "-cp",
                str(JAVA_CLIENT_JAR),
                JAVA_CLIENT_MAIN,
                "--bootstrap-server",
                self.bootstrap,
                "--client-id",
                spec.client_id,
                "--topic",
                spec.topic,
                "--seconds",
                str(int(self.max_seconds)),
                "--mode",
                "producer",
            ]
        return [
            sys.executable,
            "-m",
            "kip714_dev.demo.fleet_client",
            "--bootstrap-server",
            self.bootstrap,
            "--spec",
            spec.to_json(),
        ]

    def check_alive(self) -> list[str]:
        """Client ids whose process has exited early (not those meant to die by SIGKILL, once they did)."""
        return [
            c.spec.client_id
            for c in self.clients
            if c.process.poll() is not None
            and not (c.spec.kill_after_s is not None and c.process.returncode == -signal.SIGKILL)
        ]

    def killed(self) -> list[tuple[str, int]]:
        """(client id, pid) of the clients killed with SIGKILL so far (for the demo's output)."""
        return [
            (c.spec.client_id, c.process.pid)
            for c in self.clients
            if c.spec.kill_after_s is not None and c.process.poll() == -signal.SIGKILL
        ]

    def stop(self, timeout_s: float = 20.0) -> None:
        for client in self.clients:
            if client.process.poll() is None:
                os.kill(client.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for client in self.clients:
            remaining = max(0.1, deadline - time.monotonic())
            try:
                client.process.wait(remaining)
            except subprocess.TimeoutExpired:
                log.warning(
                    "%s did not stop in time; killing pid %d", client.spec.client_id, client.process.pid
                )
                client.process.kill()
                client.process.wait()
        for spec in self.specs:
            if spec.behaviour is ClientBehaviour.BURSTY_PRODUCER:
                try:
                    set_client_quota(self.bootstrap, spec.client_id, "producer_byte_rate", None)
                except Kip714Error as err:
                    log.warning("could not remove the quota of %s: %s", spec.client_id, err)
        self.clients.clear()
