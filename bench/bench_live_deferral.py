"""Live mode's third design against the chosen one, in Airflow's own terms (issue 29): a cycle whose first
task defers to the triggerer until telemetry arrives, against a cycle that starts landing at once.

On a KIP-714 fleet the arrival trigger (``ClientTelemetryArrivalTrigger``) fires as soon as it runs:
every client pushes every interval, so there is always a record to wake for. What the deferral adds to
each cycle is therefore Airflow's round trip: the task process exits, the triggerer runs the trigger,
the scheduler queues the task again and the executor starts a second task process. This measures that
round trip on a live Airflow (scheduler, dag-processor, triggerer and API server as separate processes,
the LocalExecutor, ``tests/support/live_airflow.py``), with two DAGs of ``kip714_live``'s shape that do no
work (``@continuous``, one run at a time, three tasks passing an XCom):

- **plain** (the baseline, the chosen design): ``land_new`` returns at once;
- **deferred**: ``land_new`` defers once on a trigger that fires at once (``TimeDeltaTrigger(0)``, standing
  in for the arrival trigger on a fleet that never idles) and returns when resumed.

A round measures idle (both paused) for ``--idle-seconds``, then each DAG alone for ``--seconds``.
Printed: the runs that ended in the span, the median run's wall time (its start to its end), Airflow's
cores over the span and its CPU per run beyond that round's idle (every component and its descendants,
reaped children included, from ``/proc``), and the ratios.

    .venv/bin/python bench/bench_live_deferral.py                 # 2 rounds of 60 + 2 x 120 s (about 12 min)
    .venv/bin/python bench/bench_live_deferral.py --seconds 60 --idle-seconds 30
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402
from arguments import positive_int  # noqa: E402

from tests.support.live_airflow import LiveAirflow  # noqa: E402

VARIANTS = ("plain", "deferred")
"""In this order every round: the same DAG never runs two spans back to back."""
DAG_FILE = '''
"""Two cycles of kip714_live's shape doing no work: one starts at once, one defers to the triggerer first."""
from datetime import datetime, timedelta

from airflow.providers.standard.triggers.temporal import TimeDeltaTrigger
from airflow.sdk import DAG, BaseOperator, task


class LandNew(BaseOperator):
    def __init__(self, deferred: bool, **kwargs):
        super().__init__(**kwargs)
        self.deferred = deferred

    def execute(self, context):
        if self.deferred:
            self.defer(trigger=TimeDeltaTrigger(timedelta(0)), method_name="arrived")
        return {"offsets": {}}

    def arrived(self, context, event=None):
        return {"offsets": {}}


for name, deferred in (("plain", False), ("deferred", True)):
    with DAG(
        f"bench_cycle_{name}",
        schedule="@continuous",
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        is_paused_upon_creation=True,
    ):

        @task
        def analyse(start):
            return start

        @task
        def detect_and_announce(done):
            return None

        detect_and_announce(analyse(LandNew(task_id="land_new", deferred=deferred).output))
