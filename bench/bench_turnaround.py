"""Troubleshooting turnaround: from the end of the window's landing to the written report (issue #16).

Workload: one window the size of the demo's (``turnaround_data.py``: the demo's real points plus a
synthetic fleet and three brokers, about 11k points over 5.5 minutes). Measured in the same run, so the
ratios hold on a loaded machine:

* ``empty``: an empty PySpark app, ``spark-submit --master local[2]`` (the baseline, the JVM's floor);
* ``three_apps``: rollups, anomalies, broker metrics as three ``spark-submit`` runs (how the DAGs ran);
* ``pipeline``: the same steps in one ``spark-submit`` of ``spark_apps/pipeline.py`` (how they run now);
* ``warm``: the pipeline run twice in one long-lived local session, the second run timed: what a
  long-running server (Spark Connect) would give each run once its JVM is warm;
* ``connect``: the pipeline as the DAG runs it with ``KIP714_SPARK_CONNECT_CONN_ID`` set: a Python
  client (``spark.connect.connect_command``) of a long-running Spark Connect server
  (``kip714_dev.local_spark.connect``, local[2]) that this run starts, untimed, and warms with the same
  window ``--connect-warmups`` times first (a server in service has run earlier windows); CPU counts
  the client and the server;
* ``hourly``: the scheduled DAG's pipeline for the hour holding the window (1m buckets, 24h history).
* ``connect_hourly``: the same hourly pipeline as a client of the warm Spark Connect server.

Each run's turnaround adds the window's rules (``write_window_rules``) and the report (``build_report``)
to the Spark part, as the DAG does; Airflow's own task start-up is not in it. Target: pipeline <= 2 x
empty. Each Spark run's ``KIP714_TIMING`` lines say where its seconds went.

    .venv/bin/python bench/bench_turnaround.py --repeat 2
    .venv/bin/python bench/bench_turnaround.py --modes empty,pipeline --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.turnaround_data import HOUR, WINDOW_END, WINDOW_START, write_window  # noqa: E402
from spark_apps.kip714_common.timing import timing_records  # noqa: E402
from spark_apps.package import (  # noqa: E402
    DEFAULT_RULES,
    PERFORMANCE_CONF,
    WINDOW_CONF,
    application_args,
    application_path,
    build_common_zip,
)

SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
MODES = ("empty", "three_apps", "pipeline", "connect", "hourly", "connect_hourly", "warm")
EMPTY_APP = "from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().stop()\n"
DAG_CONF = {
    **PERFORMANCE_CONF,
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}
"""``airflow_provider_kip714.spark.jobs.SPARK_CONF``: every DAG task's launch settings."""
WINDOW_FLAGS = {"history": "1h", "min_history_buckets": "6", "baseline_for": "30s"}


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def submit(application: Path, args: Sequence[str], log: Path, conf: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``spark-submit --master local[2]``; its output is appended to ``log``."""
    command = [str(SPARK_SUBMIT), "--master", "local[2]", "--py-files", str(build_common_zip())]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    cpu, began = child_cpu(), time.perf_counter()
    with log.open("a") as out:
        result = subprocess.run(
            [*command, str(application), *args], stdout=out, stderr=subprocess.STDOUT, env=environment()
        )
    elapsed, used = time.perf_counter() - began, child_cpu() - cpu
    if result.returncode != 0:
        raise SystemExit(f"{application.name} failed (exit {result.returncode}); see {log}")
    return elapsed, used


def demo_form() -> dict[str, object]:
    """The demo's troubleshooting form (``kip714_dev.demo.runner.troubleshoot_conf``) over this workload:
    every demo client (``demo-.*``), a 10 s push interval and the window's 5.5 minutes."""
    from kip714_dev.demo.runner import DemoSettings, troubleshoot_conf

    from airflow_provider_kip714.troubleshooting.form import troubleshoot_params

    settings = DemoSettings(work_dir=Path(tempfile.gettempdir()), window_s=300, window_interval_ms=10_000)
    return {
        **{name: param.value for name, param in troubleshoot_params().items()},
        **troubleshoot_conf(settings),
        "kafka_config_id": "kafka_default",
        "client_id": "demo-.*",
    }


def write_rules(area_root: Path) -> tuple[Path, float]:
    from airflow_provider_kip714.storage.data_root import RunArea
    from airflow_provider_kip714.troubleshooting.request import TroubleshootingRequest
    from airflow_provider_kip714.troubleshooting.rules import write_window_rules

    began = time.perf_counter()
    path, _ = write_window_rules(
        RunArea(area_root), TroubleshootingRequest.from_params(demo_form()), DEFAULT_RULES
    )
    return path, time.perf_counter() - began


def write_report(area_root: Path) -> float:
    from airflow_provider_kip714.clock import TimeSpan
    from airflow_provider_kip714.report import build_report
    from airflow_provider_kip714.storage.data_root import RunArea

    began = time.perf_counter()
    build_report(RunArea(area_root), span=TimeSpan(WINDOW_START, WINDOW_END), match=["client_id=demo-.*"])
    return time.perf_counter() - began


def timings(log: Path) -> dict[str, object]:
    """The pipeline's ``KIP714_TIMING`` lines of the last run in ``log``: phase -> seconds, plus the JVM's."""
    found: dict[str, object] = {}
    for record in timing_records(log.read_text(), "kip714-pipeline"):
        phase = record.pop("phase")
        record.pop("step")
        found[phase] = record.get("seconds", record)
    return found


def fresh(area: Path) -> Path:
    for folder in ("analytics", "report"):
        if (area / folder).exists():
            subprocess.run(["rm", "-rf", str(area / folder)], check=True)
    return area


def window_args(area: Path, rules: Path | None) -> list[str]:
    extra = {**WINDOW_FLAGS, "rules": str(rules) if rules else None}
    return application_args(
        str(area / "landing"),
        str(area / "analytics"),
        WINDOW_START.isoformat(),
        WINDOW_END.isoformat(),
        "10s",
        **extra,
    )


def hourly_args(area: Path) -> list[str]:
    """The hourly DAG's flags for the hour holding the window."""
    landing, analytics = str(area / "landing"), str(area / "analytics")
    start, end = HOUR[0].isoformat(), HOUR[1].isoformat()
    return application_args(landing, analytics, start, end, "1m", rules=str(DEFAULT_RULES), history="24h")


def run_mode(mode: str, area: Path, work: Path) -> dict[str, object]:
    log = work / f"{mode}.log"
    if mode == "empty":
        empty = work / "empty_app.py"
        empty.write_text(EMPTY_APP)
        wall, cpu = submit(empty, [], log, {"spark.ui.enabled": "false"})
        return {"wall_s": wall, "cpu_s": cpu}
    fresh(area)
    if mode == "hourly":
        wall, cpu = submit(application_path("pipeline"), hourly_args(area), log, DAG_CONF)
        return {"wall_s": wall, "cpu_s": cpu, "spark_s": wall, "phases": timings(log)}
    if mode == "connect_hourly":
        return connect_run(area, work, log, hourly=True)
    if mode == "warm":
        return warm_run(area, log)
    if mode == "connect":
        return connect_run(area, work, log)
    rules, rules_s = write_rules(area)
    if mode == "three_apps":
        wall = cpu = 0.0
        for app in ("rollups", "anomalies", "broker_metrics"):
            args = window_args(area, rules if app == "anomalies" else None)
            if app != "anomalies":
                args = [
                    a
                    for a in args
                    if a not in ("--history", "1h", "--min-history-buckets", "6", "--baseline-for", "30s")
                ]
            app_wall, app_cpu = submit(application_path(app), args, log, DAG_CONF)
            wall, cpu = wall + app_wall, cpu + app_cpu
    else:
        wall, cpu = submit(
            application_path("pipeline"), window_args(area, rules), log, {**DAG_CONF, **WINDOW_CONF}
        )
    report_s = write_report(area)
    return {
        "wall_s": rules_s + wall + report_s,
        "cpu_s": cpu,
        "spark_s": wall,
        "rules_s": rules_s,
        "report_s": report_s,
        "phases": timings(log) if mode == "pipeline" else {},
    }


def warm_run(area: Path, log: Path) -> dict[str, object]:
    """Two pipeline runs in one local session (this process); the second is timed, as on a warm server."""
    sys.path.insert(0, str(REPO / "spark_apps"))
    os.environ.update({"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable})
    import pipeline
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("kip714-warm")
    spark = builder.config(map={**DAG_CONF, **WINDOW_CONF}).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rules, _ = write_rules(area)
    pipeline.run(window_args(area, rules), spark)
    fresh(area)
    rules, rules_s = write_rules(area)
    began = time.perf_counter()
    pipeline.run(window_args(area, rules), spark)
    wall = time.perf_counter() - began
    spark.stop()
    report_s = write_report(area)
    log.write_text("in-process\n")
    return {"wall_s": rules_s + wall + report_s, "spark_s": wall, "rules_s": rules_s, "report_s": report_s}


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (the Connect server), from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_CONNECT: dict[str, object] = {}
CONNECT_WARMUPS = 10
"""Windows the server runs before the timed ones (``--connect-warmups``): a server in service has run
earlier windows, and a fresh one gets faster for about ten (its JIT compiles, its caches fill)."""


def connect_server(work: Path) -> object:
    """The run's Spark Connect server, started (and warmed with one window) on first use."""
    if "state" not in _CONNECT:
        from kip714_dev.local_spark import connect

        state = connect.start(work / "connect-server")
        _CONNECT["state"] = state
        import atexit

        atexit.register(connect.stop, work / "connect-server")
    return _CONNECT["state"]


def connect_pipeline(area: Path, rules: Path | None, url: str, log: Path) -> tuple[float, float]:
    from airflow_provider_kip714.spark.connect import REMOTE_ENV, connect_command

    cpu, began = child_cpu(), time.perf_counter()
    with log.open("a") as out:
        result = subprocess.run(
            connect_command("pipeline", window_args(area, rules) if rules else hourly_args(area)),
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**environment(), REMOTE_ENV: url},
        )
    if result.returncode != 0:
        raise SystemExit(f"pipeline over Spark Connect failed (exit {result.returncode}); see {log}")
    return time.perf_counter() - began, child_cpu() - cpu


def connect_run(area: Path, work: Path, log: Path, hourly: bool = False) -> dict[str, object]:
    state = connect_server(work)
    if not _CONNECT.get("warm"):
        walls = []
        for _ in range(int(_CONNECT.get("warmups", CONNECT_WARMUPS))):  # type: ignore[call-overload]
            rules, _ = write_rules(area)
            walls.append(round(connect_pipeline(area, rules, state.url, log)[0], 1))  # type: ignore[attr-defined]
            fresh(area)
        print(f"connect server warm-up runs (Spark wall s, in order): {walls}", flush=True)
        _CONNECT["warm"] = True
    server_cpu = process_cpu(state.pid)  # type: ignore[attr-defined]
    rules, rules_s = (None, 0.0) if hourly else write_rules(area)
    wall, client_cpu = connect_pipeline(area, rules, state.url, log)  # type: ignore[attr-defined]
    server_used = process_cpu(state.pid) - server_cpu  # type: ignore[attr-defined]
    report_s = 0.0 if hourly else write_report(area)
    return {
        "wall_s": rules_s + wall + report_s,
        "cpu_s": client_cpu + server_used,
        "client_cpu_s": client_cpu,
        "server_cpu_s": server_used,
        "spark_s": wall,
        "rules_s": rules_s,
        "report_s": report_s,
        "phases": timings(log),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES), help=f"among {', '.join(MODES)}")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--work", default=None, help="folder for the landing zone and logs (default: temp)")
    parser.add_argument("--connect-warmups", type=int, default=CONNECT_WARMUPS, help="windows before timing")
    options = parser.parse_args()
    _CONNECT["warmups"] = options.connect_warmups
    modes = [m for m in options.modes.split(",") if m]
    work = Path(options.work or tempfile.mkdtemp(prefix="kip714-turnaround-"))
    area = work / "area"
    area.mkdir(parents=True, exist_ok=True)
    points = write_window(area / "landing")
    print(
        f"window: {points} data points, {WINDOW_START:%H:%M:%S}-{WINDOW_END:%H:%M:%S}; load {os.getloadavg()}"
    )
    results: dict[str, list[dict[str, object]]] = {m: [] for m in modes}
    for round_ in range(options.repeat):
        for mode in modes:  # interleaved, so each mode sees the same load over the run
            result = run_mode(mode, area, work)
            results[mode].append(result)
            print(f"round {round_ + 1} {mode}: {json.dumps(result, default=str)}", flush=True)
    report(results)
    return 0


def report(results: dict[str, list[dict[str, object]]]) -> None:
    empty = (
        statistics.median(float(r["wall_s"]) for r in results.get("empty", []))
        if results.get("empty")
        else None
    )
    empty_cpu = (
        statistics.median(float(r["cpu_s"]) for r in results["empty"]) if results.get("empty") else None
    )
    print(f"\nload average at the end: {os.getloadavg()}")
    for mode, runs in results.items():
        wall = statistics.median(float(r["wall_s"]) for r in runs)
        line = f"{mode:>10}: turnaround {wall:7.1f} s (median of {len(runs)})"
        if empty and mode != "empty":
            line += f" = {wall / empty:4.1f} x empty spark-submit ({empty:.1f} s)"
        cpus = [float(r["cpu_s"]) for r in runs if "cpu_s" in r]
        if cpus and empty_cpu and mode != "empty":
            line += (
                f"; CPU {statistics.median(cpus):6.1f} s = {statistics.median(cpus) / empty_cpu:4.1f} x empty"
            )
        print(line)


if __name__ == "__main__":
    raise SystemExit(main())
