"""The analytics on a real Spark Connect server: the same tables as a classic session, no driver JVM here.

The pipeline runs as the Airflow task runs it (``spark.connect.connect_command``: a Python client with
``SPARK_REMOTE`` in its environment) against a Connect server started by ``kip714_dev.local_spark``,
and its tables are compared with the classic in-process session's, row for row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pipeline
import pytest
from kip714_common.files import HadoopFiles
from kip714_common.schemas import OUTPUT_SCHEMAS

from airflow_provider_kip714.spark.connect import REMOTE_ENV, connect_command
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.troubleshooting.window import write_convergence_windows

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parent / "data" / "demo_landing"
RULES = Path(__file__).resolve().parents[2] / "spark_apps" / "rules" / "default_rules.json"
WINDOW = ["--start", "2026-11-22T08:17:00Z", "--end", "2026-11-22T08:22:30Z", "--bucket", "10s"]
TABLES = tuple(OUTPUT_SCHEMAS)  # every table the steps write
SPARK_APPS = Path(pipeline.__file__).resolve().parent


def _argv(output: Path, windows: Path) -> list[str]:
    return [
        *("--input", str(FIXTURE), "--output", str(output), *WINDOW),
        *("--rules", str(RULES), "--history", "1h", "--steps", ",".join(pipeline.STEPS)),
        *("--windows", str(windows)),
    ]


def _rows(spark, path: Path) -> list[str]:  # type: ignore[no-untyped-def]
    """Every row as sorted JSON (maps and arrays included), so two tables compare as multisets."""
    return sorted(
        json.dumps(row.asDict(recursive=True), sort_keys=True, default=str)
        for row in spark.read.parquet(str(path)).collect()
    )


def _sessions_closed(server) -> int:  # type: ignore[no-untyped-def]
    """Sessions the server has closed so far (its log says so once per session)."""
    log = Path(server.data_dir) / "logs" / "connect.log"
    return log.read_text(errors="replace").count("INFO SessionHolder: Closing session with")


def _pipeline_on_connect(args: list[str], url: str) -> subprocess.CompletedProcess[str]:
    """The pipeline run as the Airflow task runs it: a Connect client process, the URL in its environment."""
    return subprocess.run(
        connect_command("pipeline", args),
        env={**os.environ, REMOTE_ENV: url},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _answer_on_connect(script: str, *args: str) -> Any:
    """Run ``script`` as a Spark Connect client process (``spark_apps`` on its path); its last stdout line,
    parsed as JSON."""
    answered = subprocess.run(
        [sys.executable, "-c", script, *args],
        env={**os.environ, "PYTHONPATH": str(SPARK_APPS)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert answered.returncode == 0, answered.stderr[-4000:]
    return json.loads(answered.stdout.strip().splitlines()[-1])


def test_the_pipeline_on_a_connect_server_writes_what_a_classic_session_writes(
    tmp_path: Path,
    spark,
    spark_connect_server,  # type: ignore[no-untyped-def]
) -> None:
    area = RunArea(tmp_path / "area")
    window = {"name": "kip714-demo-exp20261122T082230Z-0a1b2c3d", "start": "2026-11-22T08:17:00+00:00"}
    window["end"] = "2026-11-22T08:22:30+00:00"
    windows = write_convergence_windows(area, window, ["org.apache.kafka."], {"client_id": "demo-.*"})
    pipeline.run(_argv(tmp_path / "classic", windows), spark)

    closed_before = _sessions_closed(spark_connect_server)
    over_connect = _pipeline_on_connect(_argv(tmp_path / "connect", windows), spark_connect_server.url)
    assert over_connect.returncode == 0, over_connect.stdout[-4000:] + over_connect.stderr[-4000:]
    assert '"app": "kip714-rollups"' in over_connect.stdout  # the apps' own summaries, as with spark-submit
    # the client released its session: a server keeps an unreleased one (cached tables, plans) for its
    # idle timeout, and a busy server's heap filled with finished runs
    assert _sessions_closed(spark_connect_server) == closed_before + 1
    for table in TABLES:
        assert _rows(spark, tmp_path / "connect" / table) == _rows(spark, tmp_path / "classic" / table), table
    # the demo's window has client metrics only: these four tables must hold rows, not just agree
    assert all(
        _rows(spark, tmp_path / "classic" / t) for t in ("rollups", "delivery", "capabilities", "convergence")
    )


def test_connect_and_hadoop_answer_the_same_storage_questions(
    tmp_path: Path,
    spark,
    spark_connect_server,  # type: ignore[no-untyped-def]
) -> None:
    commits = next(FIXTURE.rglob("_commits"), None)
    hour = next(FIXTURE.glob("datapoints/date=*/hour=*"))
    questions = {
        "exists": [str(FIXTURE), str(tmp_path / "missing")],
        "names": [
            str(hour),
            str(hour.parent),
            str(tmp_path / "missing"),
            *([str(commits)] if commits else []),
        ],
        "size": [str(FIXTURE / "datapoints"), str(tmp_path / "missing")],
    }
    questions["sizes"] = questions["names"]  # names and bytes: what sizes a run (landing.landed_bytes)
    script = (
        "import json, sys\n"
        "from pyspark.sql import SparkSession\n"
        "from kip714_common.files import session_files, ConnectFiles\n"
        "spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()\n"
        "files = session_files(spark)\n"
        "assert isinstance(files, ConnectFiles)\n"
        "questions = json.loads(sys.argv[2])\n"
        "print(json.dumps({q: [getattr(files, q)(p) for p in paths] for q, paths in questions.items()}))\n"
    )
    over_connect = _answer_on_connect(script, spark_connect_server.url, json.dumps(questions))
    hadoop = HadoopFiles(spark)
    local = {q: [getattr(hadoop, q)(p) for p in paths] for q, paths in questions.items()}
    over_connect["names"] = [sorted(names) for names in over_connect["names"]]
    local["names"] = [sorted(names) for names in local["names"]]
    assert over_connect == local
    assert local["exists"] == [True, False] and local["names"][0] and local["size"][0] > 0
    hour_files = local["sizes"][0]
    assert sorted(hour_files) == local["names"][0] and all(size > 0 for size in hour_files.values())


@pytest.mark.parametrize("shared", [[], ["--connect-session", "0d6f4a3c-58a4-4b1e-9a57-8f2b1c3d4e5f"]])
def test_a_client_whose_server_is_gone_gives_up_within_a_minute(
    tmp_path: Path, spark, shared: list[str]
) -> None:  # type: ignore[no-untyped-def]
    """pyspark's default retries for at least 10 minutes against an unreachable server: a live cycle whose
    server died stalled that long. The apps bound it (``CONNECT_RETRIES``: 18 s measured); a classic
    session is left alone."""
    from kip714_common.session import bound_connect_retries
    from kip714_dev.local_kafka.ports import free_ports

    bound_connect_retries(spark)  # a classic session: nothing to bound, and no error
    nobody = f"sc://127.0.0.1:{free_ports(1)[0]}"
    began = time.monotonic()
    args = ["--input", str(FIXTURE), "--output", str(tmp_path / "out"), *WINDOW, *shared]
    gone = _pipeline_on_connect(args, nobody)
    waited = time.monotonic() - began
    assert gone.returncode != 0
    assert "RETRIES_EXCEEDED" in gone.stderr and "UNAVAILABLE" in gone.stderr  # it tried, then gave up
    assert waited < 60, f"the client retried for {waited:.0f} s"


def test_a_warm_connect_server_generates_code_for_inputs_a_fresh_jvm_runs_interpreted(
    spark,
    spark_connect_server,  # type: ignore[no-untyped-def]
) -> None:
    """10 MiB: interpreted in a classic session (``SMALL_INPUT_BYTES``), generated code on a Connect server
    (``WARM_SERVER_SMALL_INPUT_BYTES``); 5 MiB: interpreted on the Connect server."""
    from kip714_common.session import SMALL_INPUT_CONF, tune_for_input

    mib = 1024 * 1024
    saved = {key: spark.conf.get(key, None) for key in SMALL_INPUT_CONF}
    try:
        assert tune_for_input(spark, 10 * mib) is True
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
    script = (
        "import json, sys\n"
        "from pyspark.sql import SparkSession\n"
        "from kip714_common.session import tune_for_input\n"
        "spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()\n"
        "stage = lambda: spark.conf.get('spark.sql.codegen.wholeStage')\n"
        f"ten, five = {10 * mib}, {5 * mib}\n"
        "print(json.dumps([tune_for_input(spark, ten), stage(), tune_for_input(spark, five), stage()]))\n"
        "spark.stop()\n"
    )
    assert _answer_on_connect(script, spark_connect_server.url) == [False, "true", True, "false"]


def _code_generated(server) -> int:  # type: ignore[no-untyped-def]
    """Classes the server has compiled so far (its log says so once per compile)."""
    log = Path(server.data_dir) / "logs" / "connect.log"
    return log.read_text(errors="replace").count("CodeGenerator: Code generated in")


def test_live_cycles_share_one_server_session_so_the_code_compiled_for_one_serves_the_next(
    tmp_path: Path,
    spark,
    spark_connect_server,  # type: ignore[no-untyped-def]
) -> None:
    """A server session has its own class loader, and Spark caches compiled code per class loader: a run in a
    new session compiles again what the last one compiled. Runs given ``--connect-session`` share one
    session: the later ones compile (almost) nothing, read what the earlier ones wrote (no stale cached
    plan), and leave the session open, with the settings it began with. An id the server has closed falls
    back to a session of the run's own."""
    session_id = str(uuid.uuid4())

    def cycle(shared: str) -> int:
        """A live cycle's run into the live tables, each cycle the same; the classes it compiled."""
        compiled = _code_generated(spark_connect_server)
        args = ["--input", str(FIXTURE), "--output", str(tmp_path / "live"), *WINDOW]
        args += ["--connect-session", shared, "--steps", "rollups,anomalies", "--rules", str(RULES)]
        ran = _pipeline_on_connect(args, spark_connect_server.url)
        assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-4000:]
        return _code_generated(spark_connect_server) - compiled

    closed = _sessions_closed(spark_connect_server)
    first = cycle(session_id)
    written = {table: _rows(spark, tmp_path / "live" / table) for table in ("rollups", "anomalies")}
    assert written["rollups"]
    # the later cycles read the tables the earlier ones rewrote (a plan cached by the server would still
    # list the replaced files) and write the same rows
    later = [cycle(session_id), cycle(session_id)]
    assert first >= 10 and all(compiled <= first // 10 for compiled in later), (first, later)
    assert _sessions_closed(spark_connect_server) == closed  # no run released the shared session
    for table, rows in written.items():
        assert _rows(spark, tmp_path / "live" / table) == rows, table
    check = (
        "import json, sys\n"
        "from kip714_common.shared_session import begin_run, connect\n"
        "spark = connect(sys.argv[1], sys.argv[2])\n"
        "left = spark.conf.get('spark.sql.shuffle.partitions')\n"
        "begin_run(spark)\n"
        "print(json.dumps([left, spark.conf.get('spark.sql.shuffle.partitions')]))\n"
        "spark.release_session_on_close = True\n"
        "spark.stop()\n"
    )  # the small input left its settings; the next run starts from the server's; then closed for good
    assert _answer_on_connect(check, spark_connect_server.url, session_id) == ["2", "4"]
    assert _sessions_closed(spark_connect_server) == closed + 1
    # a pyspark whose plans cannot be numbered apart: the run takes a session of its own, not the shared one
    apart_impossible = (
        "import json, sys\n"
        "import kip714_common.shared_session as shared\n"
        "shared.fresh_plan_ids = lambda: False\n"
        "spark = shared.connect(sys.argv[1], sys.argv[2])\n"
        "print(json.dumps([spark.session_id == sys.argv[2], spark.range(3).count()]))\n"
        "spark.stop()\n"
    )
    assert _answer_on_connect(apart_impossible, spark_connect_server.url, str(uuid.uuid4())) == [False, 3]
    assert _sessions_closed(spark_connect_server) == closed + 2  # that own session was released
    # a closed id: the run warns and uses a session of its own (released at its end), and still writes
    assert cycle(session_id) > 0
    assert _sessions_closed(spark_connect_server) == closed + 3
    assert _rows(spark, tmp_path / "live" / "rollups") == written["rollups"]


def test_a_run_in_a_shared_session_starts_from_the_settings_the_session_began_with(spark) -> None:  # type: ignore[no-untyped-def]
    from kip714_common.session import SMALL_INPUT_CONF, tune_for_input
    from kip714_common.shared_session import DEFAULTS_KEY, begin_run

    def settings() -> dict[str, str | None]:
        return {key: spark.conf.get(key, None) for key in SMALL_INPUT_CONF}

    before = settings()  # what earlier tests left on the shared fixture, put back at the end
    spark.conf.unset("spark.sql.codegen.factoryMode")  # one setting unset: restored by unsetting
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    began = settings()
    try:
        begin_run(spark)  # the session's first run: it notes the settings the session began with
        assert tune_for_input(spark, 1024) is True and settings() == SMALL_INPUT_CONF != began
        begin_run(spark)  # the next run
        assert settings() == began  # the session's own values (3 shuffle partitions here), not Spark's 200
    finally:
        spark.conf.unset(DEFAULTS_KEY)
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