'''


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=positive_int, default=120, help="each variant's run time (120)")
    parser.add_argument("--idle-seconds", type=positive_int, default=60, help="idle measurement (60)")
    parser.add_argument("--rounds", type=positive_int, default=2, help="rounds (2)")
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one)")
    return parser


def airflow_cpu(airflow: LiveAirflow) -> float:
    """CPU seconds of every component and its live descendants, reaped children included."""
    total = 0.0
    for process in airflow.processes.values():
        try:
            root = psutil.Process(process.pid)
            family = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for member in family:
            try:
                times = member.cpu_times()
            except psutil.NoSuchProcess:
                continue  # exited between the listing and now: its parent's children times hold it
            total += times.user + times.system + times.children_user + times.children_system
    return total


def timestamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Measured:
    runs: int
    wall_median: float
    cpu_per_run: float
    cores: float
    """Airflow's CPU over the span per second, idle included."""


def measure(airflow: LiveAirflow, dag_id: str, seconds: int, idle_rate: float) -> Measured:
    """Unpause ``dag_id`` for ``seconds``: the runs that ended in that span, and Airflow's CPU beyond idle
    per run (the span's CPU includes the part of the run in flight at its end: at most one run's worth).

    Then pause it and fail any run still queued or running (a paused DAG's running run is not scheduled
    further), so the next span runs alone. A continuous DAG starts its next run only after the
    dag-processor has parsed it again (every 30 s), so the next span of the same DAG comes after an idle
    span and the other DAG's: it starts without that wait."""
    api = airflow.api
    known = {run["dag_run_id"] for run in api.dag_runs(dag_id)}
    cpu, began, began_wall = airflow_cpu(airflow), time.monotonic(), time.time()
    api.unpause(dag_id)
    time.sleep(seconds)
    used, elapsed, ended_wall = airflow_cpu(airflow) - cpu, time.monotonic() - began, time.time()
    api.pause(dag_id)
    runs = [run for run in api.dag_runs(dag_id) if run["dag_run_id"] not in known]
    if len(runs) >= 100:
        raise SystemExit(f"{dag_id}: {len(runs)} runs in one span, more than the run listing holds")
    for run in runs:
        if run["state"] in ("queued", "running"):
            api.request(
                "PATCH", f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}", json={"state": "failed"}
            )
    ended = [
        run for run in runs if run["end_date"] and began_wall <= timestamp(run["end_date"]) <= ended_wall
    ]
    if not ended or any(run["state"] != "success" for run in ended):
        raise SystemExit(f"{dag_id}: {len(ended)} runs ended in the span, not all succeeded: {ended}")
    walls = [timestamp(run["end_date"]) - timestamp(run["start_date"]) for run in ended]
    return Measured(
        len(ended), statistics.median(walls), (used - idle_rate * elapsed) / len(ended), used / elapsed
    )


def run(args: argparse.Namespace, work: Path) -> int:
    dags = work / "dags"
    dags.mkdir(parents=True, exist_ok=True)
    (dags / "bench_cycles.py").write_text(DAG_FILE)
    print(f"load average at start: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
    with LiveAirflow.start(work / "airflow", dags_folder=dags) as airflow:
        airflow.api.wait_for_dags([f"bench_cycle_{name}" for name in VARIANTS])
        results: dict[str, list[Measured]] = {name: [] for name in VARIANTS}
        for round_index in range(args.rounds):
            # idle first, every round: the paused span also lets the dag-processor parse the DAGs again
            cpu, began = airflow_cpu(airflow), time.monotonic()
            time.sleep(args.idle_seconds)
            idle_rate = (airflow_cpu(airflow) - cpu) / (time.monotonic() - began)
            print(f"round {round_index + 1} idle: {idle_rate:.3f} cores", flush=True)
            for name in VARIANTS:
                measured = measure(airflow, f"bench_cycle_{name}", args.seconds, idle_rate)
                results[name].append(measured)
                print(
                    f"round {round_index + 1} {name}: {measured.runs} runs, wall per run median"
                    f" {measured.wall_median:.2f} s, Airflow {measured.cores:.3f} cores, CPU per run beyond"
                    f" idle {measured.cpu_per_run:.2f} s",
                    flush=True,
                )
    plain, deferred = (
        (
            statistics.median(m.wall_median for m in results[name]),
            statistics.median(m.cpu_per_run for m in results[name]),
        )
        for name in VARIANTS
    )
    print(
        f"deferred/plain per cycle: wall {deferred[0]:.2f} / {plain[0]:.2f} s = {deferred[0] / plain[0]:.2f}x"
        f" ({deferred[0] - plain[0]:+.2f} s), Airflow CPU {deferred[1]:.2f} / {plain[1]:.2f} s ="
        f" {deferred[1] / plain[1]:.2f}x ({deferred[1] - plain[1]:+.2f} s; at 120 cycles an hour"
        f" {(deferred[1] - plain[1]) * 120:+.0f} CPU s an hour); load average at end:"
        f" {' '.join(Path('/proc/loadavg').read_text().split()[:3])}",
        flush=True,
    )
    return 0


def main() -> int:
    args = build_parser().parse_args()
    if args.work is not None:
        return run(args, args.work)
    with tempfile.TemporaryDirectory(prefix="kip714-bench-deferral-") as work:
        return run(args, Path(work))


if __name__ == "__main__":
    sys.exit(main())
