"""The single-machine demo's Spark: a Spark Connect server, started while the fleet starts.

What ``docs/production.md`` recommends for a quick troubleshooting turnaround, shown by the demo: the
DAGs' analytics tasks are clients of one long-running server (``KIP714_SPARK_CONNECT_CONN_ID``), so no
task starts a JVM. A fresh server is slow for its first few runs (its JIT compiles, its caches fill:
``docs/benchmarks.md``); live mode's cycles (``demo/live.py``, ``run_app``) run on it before the
troubleshooting window and warm it, never during the window.

Why not during the window, when the machine mostly waits: the window measures the clients' latencies,
and the orders clients (not the window's target) were flagged against their baselines more often when
Spark ran then: warming during the window, one run at ``nice 10`` had nine such latency anomalies and two
runs in the idle scheduling class none and four; warming before it, two runs had none and one warning; a
``spark-submit`` run none (2026-11-24, six runs; such max-latency series jitter by tens of ms anyway).
Before the window the load can only raise the baseline (thresholds are median + k x MAD of it), never a
window value. The server starts in Linux's idle scheduling class (``chrt --idle``), so while the fleet
starts it gets only the CPU time the clients, the broker and Airflow leave; before the first live cycle
it returns to the normal class (``to_normal_priority``).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Final

from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.settings import SPARK_CONNECT_CONN_ENV
from airflow_provider_kip714.spark.connect import REMOTE_ENV, connect_command
from kip714_dev.local_spark import connect
from kip714_dev.local_spark.connect import ConnectServerState

CONN_ID: Final = "kip714_demo_spark_connect"


class DemoSparkServer:
    """Start the server in the background, run our apps on it, stop it at the end."""

    def __init__(self, work_dir: Path) -> None:
        self.root = work_dir / "spark-connect"
        self.state: ConnectServerState | None = None
        self.error: BaseException | None = None
        self._started = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the JVM without waiting for it (it boots while the fleet starts)."""
        connect.stop(self.root)  # a previous demo's, if it crashed
        self._thread = threading.Thread(target=self._boot, name="spark-connect-boot", daemon=True)
        self._thread.start()

    def _boot(self) -> None:
        try:
            self.state = connect.start(self.root, idle_priority=True)
        except BaseException as err:  # reported by airflow_env(), in the main thread
            self.error = err
        finally:
            self._started.set()

    def airflow_env(self) -> dict[str, str]:
        """The Airflow environment that makes the DAGs clients of this server (waits for it to listen)."""
        state = self._wait()
        host, port = state.url.removeprefix("sc://").split(":")
        return {
            f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps(
                {"conn_type": "spark_connect", "host": host, "port": int(port)}
            ),
            SPARK_CONNECT_CONN_ENV: CONN_ID,
        }

    def _wait(self) -> ConnectServerState:
        self._started.wait(timeout=connect.READY_TIMEOUT_S + 10)
        if self.error is not None or self.state is None:
            raise Kip714Error(f"the demo's Spark Connect server did not start: {self.error}")
        return self.state

    def to_normal_priority(self) -> None:
        """Move every thread of the server back to the normal class before live mode's first cycle: in
        the idle class the DAGs' analytics got only what the fleet and the broker left."""
        state = self._wait()
        command = ["chrt", "--other", "--all-tasks", "--pid", "0", str(state.pid)]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=30)

    def run_app(self, app: str, args: list[str], log: Path) -> None:
        """Run one of our Spark apps as a client of this server (normal priority), its output to ``log``."""
        state = self._wait()
        with log.open("a") as out:
            completed = subprocess.run(
                connect_command(app, args),
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, REMOTE_ENV: state.url},
            )
        if completed.returncode != 0:
            raise Kip714Error(
                f"{app} failed on the Spark Connect server (exit {completed.returncode}); see {log}"
            )

    def stop(self) -> None:
        connect.stop(self.root)
