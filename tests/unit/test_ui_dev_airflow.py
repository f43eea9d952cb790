"""``make airflow``'s environment: where Kafka is, the Spark connection, SQLite under AIRFLOW_HOME."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from kip714_dev.airflow_standalone import REPO_ROOT, airflow_environment, local_bootstrap_servers


def test_bootstrap_from_env_else_default_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIP714_LOCAL_KAFKA_DIR", str(tmp_path / "no-broker-here"))
    monkeypatch.delenv("KIP714_BOOTSTRAP_SERVERS", raising=False)
    assert local_bootstrap_servers() == "127.0.0.1:9092"
    monkeypatch.setenv("KIP714_BOOTSTRAP_SERVERS", "127.0.0.1:19092")
    assert local_bootstrap_servers() == "127.0.0.1:19092"


def test_environment(tmp_path: Path) -> None:
    env = airflow_environment(tmp_path / "home", "127.0.0.1:19092", api_port=18080, base={"PATH": "/usr/bin"})
    assert env["AIRFLOW_HOME"] == str(tmp_path / "home")
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(REPO_ROOT / "dags")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{tmp_path / 'home' / 'airflow.db'}"
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert env["AIRFLOW__API__BASE_URL"] == "http://127.0.0.1:18080"
    kafka = json.loads(env["AIRFLOW_CONN_KAFKA_DEFAULT"])
    assert kafka == {"conn_type": "kafka", "extra": {"bootstrap.servers": "127.0.0.1:19092"}}
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"]) == {"conn_type": "spark", "host": "local[*]"}
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert (Path(env["PATH"].split(":")[0]) / "spark-submit").exists()
