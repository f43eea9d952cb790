"""A Spark standalone cluster on 127.0.0.1: one Master and N Workers, each its own JVM (``spark-class``).

pyspark's pip package has ``bin/spark-class`` but no ``sbin/`` scripts, so the daemons start the way
those scripts would: ``spark-class org.apache.spark.deploy.master.Master`` and
``...deploy.worker.Worker spark://HOST:PORT``. ``start`` is idempotent (it returns the running
cluster's state) and returns once the master reports every worker ALIVE. Each daemon gets its own
``--properties-file`` under the data dir: that path on its command line is how ``stop`` recognises it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from kip714_dev.errors import LocalKafkaError
from kip714_dev.jvm_daemon import launch, log_tail, running_pid, terminate
from kip714_dev.local_kafka.ports import free_ports
from kip714_dev.local_spark.s3a_jars import s3a_classpath

HOST: Final = "127.0.0.1"
MASTER_CLASS: Final = "org.apache.spark.deploy.master.Master"
WORKER_CLASS: Final = "org.apache.spark.deploy.worker.Worker"
DEFAULT_WORKERS: Final = 2
MAX_WORKERS: Final = 16  # each worker is a JVM with two ports: more would exhaust a dev machine
WORKER_MEMORY: Final = "1536m"
READY_TIMEOUT_S: Final = 120.0
STOP_TIMEOUT_S: Final = 20.0


@dataclass(frozen=True)
class LocalSparkState:
    master_url: str
    web_ui_url: str
    master_pid: int
    worker_pids: list[int]
    s3a_classpath: str
    data_dir: str
    started_at: str

    def as_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def spark_class() -> Path:
    """The venv's ``spark-class`` (beside this Python, else pyspark's own ``bin/``)."""
    beside = Path(sys.executable).parent / "spark-class"
    if beside.exists():
        return beside
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _daemon_files(root: Path, role: str) -> tuple[Path, Path, Path]:
    """(properties file = marker, pid file, log) of one daemon."""
    return root / f"{role}.properties", root / f"{role}.pid", root / "logs" / f"{role}.log"


def _roles(root: Path) -> list[str]:
    return ["master", *sorted(path.stem for path in root.glob("worker-*.properties"))]


def status(data_dir: Path) -> LocalSparkState | None:
    root = data_dir.resolve()
    state_file = root / "spark-state.json"
    if not state_file.exists():
        return None
    state = LocalSparkState(**json.loads(state_file.read_text()))
    pids = [running_pid(pid, str(props)) for props, pid, _ in (_daemon_files(root, r) for r in _roles(root))]
    if any(pid is None for pid in pids) or _alive_workers(state.web_ui_url) < len(state.worker_pids):
        return None
    return state


def _alive_workers(web_ui_url: str) -> int:
    try:
        with urllib.request.urlopen(f"{web_ui_url}/json/", timeout=3) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except (OSError, ValueError):
        return -1


def _start_daemon(root: Path, role: str, main: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    properties, pid_file, log = _daemon_files(root, role)
    properties.write_text("spark.ui.showConsoleProgress false\n")
    command = [str(spark_class()), *main[:1], "--properties-file", str(properties), *main[1:]]
    return launch(command, cwd=root, console_log=log, pid_file=pid_file, env=env)


def start(data_dir: Path, workers: int = DEFAULT_WORKERS) -> LocalSparkState:
    """Start the master and ``workers`` workers (or return the running ones); wait until all are ALIVE."""
    if not 1 <= workers <= MAX_WORKERS:
        raise LocalKafkaError(f"--workers: must be between 1 and {MAX_WORKERS} (got {workers})")
    root = data_dir.resolve()
    running = status(root)
    if running is not None:
        return running
    stop(root)  # a half-started or half-dead cluster: clean up before starting again
    root.mkdir(parents=True, exist_ok=True)
    classpath = (
        s3a_classpath()
    )  # resolved once; before any JVM starts, so a download is not a start-up timeout
    port, ui_port, *worker_ports = free_ports(2 + workers)
    env = {"SPARK_LOCAL_IP": HOST, "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1"}
    master = _start_daemon(
        root, "master", [MASTER_CLASS, "--host", HOST, "--port", str(port), "--webui-port", str(ui_port)], env
    )
    master_url, web_ui_url = f"spark://{HOST}:{port}", f"http://{HOST}:{ui_port}"
    daemons = {"master": master}
    for index, worker_ui in enumerate(worker_ports):
        work_dir = root / f"work-{index}"
        work_dir.mkdir(exist_ok=True)
        main = [WORKER_CLASS, "--host", HOST, "--cores", "1", "--memory", WORKER_MEMORY]
        main += ["--webui-port", str(worker_ui), "--work-dir", str(work_dir), master_url]
        daemons[f"worker-{index}"] = _start_daemon(root, f"worker-{index}", main, env)
    state = LocalSparkState(
        master_url=master_url,
        web_ui_url=web_ui_url,
        master_pid=master.pid,
        worker_pids=[process.pid for role, process in daemons.items() if role != "master"],
        s3a_classpath=classpath,
        data_dir=str(root),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    _wait_until_ready(root, state, daemons)
    (root / "spark-state.json").write_text(state.as_json() + "\n")
    return state


def _wait_until_ready(
    root: Path, state: LocalSparkState, daemons: dict[str, subprocess.Popen[bytes]]
) -> None:
    """Poll the master's JSON until every worker is ALIVE; a daemon that exits fails the start at once."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while _alive_workers(state.web_ui_url) < len(state.worker_pids):
        dead = [role for role, process in daemons.items() if process.poll() is not None]
        if dead or time.monotonic() > deadline:
            log = _daemon_files(root, dead[0] if dead else "master")[2]
            stop(root)
            why = (
                f"{dead[0]} exited" if dead else f"not every worker was ALIVE within {READY_TIMEOUT_S:.0f} s"
            )
            raise LocalKafkaError(f"local Spark: {why}; see {log}\n{log_tail(log)}")
        time.sleep(0.5)


def stop(data_dir: Path, timeout_s: float = STOP_TIMEOUT_S) -> list[int]:
    """Stop every daemon of this data dir (workers first); returns the PIDs stopped."""
    root = data_dir.resolve()
    stopped = []
    for role in reversed(_roles(root)):
        properties, pid_file, _ = _daemon_files(root, role)
        pid = running_pid(pid_file, str(properties))
        if pid is not None:
            terminate(pid, str(properties), timeout_s)
            stopped.append(pid)
        pid_file.unlink(missing_ok=True)
        if role != "master":
            properties.unlink(missing_ok=True)
    (root / "spark-state.json").unlink(missing_ok=True)
    return stopped
