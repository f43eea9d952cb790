"""Airflow finds the client-metrics hook without taking over the apache-kafka provider's ``kafka`` type."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from airflow_provider_kip714 import get_provider_info


def test_registered_modules_import() -> None:
    info = get_provider_info()
    for section in ("hooks", "operators", "sensors", "triggers"):
        for entry in info[section]:
            for module in entry["python-modules"]:
                importlib.import_module(module)


def test_airflow_providers_hooks_lists_ours_next_to_the_kafka_providers(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
    env["AIRFLOW_HOME"] = str(tmp_path)
    listed = subprocess.run(
        [sys.executable, "-m", "airflow", "providers", "hooks", "-o", "json"],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr[-2000:]
    hooks = {row["connection_type"]: row for row in json.loads(listed.stdout)}
    ours = hooks["kafka_client_metrics"]
    assert ours["class"] == "airflow_provider_kip714.hooks.client_metrics.ClientMetricsHook"
    assert ours["package_name"] == "airflow-provider-kip714"
    assert hooks["kafka"]["package_name"] == "apache-airflow-providers-apache-kafka"
