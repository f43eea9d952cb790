"""The single-machine demo's Spark: a Spark Connect server, started and warmed while the fleet warms up.

What ``docs/production.md`` recommends for a quick troubleshooting turnaround, shown by the demo: the
DAGs' analytics tasks are clients of one long-running server (``KIP714_SPARK_CONNECT_CONN_ID``), so no
task starts a JVM. A fresh server is slow for its first few windows (its JIT compiles, its caches fill:
``docs/benchmarks.md``), so the demo warms it on the fleet's first pushes, landed into a folder of its
own, during the fleet's warm-up: before the troubleshooting window, never during it.

Why not during the window, when the machine mostly waits: the window measures the clients' latencies,
and the orders clients (not the window's target) were flagged against their baselines more often when
Spark ran then: warming during the window, one run at ``nice 10`` had nine such latency anomalies and two
runs in the idle scheduling class none and four; warming before it, two runs had none and one warning; a
``spark-submit`` run none (2026-11-24, six runs; such max-latency series jitter by tens of ms anyway).
During the warm-up the load can only raise the baseline (thresholds are median + k x MAD of it), never a
window value. The server and the warm-up run in Linux's idle scheduling class (``chrt --idle``), so they
get only the CPU time the fleet's clients, the broker and Airflow leave; once the warm-up is over, the
server returns to the normal class (``to_normal_priority``) for the DAGs' analytics.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.settings import SPARK_CONNECT_CONN_ENV
from airflow_provider_kip714.spark.connect import REMOTE_ENV, connect_command
from kip714_dev.local_spark import connect
from kip714_dev.local_spark.connect import IDLE_PRIORITY, ConnectServerState
from spark_apps.package import DEFAULT_RULES, application_args

CONN_ID: Final = "kip714_demo_spark_connect"
WARMUP_FLAGS: Final = {"history": "1h", "min_history_buckets": "6", "baseline_for": "30s"}
"""The troubleshooting DAG's flags for a window (``kip714_dev.demo.runner.troubleshoot_conf``)."""
BUCKET: Final = "10s"


class DemoSparkServer:
    """Start the server in the background, warm it on the fleet's first pushes, stop it at the end."""

    def __init__(self, work_dir: Path, kafka_command: list[str]) -> None:
        self.root = work_dir / "spark-connect"
        self.warmup_dir = work_dir / "spark-warmup"
        self.kafka_command = kafka_command
        """``kip714 ... --bootstrap-server B`` prefix: how the warm-up lands the fleet's pushes."""
        self.state: ConnectServerState | None = None
        self.error: BaseException | None = None
        self.walls: list[float] = []
        self._started = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the JVM without waiting for it (it boots while the fleet starts)."""
        connect.stop(self.root)  # a previous demo's, if it crashed
        shutil.rmtree(self.warmup_dir, ignore_errors=True)
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

    def warm_until(self, since: datetime, deadline: float) -> None:
        """In the background: land the fleet's pushes since ``since``, then run the pipeline over them
        until the next run would end after ``deadline`` (``time.monotonic()``; the first always runs)."""
        self._thread = threading.Thread(
            target=self._warm, args=(since, deadline), name="spark-connect-warmup", daemon=True
        )
        self._thread.start()

    def _warm(self, since: datetime, deadline: float) -> None:
        try:
            state = self._wait()
            until = datetime.now(UTC).replace(microsecond=0)
            landing, analytics = self.warmup_dir / "landing", self.warmup_dir / "analytics"
            self._land(landing, until)
            start = since.replace(second=since.second - since.second % 10, microsecond=0)
            args = application_args(
                str(landing),
                str(analytics),
                start.isoformat(),
                until.isoformat(),
                BUCKET,
                rules=str(DEFAULT_RULES),
                **WARMUP_FLAGS,
            )
            while not self.walls or time.monotonic() + self.walls[-1] < deadline:
                shutil.rmtree(analytics, ignore_errors=True)
                began = time.monotonic()
                self._client(connect_command("pipeline", args), state.url)
                self.walls.append(round(time.monotonic() - began, 1))
        except BaseException as err:  # the DAGs still run (on a colder server): said in summary()
            self.error = err

    def to_normal_priority(self) -> None:
        """Move every thread of the server back to the normal class, once the warm-up is over: in the
        idle class the window's analytics got only what the fleet and the broker left."""
        state = self._wait()
        command = ["chrt", "--other", "--all-tasks", "--pid", "0", str(state.pid)]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=30)

    def _land(self, landing: Path, until: datetime) -> None:
        command = [*self.kafka_command, "--out", str(landing), "--until", until.isoformat(), "--json"]
        subprocess.run(_idle(command), check=True, capture_output=True, text=True, timeout=120)

    def _client(self, command: list[str], url: str) -> None:
        log = self.warmup_dir / "warmup.log"
        with log.open("a") as out:
            completed = subprocess.run(
                _idle(command), stdout=out, stderr=subprocess.STDOUT, env={**os.environ, REMOTE_ENV: url}
            )
        if completed.returncode != 0:
            raise Kip714Error(f"warm-up run failed (exit {completed.returncode}); see {log}")

    def summary(self) -> str:
        """One line on the warm-up, once it is over (waits for a run still in flight)."""
        if self._thread is not None:
            self._thread.join(timeout=timedelta(minutes=3).total_seconds())
        runs = ", ".join(f"{wall:.1f} s" for wall in self.walls) or "none"
        failed = f"; it stopped early: {self.error}" if self.error else ""
        return f"Spark Connect warm-up run(s) on the fleet's first pushes: {runs}{failed}"

    def stop(self) -> None:
        connect.stop(self.root)


def _idle(command: list[str]) -> list[str]:
    return [*IDLE_PRIORITY, *command]
