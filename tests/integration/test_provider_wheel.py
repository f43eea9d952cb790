"""The provider installs the way users install providers: its wheel, with pip, into a fresh venv.

Built as `make dist` builds it; installed without the ``[native]`` extra and without the development
tooling, then checked from that venv alone: Airflow lists the provider, the DAGs parse, and real pushes
from librdkafka clients land with the Python decoder, row for row as the dev venv (native path) lands them.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from plugin_topic import subscription
from telemetry_helpers import read_dir, run_librdkafka_clients

from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook
from airflow_provider_kip714.telemetry.landing import land_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
DAG_IDS = {"kip714_troubleshoot", "kip714_rollups", "kip714_reaper"}


def _uv() -> str:
    found = shutil.which("uv") or str(REPO_ROOT / ".tools" / "bin" / "uv")
    assert Path(found).exists(), "uv is installed by `make venv`"
    return found


def _run(
    *argv: str | Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
        cwd=tempfile.gettempdir(),  # not the checkout: its folders must not be importable
    )
    assert completed.returncode == 0, (
        f"{argv[:3]} failed:\n{completed.stdout[-2000:]}\n{completed.stderr[-3000:]}"
    )
    return completed


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """(venv bin dir, environment) of a fresh venv holding only the provider wheel and its dependencies."""
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    _run("make", "-C", REPO_ROOT, f"DIST_DIR={dist}", "dist")
    wheels = {path.name.split("-")[0]: path for path in dist.glob("*.whl")}
    assert set(wheels) == {"airflow_provider_kip714", "kip714_native"}, sorted(dist.iterdir())
    assert "abi3" in wheels["kip714_native"].name
    assert list(dist.glob("airflow_provider_kip714-*.tar.gz")), "no sdist"
    # Pin what the lock file pins, so the test checks our wheel, not a newer release of a dependency.
    constraints = root / "constraints.txt"
    constraints.write_text(
        _run(
            _uv(),
            "export",
            "--frozen",
            "--no-hashes",
            "--no-dev",
            "--no-emit-project",
            "--project",
            REPO_ROOT,
        ).stdout
    )
    venv = root / "venv"
    _run(sys.executable, "-m", "venv", venv)
    bin_dir = venv / "bin"
    _run(bin_dir / "pip", "install", "-q", "-c", constraints, wheels["airflow_provider_kip714"], timeout=900)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(root)),
        "AIRFLOW_HOME": str(root / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    yield bin_dir, env


def test_the_wheel_holds_the_provider_and_spark_apps_only(installed: tuple[Path, dict[str, str]]) -> None:
    bin_dir, env = installed
    probe = (
        "import importlib.util as u; "
        "print([m for m in ('kip714_dev', 'kip714_native', 'kio', 'tests') if u.find_spec(m)])"
    )
    assert _run(bin_dir / "python", "-c", probe, env=env).stdout.strip() == "[]"
    _run(bin_dir / "python", "-c", "import spark_apps.package, airflow_provider_kip714.ui.plugin", env=env)


def test_airflow_lists_the_provider_and_parses_the_dags(installed: tuple[Path, dict[str, str]]) -> None:
    bin_dir, env = installed
    providers = _json_of(_run(bin_dir / "airflow", "providers", "list", "--output", "json", env=env).stdout)
    assert "airflow-provider-kip714" in {p["package_name"] for p in providers}
    _run(bin_dir / "airflow", "db", "migrate", env=env)
    # --local: parse the DAG files now, in this venv (the DB holds nothing until a DAG processor runs)
    errors = _run(bin_dir / "airflow", "dags", "list-import-errors", "--local", "--output", "json", env=env)
    assert _json_of(errors.stdout) in ([], {}), errors.stdout
    listed = _run(bin_dir / "airflow", "dags", "list", "--local", "--output", "json", env=env).stdout
    assert {d["dag_id"] for d in _json_of(listed)} >= DAG_IDS


def _json_of(stdout: str) -> Any:
    """The JSON document of a command's output; Airflow may print warnings (graphviz...) before it."""
    lines = stdout.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(("[", "{")))
    return json.loads("\n".join(lines[start:]))


def test_real_pushes_land_with_the_python_decoder(
    installed: tuple[Path, dict[str, str]], kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    bin_dir, env = installed
    config = kafka_cluster.client_config()
    prefix = f"wheel-{uuid.uuid4().hex[:8]}"
    with subscription(kafka_cluster.bootstrap_servers, f"kip714-test-{prefix}", f"client_id={prefix}-.*"):
        run_librdkafka_clients(config, prefix, seconds=4)
    hook = TelemetryTopicHook(config=config, topic=kafka_cluster.telemetry_topic)
    assert any(
        dict(item.record.headers or []).get("kip714.client_id", b"").startswith(prefix.encode())
        for item in hook.iter_records("earliest", decode=False, timeout_s=20)
    ), "the clients' pushes did not reach the topic"

    python_zone, native_zone = tmp_path / "python", tmp_path / "native"
    completed = _run(
        bin_dir / "kip714", "telemetry", "land",
        "--bootstrap-server", kafka_cluster.bootstrap_servers,
        "--topic", kafka_cluster.telemetry_topic,
        "--out", python_zone, "--no-fsync", "--json",
        env=env,
    )  # fmt: skip
    assert "using the Python decoder" in completed.stderr
    landed = json.loads(completed.stdout)
    assert landed["records"] > 0 and landed["quarantined"] == 0

    last_offsets = {int(p): last for p, (_, last) in landed["partitions"].items()}
    land_topic(config, kafka_cluster.telemetry_topic, native_zone, fsync=False)
    python_rows = _rows_up_to(read_dir(python_zone / "datapoints"), last_offsets)
    native_rows = _rows_up_to(read_dir(native_zone / "datapoints"), last_offsets)
    assert any((row[5] or "").startswith(prefix) for row in python_rows), "none of this test's clients landed"
    assert python_rows == native_rows


def _comparable(value: object) -> object:
    """Lists as text; NaN (the Java client pushes some) as a string, since NaN != NaN."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return repr(value) if isinstance(value, list) else value


def _rows_up_to(table: pa.Table, last_offsets: dict[int, int]) -> list[tuple[object, ...]]:
    """The rows of records at or before each partition's last offset, comparable across both landings."""
    columns = ["partition", "offset", "metric_name", "metric_type", "value", "client_id", "attributes"]
    rows = [
        tuple(_comparable(value) for value in row.values())
        for row in table.select(columns).to_pylist()
        if row["offset"] <= last_offsets.get(row["partition"], -1)
    ]
    return sorted(rows, key=repr)
