"""The rollups phase of ``bench_fleet_scale.py``: the real rollups app on the landed fleet, twice.

Once with ``--master local[2]`` (the baseline: one JVM, the demo's and a single-host DAG's way) and once
on a Spark standalone cluster of a master and 2 workers (1 core, 1536 MB each) that this phase starts
and stops itself (``kip714_dev.local_spark``, its own data dir; ``stop`` signals only the daemons whose
command line names that dir). Both are launched as the DAGs launch the app (``spark_app_operator``):
``spark-submit`` in client deploy mode with ``airflow_provider_kip714.spark.jobs.SPARK_CONF``, the
``kip714_common.zip`` as ``--py-files``, ``spark_apps/rollups.py`` and the shared flags, and the
environment of ``spark_environment()``. The landing zone is a local folder: the driver and both
executors run on this machine and read and write the same files, so no object store is needed.

The interval is the whole hour(s) holding the fleet's client points, as the hourly DAG would run it (the
load stamps each push's points with the second it was sent, so a 300 s run fills 5-6 one-minute
buckets per series, in one hour or two). The outputs are compared by fingerprint: rows, sum of
``count`` (points rolled up) and distinct client instances.

    .venv/bin/python bench/fleet_rollups.py --zone /tmp/kip714-fleet-XXXX/zone   # a zone kept by --keep
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_provider_kip714.telemetry.landing_zone import LandingZone

LOCAL_MASTER = "local[2]"
STANDALONE_WORKERS = 2
MAX_INTERVAL = timedelta(hours=24)
SUBMIT_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Fingerprint:
    """What two runs of the same rollup over the same data must agree on."""

    rows: int
    points: int
    instances: int


@dataclass(frozen=True)
class RollupRun:
    master: str
    seconds: float
    load_before: float
    summary_rows: int
    fingerprint: Fingerprint


def fleet_interval(zone: LandingZone) -> tuple[datetime, datetime, int, int]:
    """(start, end) of the hours holding the client points; the landed points in them, and the client's."""
    points = zone.read_table("datapoints", columns=["time", "record_type"])
    if not points.num_rows:
        raise SystemExit("rollups: no data points landed")
    client = points.filter(pc.equal(points.column("record_type"), "client"))
    times = pc.min_max(pc.cast((client if client.num_rows else points).column("time"), pa.int64()))
    first = datetime.fromtimestamp(times["min"].as_py() // 10**9, UTC)
    last = datetime.fromtimestamp(times["max"].as_py() // 10**9, UTC)
    start = first.replace(minute=0, second=0, microsecond=0)
    end = last.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    if end - start > MAX_INTERVAL:
        raise SystemExit(f"rollups: client points span {first} .. {last}, more than {MAX_INTERVAL}")
    stamps = pc.cast(points.column("time"), pa.int64())
    start_ns, end_ns = int(start.timestamp()) * 10**9, int(end.timestamp()) * 10**9
    inside = pc.and_(pc.greater_equal(stamps, start_ns), pc.less(stamps, end_ns))
    client_inside = pc.and_(inside, pc.equal(points.column("record_type"), "client"))
    return start, end, pc.sum(inside).as_py() or 0, pc.sum(client_inside).as_py() or 0


def fingerprint(output_root: Path) -> Fingerprint:
    """Rows, points rolled up (sum of ``count``) and distinct client instances of ``rollups/``."""
    table = pq.read_table(output_root / "rollups", columns=["count", "client_instance_id"])
    if not table.num_rows:
        return Fingerprint(0, 0, 0)
    instances = pc.count_distinct(table.column("client_instance_id"), mode="only_valid").as_py()
    return Fingerprint(table.num_rows, pc.sum(table.column("count")).as_py() or 0, instances)


def submit_command(master: str, zone_dir: Path, output: Path, start: datetime, end: datetime) -> list[str]:
    """The ``spark-submit`` line ``spark_app_operator`` has Airflow's SparkSubmitHook build for rollups."""
    from airflow_provider_kip714.spark.jobs import SPARK_CONF, common_zip
    from spark_apps.package import application_args, application_path

    command = [str(Path(sys.executable).with_name("spark-submit")), "--master", master]
    for key, value in SPARK_CONF.items():
        command += ["--conf", f"{key}={value}"]
    command += ["--py-files", common_zip(), "--name", "kip714-rollups", "--deploy-mode", "client"]
    command.append(str(application_path("rollups")))
    iso = "%Y-%m-%dT%H:%M:%SZ"
    command += application_args(str(zone_dir), str(output), start.strftime(iso), end.strftime(iso), "1m")
    return command


def submit(master: str, zone_dir: Path, output: Path, start: datetime, end: datetime) -> RollupRun:
    """Run the app once; wall seconds from ``spark-submit``'s start to its exit (JVMs included)."""
    from airflow_provider_kip714.spark.jobs import spark_environment

    command = submit_command(master, zone_dir, output, start, end)
    log = output.with_suffix(".log")
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    with log.open("w") as sink:
        done = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
            env={**os.environ, **spark_environment()},
            timeout=SUBMIT_TIMEOUT_S,
            check=False,
        )
    seconds = time.monotonic() - started
    if done.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise SystemExit(f"rollups on {master}: spark-submit exited {done.returncode}; see {log}\n{tail}")
    summaries = [line for line in done.stdout.splitlines() if line.startswith("KIP714_SUMMARY ")]
    summary = json.loads(summaries[-1].split(" ", 1)[1]) if summaries else {}
    rows = int(summary.get("tables", {}).get("rollups", {}).get("rows", -1))
    return RollupRun(master, seconds, round(load_before, 2), rows, fingerprint(output))


def run_rollups(zone_dir: Path, work: Path) -> dict[str, Any]:
    """local[2] first, then the standalone cluster (started here, stopped here) on the same zone."""
    from kip714_dev.local_spark import cluster as local_spark

    zone = LandingZone(str(zone_dir), "fleet", fsync=False)
    start, end, points_in, client_points = fleet_interval(zone)
    load_before = os.getloadavg()
    print(f"rollups: {points_in} points in [{start:%Y-%m-%d %H:%M}, {end:%H:%M}) UTC", flush=True)
    local = submit(LOCAL_MASTER, zone_dir, work / "analytics-local", start, end)
    print(f"rollups on {LOCAL_MASTER}: {local.seconds:.1f} s", flush=True)
    spark_dir = work / "spark-standalone"
    cluster_started = time.monotonic()
    try:
        state = local_spark.start(spark_dir, workers=STANDALONE_WORKERS)
        cluster_start_s = time.monotonic() - cluster_started
        standalone = submit(state.master_url, zone_dir, work / "analytics-standalone", start, end)
    finally:
        local_spark.stop(spark_dir)
    return {
        "interval": [start.isoformat(), end.isoformat()],
        "points_in": points_in,
        "client_points_in": client_points,
        "load_before": [round(value, 2) for value in load_before],
        "cluster_start_s": cluster_start_s,
        "local": asdict(local),
        "standalone": asdict(standalone),
        "ratio": standalone.seconds / local.seconds,
        "same": local.fingerprint == standalone.fingerprint,
    }


def print_rollups(figures: dict[str, Any]) -> None:
    f = figures
    print(
        f"\nrollups (spark_apps/rollups.py, 1m buckets) over [{f['interval'][0]}, {f['interval'][1]}): "
        f"{f['points_in']} points in ({f['client_points_in']} client, the rest broker); "
        f"load average before {f['load_before']}"
    )
    for key in ("local", "standalone"):
        run = f[key]
        fp = run["fingerprint"]
        print(
            f"  {run['master']}: {run['seconds']:.1f} s wall (spark-submit to exit; "
            f"load {run.get('load_before', '?')} at its start); "
            f"{fp['rows']} rollup rows out (summary {run['summary_rows']}), "
            f"{fp['points']} points rolled up, {fp['instances']} instances"
        )
    print(
        f"  standalone (2 workers x 1 core; cluster start {f['cluster_start_s']:.1f} s, not counted) / "
        f"local[2]: {f['ratio']:.2f}x; same rollups: {'yes' if f['same'] else 'NO'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="The fleet benchmark's rollups phase on a kept zone.")
    parser.add_argument("--zone", type=Path, required=True, help="a landing zone (bench_fleet_scale --keep)")
    args = parser.parse_args()
    if not (args.zone / "datapoints").is_dir():
        parser.error(f"--zone: {args.zone} holds no datapoints/ folder")
    work = Path(tempfile.mkdtemp(prefix="kip714-fleet-rollups-"))
    try:
        figures = run_rollups(args.zone.resolve(), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_rollups(figures)
    sys.exit(0 if figures["same"] else 1)


if __name__ == "__main__":
    main()
