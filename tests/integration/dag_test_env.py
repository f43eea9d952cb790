"""An isolated Airflow for the product DAGs (dags/): own AIRFLOW_HOME, SQLite, data dir, connections.

``dag.test()`` runs in a subprocess through ``airflow_dag_runner.py`` so Airflow's global config never
leaks between tests; Spark goes through ``spark_default`` (``local[2]``) like in production.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGS = REPO_ROOT / "dags"
RUNNER = Path(__file__).parent / "airflow_dag_runner.py"


def kafka_connection(config: dict[str, Any]) -> str:
    """An Airflow ``kafka`` connection to the librdkafka ``config``, as an ``AIRFLOW_CONN_*`` value."""
    return json.dumps({"conn_type": "kafka", "extra": config})


def use_kafka_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, config: dict[str, Any]) -> str:
    """Make ``conn_id`` that connection for the test (through its environment); returns ``conn_id``."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", kafka_connection(config))
    return conn_id


def make_airflow_env(
    home: Path, data_dir: Path, kafka_cluster: LocalKafkaCluster, dags_folder: Path = DAGS
) -> dict[str, str]:
    """``isolated_airflow_env`` with ``kafka_default`` on the cluster and ``spark_default`` on local[2]."""
    python_bin = str(Path(sys.executable).parent)
    extra = {
        "AIRFLOW_CONN_KAFKA_DEFAULT": kafka_connection(kafka_cluster.client_config()),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "KIP714_SPARK_BUILD_DIR": str(home / "spark-build"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": os.pathsep.join([python_bin, os.environ.get("PATH", "")]),
    }
    return isolated_airflow_env(home, data_dir, extra, dags_folder)


def isolated_airflow_env(
    home: Path, data_dir: Path, extra: dict[str, str], dags_folder: Path = DAGS
) -> dict[str, str]:
    """The environment of an Airflow of its own (no AIRFLOW_*/KIP714_* inherited), its database
    migrated; ``extra`` on top."""
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith(("AIRFLOW", "KIP714_"))},
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "KIP714_DATA_DIR": str(data_dir),
        "PYTHONPATH": str(REPO_ROOT),
        **extra,
    }
    migrated = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    return env


def run_dag_test(
    env: dict[str, str],
    dag_id: str,
    logical_date: datetime,
    conf: dict[str, Any] | None = None,
    timeout_s: float = 600,
) -> tuple[dict[str, Any] | None, str, int]:
    """(summary or None when dag.test raised, combined output, exit code)."""
    command = [sys.executable, str(RUNNER), str(DAGS / f"{dag_id}.py"), dag_id, logical_date.isoformat()]
    if conf is not None:
        command.append(json.dumps(conf))
    completed = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    output = completed.stdout + completed.stderr
    if os.environ.get("KIP714_TEST_DAG_LOG"):  # keep the whole run's log for a human to read
        Path(os.environ["KIP714_TEST_DAG_LOG"]).write_text(output)
    lines = [line for line in completed.stdout.splitlines() if line.startswith('{"state"')]
    summary = json.loads(lines[-1]) if lines else None
    if summary is not None:
        summary["xcom"] = {
            task: json.loads(value) if isinstance(value, str) and value[:1] in '[{"' else value
            for task, value in summary["xcom"].items()
        }
    return summary, output, completed.returncode
