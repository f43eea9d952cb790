"""``make airflow``: ``airflow standalone`` with this repo's DAGs, the local Kafka and the UI page.

Everything lives under the repo's git-ignored ``.airflow/`` (SQLite, logs, the generated admin
password). The environment is built by ``airflow_environment`` so the UI's browser test starts its
own Airflow the same way. Standalone must be stopped with SIGINT (on SIGTERM it leaves its
components running), so Ctrl+C and SIGTERM are both passed on as SIGINT.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

from kip714_dev.local_kafka.broker_config import DEFAULT_PORT, default_data_dir
from kip714_dev.local_kafka.launcher import broker_status

REPO_ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP_ENV = "KIP714_BOOTSTRAP_SERVERS"
DEFAULT_API_PORT = 8080
PASSWORDS_FILE = "simple_auth_manager_passwords.json.generated"


def local_bootstrap_servers() -> str:
    """``$KIP714_BOOTSTRAP_SERVERS``, else the running ``kip714 local-kafka``, else 127.0.0.1:9092."""
    configured = os.environ.get(BOOTSTRAP_ENV)
    if configured:
        return configured
    running = broker_status(default_data_dir())
    if running is not None:
        return running.bootstrap_servers
    return f"127.0.0.1:{DEFAULT_PORT}"


def airflow_environment(
    airflow_home: Path,
    bootstrap_servers: str,
    dags_folder: Path | None = None,
    api_port: int = DEFAULT_API_PORT,
    base: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment for any Airflow command of this provider's local set-up."""
    env = dict(os.environ if base is None else base)
    venv_bin = str(Path(sys.executable).parent)
    env.update(
        {
            "AIRFLOW_HOME": str(airflow_home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder or REPO_ROOT / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home / 'airflow.db'}",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(api_port),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{api_port}",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
            "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
                {"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap_servers}}
            ),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PATH": os.pathsep.join([venv_bin, env.get("PATH", "")]),
        }
    )
    return env


def run_standalone(airflow_home: Path, api_port: int) -> int:
    airflow_home.mkdir(parents=True, exist_ok=True)
    bootstrap = local_bootstrap_servers()
    env = airflow_environment(airflow_home, bootstrap, api_port=api_port)
    airflow = str(Path(sys.executable).parent / "airflow")
    print(f"Airflow UI:        http://127.0.0.1:{api_port}/  (Client telemetry: Browse > Client telemetry)")
    print(f"Admin password:    {airflow_home / PASSWORDS_FILE}  (user 'admin'; written on first start)")
    print(f"AIRFLOW_HOME:      {airflow_home}")
    print(f"kafka_default:     {bootstrap}  (start it with `kip714 local-kafka start`)")
    print("Stop with Ctrl+C.", flush=True)
    started: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        for process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)

    # Installed before the child starts: a caught signal is reset to its default in the child,
    # whereas an ignored one (a shell's background job ignores SIGINT) would be inherited and make
    # standalone deaf to the SIGINT it needs.
    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    started.append(subprocess.Popen([airflow, "standalone"], env=env, start_new_session=True))
    return started[0].wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--airflow-home", type=Path, default=REPO_ROOT / ".airflow")
    parser.add_argument("--port", type=int, default=DEFAULT_API_PORT, help="API server port on 127.0.0.1")
    args = parser.parse_args(argv)
    return run_standalone(args.airflow_home.resolve(), args.port)


if __name__ == "__main__":
    sys.exit(main())
