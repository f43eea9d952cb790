"""A live Airflow 3 from the venv, driven only through its REST API v2: production's shape, for tests.

``airflow dags test`` runs every task in one process and triggers in-line; production runs a scheduler
(LocalExecutor: each task in its own process), a dag-processor, a triggerer and an API server, and
talks to them over the Execution API. Behaviour that depends on that split (deferral to the
triggerer, a task process killed from outside, the scheduler's handling of executor events) is tested
here:

    with LiveAirflow.start(tmp_path, env={"AIRFLOW_CONN_KAFKA_DEFAULT": ...}) as airflow:
        api = airflow.api
        api.wait_for_dags(["kip714_troubleshoot"])
        api.unpause("kip714_troubleshoot")
        run = api.trigger("kip714_troubleshoot", conf={...})
        final = api.wait_for_run("kip714_troubleshoot", run["dag_run_id"], timeout_s=300)

Everything listens on 127.0.0.1 only: the API server on a free port, the scheduler and triggerer with
``--skip-serve-logs`` (their log servers would listen on every interface); task logs are read from the
shared ``AIRFLOW_HOME/logs`` by the API server. SQLite, one home per instance (a temporary
directory), each component its own process group, stopped by PID on exit; their logs stay in the
home and the tails are printed when the block raises. ``LIVE_AIRFLOW_START_TIMEOUT_S`` bounds the
start. Connections and Variables go in as ``AIRFLOW_CONN_*`` / ``AIRFLOW_VAR_*`` in ``env``.
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx
import psutil
from kip714_dev.local_kafka.ports import free_port_in

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
DAGS: Final = REPO_ROOT / "dags"
ADMIN_USER: Final = "admin"
COMPONENTS: Final = ("scheduler", "dag-processor", "triggerer", "api-server")
START_TIMEOUT_S: Final = float(os.environ.get("LIVE_AIRFLOW_START_TIMEOUT_S", "240"))
STOP_TIMEOUT_S: Final = 30.0
TERMINAL_RUN_STATES: Final = frozenset({"success", "failed"})
LOG_TAIL_LINES: Final = 60
EVENT_COLUMNS: Final = (
    "id",
    "asset_id",
    "extra",
    "source_dag_id",
    "source_run_id",
    "source_task_id",
    "timestamp",
)
"""What ``LiveAirflow.asset_events`` reads of an event from the metadata database (``extra`` third)."""
REQUEST_TIMEOUT_S: Final = 120.0
"""Generous: on a loaded 2-core machine the one API server process (SQLite: one writer at a time) has
been seen silent for over 30 s while tasks started."""


class AirflowApiError(RuntimeError):
    """The REST API answered with an error status; the message holds the method, path and body."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


