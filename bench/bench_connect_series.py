"""One Spark Connect server, window after window: what each run costs as the server warms and ages.

The turnaround benchmark (``bench_turnaround.py``) times a warm server; this one shows how it gets there
and whether it stays there: per window, the Spark part's wall time, the server's CPU seconds, its young
and full garbage collections (``jstat``) and its old generation afterwards. A server that leaks (an
unreleased session, cached frames, large memory pages held by broadcasts) shows it here as a growing
old generation and full collections in every window (``docs/benchmarks.md``, turnaround section).

    .venv/bin/python bench/bench_connect_series.py --windows 12

Each window is the turnaround benchmark's (``turnaround_data.py``: about 11k points), run as the DAG
runs it (``spark.connect.connect_command``, a fresh client per window), followed by the report.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kip714_dev.cli.options import bounded_int  # noqa: E402

import bench.bench_turnaround as turnaround  # noqa: E402
from bench.turnaround_data import write_window  # noqa: E402

GC_COLUMNS = ("YGC", "YGCT", "FGC", "FGCT", "OU")


def gc_counters(pid: int) -> dict[str, float]:
    """``jstat -gc``: young/full collection counts and seconds, old generation used (KB)."""
    lines = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True, check=True).stdout
    header, values = lines.splitlines()[:2]
    row = dict(zip(header.split(), values.split(), strict=False))
    return {name: float(row[name]) for name in GC_COLUMNS}


def one_window(area: Path, url: str, pid: int, log: Path) -> dict[str, float]:
    rules, _ = turnaround.write_rules(area)
    before, cpu_before = gc_counters(pid), turnaround.process_cpu(pid)
    wall, client_cpu = turnaround.connect_pipeline(area, rules, url, log)
    after, cpu_after = gc_counters(pid), turnaround.process_cpu(pid)
    report_s = turnaround.write_report(area)
    turnaround.fresh(area)
    return {
        "spark_s": round(wall, 2),
        "report_s": round(report_s, 2),
        "server_cpu_s": round(cpu_after - cpu_before, 1),
        "client_cpu_s": round(client_cpu, 1),
        "young_gcs": after["YGC"] - before["YGC"],
        "young_gc_s": round(after["YGCT"] - before["YGCT"], 2),
        "full_gcs": after["FGC"] - before["FGC"],
        "full_gc_s": round(after["FGCT"] - before["FGCT"], 2),
        "old_gen_mb": round(after["OU"] / 1024),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--windows",
        type=bounded_int(1, 200, "a number of windows"),
        default=12,
        help="windows to run on the one server (1..200)",
    )
    parser.add_argument("--work", default=None, help="folder for the landing zone and logs (default: temp)")
    options = parser.parse_args()
    work = Path(options.work or tempfile.mkdtemp(prefix="kip714-connect-series-"))
    area = work / "area"
    area.mkdir(parents=True, exist_ok=True)
    print(f"window: {write_window(area / 'landing')} data points; work {work}", flush=True)
    state = turnaround.connect_server(work)
    runs = []
    for number in range(1, options.windows + 1):
        run = one_window(area, state.url, state.pid, work / "connect.log")  # type: ignore[attr-defined]
        runs.append(run)
        print(f"window {number:3d}: {json.dumps(run)}", flush=True)
    last = runs[len(runs) // 2 :]
    spark_s = statistics.median(r["spark_s"] for r in last)
    server_s = statistics.median(r["server_cpu_s"] for r in last)
    print(
        f"\nlater half ({len(last)} windows): Spark part median {spark_s:.1f} s, "
        f"server CPU median {server_s:.1f} s, "
        f"full GCs {sum(r['full_gcs'] for r in last):.0f}, "
        f"old generation after the last window {runs[-1]['old_gen_mb']:.0f} MB"
    )
    first = runs[0]["spark_s"]
    print(f"warm / first window (the cold server, same run): Spark part {spark_s / first:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
