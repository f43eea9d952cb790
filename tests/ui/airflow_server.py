"""A real ``airflow api-server`` for the UI test: own AIRFLOW_HOME, SQLite, 127.0.0.1, stopped by PID.

The API server alone serves the UI, the REST API and plugin FastAPI apps; scheduler and
dag-processor are not needed to render a plugin page.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kip714_dev.airflow_standalone import airflow_environment
from kip714_dev.local_kafka.ports import free_ports

ADMIN_USER = "admin"
ADMIN_PASSWORD = "kip714-ui-test"
NO_ACCESS_USER = "nobody"
"""A user with no role: Airflow's simple auth manager lets it log in and read nothing."""
NO_ACCESS_PASSWORD = "kip714-ui-nobody"
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0


@dataclass
class AirflowApiServer:
    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path

    def token(self, user: str = ADMIN_USER, password: str = ADMIN_PASSWORD) -> str:
        """A JWT for ``user`` (default the admin) from Airflow's own ``POST /auth/token``."""
        body = json.dumps({"username": user, "password": password}).encode()
        request = urllib.request.Request(
            f"{self.base_url}/auth/token", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)["access_token"]

    def get_json(self, path: str, token: str) -> dict:
        request = urllib.request.Request(
            f"{self.base_url}{path}", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)

    def stop(self) -> int:
        """SIGTERM (uvicorn shuts down gracefully on it), SIGKILL to the group if it lingers."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        return self.process.returncode


def _log_tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def start_api_server(home: Path, bootstrap_servers: str, extra_env: dict[str, str]) -> AirflowApiServer:
    """``airflow db migrate`` then ``airflow api-server`` on a free port; waits until it answers."""
    home.mkdir(parents=True, exist_ok=True)
    dags = home / "dags"
    dags.mkdir(exist_ok=True)
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({ADMIN_USER: ADMIN_PASSWORD, NO_ACCESS_USER: NO_ACCESS_PASSWORD}))
    (port,) = free_ports(1)
    env = airflow_environment(home, bootstrap_servers, dags_folder=dags, api_port=port)
    env.update(
        {
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin,{NO_ACCESS_USER}:",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__API__WORKERS": "1",
            **extra_env,
        }
    )
    airflow = str(Path(sys.executable).parent / "airflow")
    log_path = home / "api-server.log"
    with log_path.open("ab") as log:
        subprocess.run([airflow, "db", "migrate"], env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
        process = subprocess.Popen(
            [airflow, "api-server", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = AirflowApiServer(process, f"http://127.0.0.1:{port}", log_path)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"airflow api-server exited with {process.returncode}:\n{_log_tail(log_path)}")
        try:
            with urllib.request.urlopen(f"{server.base_url}/api/v2/monitor/health", timeout=5):
                return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(1)
    server.stop()
    raise RuntimeError(f"airflow api-server did not answer in {START_TIMEOUT_S} s:\n{_log_tail(log_path)}")