@dataclass
class AirflowApi:
    """A small REST API v2 client: a JWT from ``POST /auth/token``, renewed when it is refused."""

    base_url: str
    username: str
    password: str
    _token: str | None = None
    _http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=REQUEST_TIMEOUT_S))

    def token(self) -> str:
        answer = self._http.post(
            f"{self.base_url}/auth/token", json={"username": self.username, "password": self.password}
        )
        if answer.status_code >= 300:
            raise AirflowApiError(
                f"POST /auth/token -> {answer.status_code}: {answer.text[:500]}", answer.status_code
            )
        return str(answer.json()["access_token"])

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """``method path`` with the bearer token; the decoded JSON (or text for non-JSON answers).

        An expired token is renewed once; a GET whose kept-alive connection the server dropped is sent once
        more on a new one.
        """
        given_headers = kwargs.pop("headers", {})
        for attempt in range(2):
            if self._token is None:
                self._token = self.token()
            try:
                headers = {**given_headers, "Authorization": f"Bearer {self._token}"}
                answer = self._http.request(method, f"{self.base_url}{path}", headers=headers, **kwargs)
            except (httpx.ReadError, httpx.RemoteProtocolError):
                # the server drops a kept-alive connection after an unhandled error: a GET is asked again
                if method != "GET" or attempt:
                    raise
                continue
            if answer.status_code == 401 and attempt == 0:  # expired: one fresh token
                self._token = None
                continue
            if answer.status_code >= 300:
                raise AirflowApiError(
                    f"{method} {path} -> {answer.status_code}: {answer.text[:2000]}", answer.status_code
                )
            if "json" in answer.headers.get("content-type", ""):
                return answer.json()
            return answer.text
        raise AssertionError("unreachable")

    # --- DAGs ---------------------------------------------------------------------------------------

    def import_errors(self) -> list[dict[str, Any]]:
        """Every import error the dag-processor recorded (``GET /api/v2/importErrors``)."""
        return list(self.request("GET", "/api/v2/importErrors", params={"limit": 100})["import_errors"])

    def dag_ids(self) -> set[str]:
        return {dag["dag_id"] for dag in self.request("GET", "/api/v2/dags", params={"limit": 100})["dags"]}

    def wait_for_dags(self, dag_ids: Iterable[str], timeout_s: float = 180.0) -> None:
        """Until the dag-processor has serialised every DAG in ``dag_ids``; fails early on an import error."""
        wanted = set(dag_ids)
        deadline = time.monotonic() + timeout_s
        while True:
            missing = wanted - self.dag_ids()
            if not missing:
                return
            errors = self.import_errors()
            if errors or time.monotonic() > deadline:
                raise AssertionError(f"DAGs not parsed: {sorted(missing)}; import errors: {errors}")
            time.sleep(1)

    def unpause(self, dag_id: str) -> None:
        self.request("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": False})

    def pause(self, dag_id: str) -> None:
        self.request("PATCH", f"/api/v2/dags/{dag_id}", json={"is_paused": True})

    # --- runs ---------------------------------------------------------------------------------------

    def trigger(
        self, dag_id: str, conf: Mapping[str, Any] | None = None, logical_date: str | None = None
    ) -> dict[str, Any]:
        """A new run of ``dag_id`` with ``conf``; ``logical_date`` None means "no logical date" (manual)."""
        body: dict[str, Any] = {"conf": dict(conf or {}), "logical_date": logical_date}
        return dict(self.request("POST", f"/api/v2/dags/{dag_id}/dagRuns", json=body))

    def dag_run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}"))

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, dict[str, Any]]:
        """task_id -> the task instance (state, try_number, ...) of the run."""
        answer = self.request(
            "GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 100}
        )
        return {ti["task_id"]: ti for ti in answer["task_instances"]}

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        return {task: ti["state"] for task, ti in self.task_instances(dag_id, run_id).items()}

    def tries(self, dag_id: str, run_id: str, task_id: str) -> list[dict[str, Any]]:
        """Every recorded try of a task instance (a deferral shows as a try in state ``deferred``
        while it waits; the history of earlier tries shows retries)."""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/tries"
        return list(self.request("GET", path)["task_instances"])

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
        value = self.request("GET", path, params={"deserialize": True, "stringify": False})["value"]
        return value

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int) -> str:
        """The task's log of ``try_number`` as text (the API server reads it from the shared log folder)."""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}"
        answer = self.request(
            "GET", path, params={"full_content": True}, headers={"Accept": "application/json"}
        )
        content = answer.get("content", answer) if isinstance(answer, dict) else answer
        if isinstance(content, list):
            return "\n".join(
                str(line.get("event", line)) if isinstance(line, dict) else str(line) for line in content
            )
        return str(content)

    def wait_for_run(self, dag_id: str, run_id: str, timeout_s: float, poll_s: float = 2.0) -> dict[str, Any]:
        """Poll until the run is ``success`` or ``failed``; raises with the task states on timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            run = self.dag_run(dag_id, run_id)
            if run["state"] in TERMINAL_RUN_STATES:
                return run
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{dag_id} {run_id} still {run['state']} after {timeout_s} s: "
                    f"{self.task_states(dag_id, run_id)}"
                )
            time.sleep(poll_s)

    def wait_for_task_state(
        self,
        dag_id: str,
        run_id: str,
        task_id: str,
        states: Iterable[str],
        timeout_s: float,
        poll_s: float = 0.5,
    ) -> str:
        """Poll until the task instance reaches one of ``states``; returns it."""
        wanted = set(states)
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.task_states(dag_id, run_id).get(task_id)
            if state in wanted:
                return str(state)
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{dag_id}.{task_id} is {state}, not one of {sorted(wanted)}, after {timeout_s} s"
                )
            time.sleep(poll_s)

    def events(self, dag_id: str, run_id: str, task_id: str | None = None) -> list[dict[str, Any]]:
        """The audit log of a run, oldest first (``GET /api/v2/eventLogs``): every state a task instance
        reported through the Execution API is one event, so a deferral shows as an event ``deferred``."""
        params: dict[str, Any] = {"dag_id": dag_id, "run_id": run_id, "limit": 100, "order_by": "when"}
        if task_id is not None:
            params["task_id"] = task_id
        entries = self.request("GET", "/api/v2/eventLogs", params=params)["event_logs"]
        return [
            e
            for e in entries
            if e.get("run_id") == run_id and (task_id is None or e.get("task_id") == task_id)
        ]

    # --- assets -------------------------------------------------------------------------------------

    def asset_events(self, **params: Any) -> list[dict[str, Any]]:
        """``GET /api/v2/assets/events`` (filters such as ``asset_id``, ``source_dag_id``, ``limit``)."""
        return list(
            self.request("GET", "/api/v2/assets/events", params={"limit": 100, **params})["asset_events"]
        )

    def dag_runs(self, dag_id: str) -> list[dict[str, Any]]:
        """``GET /api/v2/dags/{dag_id}/dagRuns``: the DAG's runs, newest first."""
        body = self.request(
            "GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100, "order_by": "-run_after"}
        )
        return list(body["dag_runs"])

    def assets(self) -> list[dict[str, Any]]:
        return list(self.request("GET", "/api/v2/assets", params={"limit": 100})["assets"])

    def close(self) -> None:
        self._http.close()


