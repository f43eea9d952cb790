"""A long-running Spark Connect server on 127.0.0.1: the JVM the analytics steps run in, started once.

``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer`` (what Spark's
``sbin/start-connect-server.sh`` runs; pyspark's pip package ships the server jar but not the script),
on ``local[N]`` or a standalone master. The DAGs then run the apps as Python clients
(``KIP714_SPARK_CONNECT_CONN_ID``, ``airflow_provider_kip714.spark.connect``): no task starts a JVM.

The server gets the DAGs' launch settings (``PERFORMANCE_CONF``: the code cache sized for every app's
classes, class names without stage ids, the throughput collector) with the JIT's default thresholds:
those suit a JVM that lives for days, where the raised ones (``JIT_OPTIONS``) and the troubleshooting
window's quick compiler suit one that lives for one run.
Like the standalone daemons, it is recognised by its properties file on its command line.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from kip714_dev.errors import LocalKafkaError
from kip714_dev.jvm_daemon import launch, log_tail, running_pid, terminate
from kip714_dev.local_kafka.ports import free_ports
from kip714_dev.local_spark.cluster import HOST, spark_class
from spark_apps.package import PERFORMANCE_CONF

IDLE_PRIORITY: Final = ("chrt", "--idle", "0")
"""Command prefix: run in the ``SCHED_IDLE`` class (threads the JVM starts inherit it)."""
SERVER_CLASS: Final = "org.apache.spark.sql.connect.service.SparkConnectServer"
READY_TIMEOUT_S: Final = 120.0
STOP_TIMEOUT_S: Final = 20.0
SERVER_CONF: Final = {
    **PERFORMANCE_CONF,
    # a long-lived JVM: the JIT's default thresholds (JIT_OPTIONS delay C2 for few-minute apps)
    # metaspace: Janino's and Spark's classes keep arriving; growing past the default first threshold
    # (about 21 MB) set off full collections run after run
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC -XX:MetaspaceSize=512m",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
    # a long-lived driver: a heap with room (at the default 1g, a warm server ran 7 full GCs, 3.1 s, per
    # window with its old generation 93 % full) and bounded job history (kept even with the UI off)
    "spark.driver.memory": "2g",
    "spark.ui.retainedJobs": "200",
    "spark.ui.retainedStages": "200",
    "spark.ui.retainedTasks": "2000",
    "spark.sql.ui.retainedExecutions": "100",
    # memory pages of 1 MB instead of the derived default (64 MB with this heap on 2 cores): every
    # broadcast join's hash relation holds at least one page in the driver until its broadcast is
    # cleaned, and a window's plans broadcast small tables dozens of times
    "spark.buffer.pageSize": "1m",
    # a client that dies without releasing its session (a killed task) frees it after this idle time,
    # not Spark's default hour: an unreleased session keeps its cached tables and plans
    "spark.connect.session.manager.defaultSessionTimeout": "15min",
}


@dataclass(frozen=True)
class ConnectServerState:
    url: str
    """``sc://127.0.0.1:PORT``: what a ``spark_connect`` connection or ``--remote`` takes."""
    port: int
    pid: int
    master: str
    data_dir: str
    started_at: str

    def as_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def _files(root: Path) -> tuple[Path, Path, Path, Path]:
    """(properties file = marker, pid file, console log, state file)."""
    return (
        root / "connect.properties",
        root / "connect.pid",
        root / "logs" / "connect.log",
        root / "connect.json",
    )


def status(data_dir: Path) -> ConnectServerState | None:
    root = data_dir.resolve()
    properties, pid_file, _, state_file = _files(root)
    if not state_file.exists() or running_pid(pid_file, str(properties)) is None:
        return None
    state = ConnectServerState(**json.loads(state_file.read_text()))
    return state if _listening(state.port) else None


def _listening(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1):
            return True
    except OSError:
        return False


def start(
    data_dir: Path, master: str = "local[2]", extra_classpath: str | None = None, idle_priority: bool = False
) -> ConnectServerState:
    """Start the server (or return the running one); returns once it accepts connections.

    ``idle_priority`` runs it in Linux's idle scheduling class (``chrt --idle``): it only gets CPU time
    that nothing else on the machine wants.
    """
    root = data_dir.resolve()
    running = status(root)
    if running is not None:
        return running
    stop(root)
    root.mkdir(parents=True, exist_ok=True)
    properties, pid_file, log, state_file = _files(root)
    (port,) = free_ports(1)
    conf = {
        **SERVER_CONF,
        "spark.master": master,
        "spark.connect.grpc.binding.address": HOST,
        "spark.connect.grpc.binding.port": str(port),
    }
    if extra_classpath:
        conf["spark.driver.extraClassPath"] = conf["spark.executor.extraClassPath"] = extra_classpath
    properties.write_text("".join(f"{key} {value}\n" for key, value in conf.items()))
    submit = spark_class().parent / "spark-submit"
    command = [*IDLE_PRIORITY] if idle_priority else []
    command += [str(submit), "--properties-file", str(properties), "--class", SERVER_CLASS]
    command += ["--name", "kip714-connect", "spark-internal"]
    env = {"SPARK_LOCAL_IP": HOST, "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1"}
    process = launch(command, cwd=root, console_log=log, pid_file=pid_file, env=env)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            stop(root)
            why = (
                "exited"
                if process.returncode is not None
                else f"not listening within {READY_TIMEOUT_S:.0f} s"
            )
            raise LocalKafkaError(f"Spark Connect server {why}; see {log}\n{log_tail(log)}")
        time.sleep(0.5)
    state = ConnectServerState(
        url=f"sc://{HOST}:{port}",
        port=port,
        pid=process.pid,
        master=master,
        data_dir=str(root),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    state_file.write_text(state.as_json() + "\n")
    return state


def stop(data_dir: Path, timeout_s: float = STOP_TIMEOUT_S) -> list[int]:
    """Stop this data dir's server; returns the PIDs stopped."""
    root = data_dir.resolve()
    properties, pid_file, _, state_file = _files(root)
    pid = running_pid(pid_file, str(properties))
    if pid is not None:
        terminate(pid, str(properties), timeout_s)
    pid_file.unlink(missing_ok=True)
    state_file.unlink(missing_ok=True)
    return [pid] if pid is not None else []