@dataclass
class LiveAirflow:
    """Scheduler, dag-processor, triggerer and API server as separate processes over one SQLite home."""

    home: Path
    env: dict[str, str]
    base_url: str
    processes: dict[str, subprocess.Popen[bytes]]
    api: AirflowApi

    @classmethod
    @contextmanager
    def start(
        cls,
        home: Path,
        env: Mapping[str, str] | None = None,
        dags_folder: Path = DAGS,
        port: int | None = None,
    ) -> Iterator[LiveAirflow]:
        """Migrate a fresh SQLite database in ``home``, start the four components, wait for the API.

        ``env`` is added last (connections, Variables, ``AIRFLOW__SECTION__KEY`` overrides). Everything
        is stopped on exit; if the block raised, each component's log tail is printed first.
        """
        airflow = cls._launch(home, dict(env or {}), dags_folder, port)
        try:
            yield airflow
        except BaseException:
            print(airflow.log_tails(), file=sys.stderr, flush=True)
            raise
        finally:
            airflow.stop()

    @classmethod
    def _launch(cls, home: Path, extra: dict[str, str], dags_folder: Path, port: int | None) -> LiveAirflow:
        home.mkdir(parents=True, exist_ok=True)
        port = port if port is not None else api_port()
        password = secrets.token_urlsafe(16)
        passwords = home / "passwords.json"
        passwords.write_text(json.dumps({ADMIN_USER: password}))
        env = live_environment(home, dags_folder, port, passwords)
        env.update(extra)
        binary = str(Path(sys.executable).parent / "airflow")
        with (home / "db-migrate.log").open("wb") as log:
            migrated = subprocess.run(
                [binary, "db", "migrate"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=300,
                check=False,
            )
        if migrated.returncode != 0:
            raise RuntimeError(
                f"airflow db migrate exited {migrated.returncode}:\n{_tail(home / 'db-migrate.log')}"
            )
        commands = {
            "scheduler": [binary, "scheduler", "--skip-serve-logs"],
            "dag-processor": [binary, "dag-processor"],
            "triggerer": [binary, "triggerer", "--skip-serve-logs"],
            "api-server": [binary, "api-server", "--host", "127.0.0.1", "--port", str(port)],
        }
        processes: dict[str, subprocess.Popen[bytes]] = {}
        base_url = f"http://127.0.0.1:{port}"
        airflow = cls(home, env, base_url, processes, AirflowApi(base_url, ADMIN_USER, password))
        try:
            for name, command in commands.items():
                with (home / f"{name}.log").open("ab") as log:
                    processes[name] = subprocess.Popen(
                        command,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                        preexec_fn=_terminate_with_parent,
                    )
            airflow._wait_until_healthy()
        except BaseException:
            print(airflow.log_tails(), file=sys.stderr, flush=True)
            airflow.stop()
            raise
        return airflow

    def _wait_until_healthy(self) -> None:
        """Until the API server answers and reports the scheduler, triggerer and dag-processor healthy."""
        deadline = time.monotonic() + START_TIMEOUT_S
        health: Any = None
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"airflow {name} exited with {process.returncode}")
            try:
                health = httpx.get(f"{self.base_url}/api/v2/monitor/health", timeout=5).json()
            except (httpx.HTTPError, ValueError):
                time.sleep(1)
                continue
            parts = ("metadatabase", "scheduler", "triggerer", "dag_processor")
            if all((health.get(part) or {}).get("status") == "healthy" for part in parts):
                return
            time.sleep(1)
        raise RuntimeError(f"live Airflow not healthy after {START_TIMEOUT_S} s: {health}")

    def kill(self, component: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """Send ``sig`` to one component's process group (e.g. to test a crash of the scheduler)."""
        process = self.processes[component]
        if process.poll() is None:
            os.killpg(process.pid, sig)

    def stop(self) -> None:
        """SIGTERM every component's process group (the API server first), SIGKILL what lingers.

        Each component was started in its own session, so its group holds its children. A task process
        is put in a group of its own by its supervisor, so every descendant is listed first (by PID,
        all started here) and killed last if it outlived the groups: a task or ``spark-submit`` that
        was running when the test ended does not outlive the test."""
        descendants: list[psutil.Process] = []
        for process in self.processes.values():
            with suppress(psutil.Error):
                descendants += psutil.Process(process.pid).children(recursive=True)
        for name in reversed(list(self.processes)):
            process = self.processes[name]
            if process.poll() is None:
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in self.processes.values():
            with suppress(subprocess.TimeoutExpired):
                process.wait(max(0.1, deadline - time.monotonic()))
        for process in self.processes.values():
            with suppress(ProcessLookupError):  # the group may outlive its leader
                os.killpg(process.pid, signal.SIGKILL)
            if process.poll() is None:
                process.wait(10)
        for child in descendants:
            with suppress(psutil.Error):
                child.kill()
        self.api.close()

    def asset_events(self, asset_name: str, limit: int = 1000) -> list[dict[str, Any]]:
        """The events of the asset ``asset_name`` (``id``, ``extra``, ``source_dag_id``, ...), as
        ``GET /api/v2/assets/events`` lists them.

        On Airflow 3.3.2 that endpoint answers 500 while any event it lists has created a DAG run that has
        not started: the run's ``start_date`` is NULL, which the response model requires (apache/airflow
        #71360, fixed by #71379 after 3.3.2). A ``kip714_alerts`` or ``kip714_auto_window`` run is such a
        run between the scheduler creating it and starting it (longer when the scheduler dies in between).
        Then, and only when the metadata database shows such a run, the events are read from the database
        instead (``EVENT_COLUMNS`` only; ``timestamp`` as SQLite stores it); any other error is raised.
        """
        asset = next(a for a in self.api.assets() if a["name"] == asset_name)
        for attempt in range(3):
            try:
                return self.api.asset_events(asset_id=asset["id"], limit=limit)
            except AirflowApiError as error:
                if error.status_code != 500:
                    raise
                read = self._events_while_a_run_is_unstarted(asset["id"], limit, error)
                if read is not None:
                    return read
                if attempt == 2:  # a 500 with every created run started: not #71360
                    raise
                time.sleep(2)  # the run may have started between the answer and the query: ask again
        raise AssertionError("unreachable")

    def _events_while_a_run_is_unstarted(
        self, asset_id: int, limit: int, error: AirflowApiError
    ) -> list[dict[str, Any]] | None:
        """The asset's events from the metadata database if one created an unstarted run, else None."""
        with self._metadata_db() as db:
            (unstarted,) = db.execute(
                "SELECT count(*) FROM asset_event e JOIN dagrun_asset_event c ON c.event_id = e.id"
                " JOIN dag_run r ON r.id = c.dag_run_id WHERE e.asset_id = ? AND r.start_date IS NULL",
                (asset_id,),
            ).fetchone()
            if not unstarted:
                return None
            print(
                f"{error} (apache/airflow #71360: {unstarted} unstarted run(s)); read from the DB", flush=True
            )
            rows = db.execute(
                f"SELECT {', '.join(EVENT_COLUMNS)} FROM asset_event"
                " WHERE asset_id = ? ORDER BY timestamp, id LIMIT ?",
                (asset_id, limit),
            ).fetchall()
        events = [dict(zip(EVENT_COLUMNS, row, strict=True)) for row in rows]
        return [{**event, "extra": json.loads(event["extra"] or "{}")} for event in events]

    @contextmanager
    def _metadata_db(self) -> Iterator[sqlite3.Connection]:
        """The SQLite metadata database, read-only (Airflow runs it in WAL mode: a reader does not wait)."""
        db = sqlite3.connect(f"file:{self.home / 'airflow.db'}?mode=ro", uri=True, timeout=60)
        try:
            yield db
        finally:
            db.close()

    def log_tails(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` of every component's log, headed by its name (printed when a test fails)."""
        parts = [f"===== live Airflow logs in {self.home} ====="]
        for name in COMPONENTS:
            parts.append(f"----- {name} -----\n{_tail(self.home / f'{name}.log', lines)}")
        return "\n".join(parts)

    def task_log_files(self, dag_id: str, run_id: str) -> list[Path]:
        """The task log files of one run in ``AIRFLOW_HOME/logs`` (for a failure message)."""
        return sorted((self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}").rglob("*.log"))


@contextmanager
def live_airflow_for(
    request: Any, home: Path, env: Mapping[str, str] | None = None, dags_folder: Path = DAGS
) -> Iterator[LiveAirflow]:
    """``LiveAirflow.start`` for a pytest fixture (``request``): prints the components' log tails at
    teardown when any test that used it failed (a fixture does not see its tests' exceptions).

        @pytest.fixture(scope="module")
        def airflow(request, tmp_path_factory):
            with live_airflow_for(request, tmp_path_factory.mktemp("airflow"), env) as airflow:
                yield airflow
    """
    failed_before = request.session.testsfailed
    with LiveAirflow.start(home, env, dags_folder) as airflow:
        yield airflow
        if request.session.testsfailed > failed_before:
            print(airflow.log_tails(), file=sys.stderr, flush=True)


def api_port() -> int:
    """A free port on 127.0.0.1 for the API server (``LIVE_AIRFLOW_PORTS`` ``low-high`` when set)."""
    return free_port_in("LIVE_AIRFLOW_PORTS")


def live_environment(home: Path, dags_folder: Path, port: int, passwords: Path) -> dict[str, str]:
    """The environment every component shares: this home, SQLite, LocalExecutor, 127.0.0.1, one JWT secret.

    Inherited ``AIRFLOW*`` and ``KIP714_*`` variables are dropped so the test's own settings rule.
    """
    venv_bin = str(Path(sys.executable).parent)
    return {
        **{key: value for key, value in os.environ.items() if not key.startswith(("AIRFLOW", "KIP714_"))},
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__WORKERS": "1",
        # the REST API cuts every list at this many items (default 100), whatever `limit` asks for
        "AIRFLOW__API__MAXIMUM_PAGE_LIMIT": "1000",
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        # new DAG files are seen within seconds, not the default five minutes
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "30",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        # a scheduler killed between queueing a task and its executor starting it leaves the task queued
        # under a job whose heartbeat is still fresh when the new scheduler starts: the new one resets
        # it at its next orphan check only once that heartbeat is older than the health threshold, by
        # default 300 s and 30 s later (seen: a live run stalled 5 minutes after a scheduler restart)
        "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "15",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "20",
        # tasks talk to the API server (Execution API): under load, wait for it rather than fail
        "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "120",
        "AIRFLOW__WORKERS__EXECUTION_API_RETRIES": "10",
        # a shared 2-core CI machine under load takes over 30 s (the default) to import a DAG file
        # that pulls in Airflow, pyarrow and pandas cold
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "150",
        "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "180",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": os.pathsep.join([venv_bin, os.environ.get("PATH", "")]),
        "PYTHONPATH": str(REPO_ROOT),
    }


def _terminate_with_parent() -> None:
    """In the child, before exec: SIGTERM when the test process dies, even by SIGKILL (Linux
    ``PR_SET_PDEATHSIG``), so a killed pytest leaves no Airflow behind; a no-op elsewhere."""
    if sys.platform == "linux":
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    if not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
