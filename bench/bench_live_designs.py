"""Live mode's designs side by side (issue 29): a trailing window recomputed each cycle, as ``kip714_live``
does, against Spark Structured Streaming over the same committed landing files, incremental with state.

Both run the same aggregation, each on a fresh Spark Connect server of its own (``local[2]``: no state,
cache or JIT left by the other), over the same chunk files released in arrival order every ``--every-s``
of telemetry time (no waiting: the next files are released when the previous cycle ends, so the figures
are CPU per hour of telemetry, not freshness under load); the order alternates round by round:

- **recomputed** (the chosen design's shape, and the baseline): each cycle reads the chunks that arrived
  in ``[t - lookback - slack, t)`` (the lookback plus ``live.cycle.CLOCK_SLACK``, as ``--chunks-from``
  selects them) with the product's settings for those bytes (``tune_for_input``), rolls up the points of
  ``[t - lookback, t)`` and writes them;
- **streaming**: one query over a folder the chunk files are hard-linked into as they arrive (the file
  source), a watermark of the same clock slack, a trigger every second, and ``processAllAvailable`` once
  a cycle's files are in: it reads each file once and keeps the open buckets' aggregates in its state
  store (``--state-store``; each cycle's line shows the state's rows and memory); a file sink (the only
  sink that writes tables without a Python worker on the server) takes a bucket once the watermark has
  passed it, so a bucket is readable no sooner than the slack after its last point.

The aggregation is the rollup's scalar part (count, min, max, avg, sum and last value per bucket x client
instance x metric x labels): what both designs can compute. The real rollup also diffs cumulative counters
against their previous point (a per-series lag, which a streaming aggregation cannot express without
arbitrary state) and merges histogram buckets; the real pipeline has four more steps, each its own query.

The zone is ``tests/support/fleet_landing.py``'s fleet shape (``bench_fleet_scale.py``'s clients and
brokers, landed through the lander's staging path), one chunk per partition per cycle; only the steady
cycles run (not the pushes before the fleet's start nor its terminating pushes). After each round, one
recomputed cycle's window (the latest the streaming sink holds in full) is compared row for row with the
streaming output's rows of the same buckets; the run exits 1 if they differ.

    .venv/bin/python bench/bench_live_designs.py                     # 1,000 instances, 10 minutes
    .venv/bin/python bench/bench_live_designs.py --instances 100 --minutes 4 --warmup-cycles 2 --rounds 1
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "devtools"))
sys.path.insert(0, str(REPO / "spark_apps"))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from arguments import non_negative_int, positive_int  # noqa: E402
from kip714_common.schemas import DATAPOINT_SCHEMA  # noqa: E402
from kip714_common.session import REQUIRED_CONF, SMALL_INPUT_CONF, tune_for_input  # noqa: E402
from kip714_dev.signals import exit_on_sigterm  # noqa: E402
from pyspark.sql import Column, DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.connect.streaming.query import StreamingQuery  # noqa: E402

from airflow_provider_kip714.live.cycle import CLOCK_SLACK  # noqa: E402
from tests.support.fleet_landing import FleetShape, land_fleet  # noqa: E402

NANOS = 1_000_000_000
STATE_STORES = {
    "memory": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
"""``--state-store``: where the streaming query keeps its open buckets' aggregates between batches."""
STREAMING_CONF = {
    # a bucket leaves the state when the next data batch's watermark has passed it, as in a live query
    # whose every trigger brings new files: no extra batch per cycle only to move the watermark
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
}
GROUP_KEYS = (
    "record_type",
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "node_id",
    "metric_name",
    "metric_type",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=positive_int, default=1000, help="client instances (1000)")
    parser.add_argument("--minutes", type=positive_int, default=10, help="minutes of telemetry (10)")
    parser.add_argument("--every-s", type=positive_int, default=30, help="cycle interval, seconds (30)")
    parser.add_argument("--lookback-s", type=positive_int, default=60, help="trailing window, seconds (60)")
    parser.add_argument("--bucket-s", type=positive_int, default=10, help="rollup bucket, seconds (10)")
    parser.add_argument(
        "--warmup-cycles",
        type=non_negative_int,
        default=6,
        help="cycles not counted (the window filling, the JIT) (6)",
    )
    parser.add_argument(
        "--state-store",
        choices=sorted(STATE_STORES),
        default="memory",
        help="the streaming query's state store: Spark's default (memory, on the heap) or rocksdb (off it)",
    )
    parser.add_argument(
        "--rounds", type=positive_int, default=2, help="rounds of both designs, the order alternating (2)"
    )
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one)")
    return parser


# ---- the zone, its chunk files in arrival order ---------------------------------------------------


def chunk_files_by_slot(zone: Path, start_ns: int, every_s: int) -> dict[int, list[Path]]:
    """Each committed datapoints file under the cycle slot its records arrived in (their broker timestamps;
    ``land_fleet`` cuts a chunk every ``every_s`` counted from the epoch, and ``start_ns`` is on the hour)."""
    slots: dict[int, list[Path]] = defaultdict(list)
    for path in sorted((zone / "datapoints").rglob("*.parquet")):
        stamps = pq.read_table(path, columns=["record_timestamp"]).column(0)
        newest_ns = pc.max(stamps.cast(pa.timestamp("ns", tz="UTC"))).value
        slots[newest_ns // (every_s * NANOS) - start_ns // (every_s * NANOS)].append(path)
    return dict(slots)


# ---- the aggregation both designs run ---------------------------------------------------------------


def event_time(frame: DataFrame) -> DataFrame:
    return frame.withColumn("ts", F.timestamp_micros(F.floor(F.col("time") / 1000)))


def aggregates() -> list[Column]:
    return [
        F.count(F.lit(1)).alias("count"),
        F.min("value").alias("min"),
        F.max("value").alias("max"),
        F.avg("value").alias("avg"),
        F.sum("value").alias("sum"),
        F.max_by("value", "time").alias("last"),
    ]


def rollup(frame: DataFrame, bucket_s: int) -> DataFrame:
    """The scalar rollup, keyed by the bucket's window and the series (labels as sorted entries)."""
    return (
        frame.withColumn("labels", F.array_sort(F.map_entries("attributes")))
        .groupBy(F.window("ts", f"{bucket_s} seconds").alias("bucket"), *GROUP_KEYS, "labels")
        .agg(*aggregates())
        .withColumn("bucket_start", F.col("bucket.start"))
        .drop("bucket")
    )


# ---- measuring -----------------------------------------------------------------------------------


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Cycle:
    server_cpu: float
    client_cpu: float
    wall: float


def measured(server_pid: int, work: Callable[[], None]) -> Cycle:
    server, client, wall = process_cpu(server_pid), time.process_time(), time.perf_counter()
    work()
    return Cycle(process_cpu(server_pid) - server, time.process_time() - client, time.perf_counter() - wall)


# ---- the two designs -----------------------------------------------------------------------------


class Recomputed:
    """Each cycle: read the chunks of ``[t - lookback - slack, t)``, roll up ``[t - lookback, t)``, write it
    (a folder per cycle, kept for the comparison; live mode overwrites the window's hour partitions)."""

    def __init__(self, spark: SparkSession, args: argparse.Namespace, out: Path) -> None:
        self.spark, self.args, self.out = spark, args, out
        slack_s = int(CLOCK_SLACK.total_seconds())
        self.read_slots = math.ceil((args.lookback_s + slack_s) / args.every_s)
        self.small_input_cycles = 0

    def cycle(self, slot: int, files_by_slot: dict[int, list[Path]], end_ns: int) -> None:
        files = [
            str(path)
            for earlier in range(slot - self.read_slots, slot + 1)
            for path in files_by_slot.get(earlier, [])
        ]
        # the product's settings for the bytes a cycle reads (pipeline.py: tune_for_input), each cycle afresh
        if tune_for_input(self.spark, sum(Path(path).stat().st_size for path in files)):
            self.small_input_cycles += 1
        else:
            for key in SMALL_INPUT_CONF:
                self.spark.conf.unset(key)
        start_ns = end_ns - self.args.lookback_s * NANOS
        points = self.spark.read.schema(DATAPOINT_SCHEMA).parquet(*files)
        window = event_time(points.where((F.col("time") >= start_ns) & (F.col("time") < end_ns)))
        rollup(window, self.args.bucket_s).write.parquet(str(self.output(slot)))

    def output(self, slot: int) -> Path:
        return self.out / f"cycle-{slot:06d}"

    def progress(self) -> str:
        return ""


class Streaming:
    """One query over the linked chunk files: file source, watermark of the clock slack, file sink."""

    def __init__(self, spark: SparkSession, args: argparse.Namespace, work: Path) -> None:
        self.spark, self.args = spark, args
        self.source, self.out = work / "arrived", work / "streaming-out"
        self.source.mkdir(parents=True, exist_ok=True)
        self.checkpoint = work / "streaming-checkpoint"
        self.query: StreamingQuery | None = None

    def cycle(self, slot: int, files_by_slot: dict[int, list[Path]], end_ns: int) -> None:
        for path in files_by_slot.get(slot, []):
            os.link(
                path, self.source / f"{slot:06d}-{path.parent.parent.name}-{path.parent.name}-{path.name}"
            )
        if self.query is None:
            self.query = self.start()
        self.query.processAllAvailable()

    def progress(self) -> str:
        """The last batch's input and the state the query keeps between batches."""
        last = self.query.lastProgress if self.query is not None else None
        if not last:
            return ""
        states = last.stateOperators or []
        rows = states[0].numRowsTotal if states else 0
        memory = states[0].memoryUsedBytes if states else 0
        return (
            f"; batch {last.batchId}: {last.numInputRows or 0:,} input rows, state {rows or 0:,} rows,"
            f" {(memory or 0) / 1e6:.0f} MB"
        )

    def start(self) -> StreamingQuery:
        slack_s = int(CLOCK_SLACK.total_seconds())
        points = event_time(self.spark.readStream.schema(DATAPOINT_SCHEMA).parquet(str(self.source)))
        rolled = rollup(points.withWatermark("ts", f"{slack_s} seconds"), self.args.bucket_s)
        return (
            rolled.writeStream.format("parquet")
            .outputMode("append")
            .option("checkpointLocation", str(self.checkpoint))
            # a cycle's files are in place before processAllAvailable; the query lists its folder each
            # second while the replay prepares the next cycle (a live query would every interval)
            .trigger(processingTime="1 second")
            .start(str(self.out))
        )

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()


# ---- the run ---------------------------------------------------------------------------------------


def settled(cycles: list[Cycle], warmup: int) -> list[Cycle]:
    kept = cycles[warmup:]
    if not kept:
        raise SystemExit(f"--warmup-cycles {warmup} leaves no cycle of {len(cycles)} to measure")
    return kept


def summary(name: str, cycles: list[Cycle], every_s: int) -> float:
    server = [cycle.server_cpu for cycle in cycles]
    client = [cycle.client_cpu for cycle in cycles]
    walls = [cycle.wall for cycle in cycles]
    per_hour = statistics.mean(server) * 3600 / every_s
    print(
        f"{name}: {len(cycles)} settled cycles, server CPU per cycle median {statistics.median(server):.2f} s"
        f" ({min(server):.2f}-{max(server):.2f}), client {statistics.median(client):.2f} s, wall median"
        f" {statistics.median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f}); server CPU per hour of"
        f" telemetry {per_hour:.0f} s",
        flush=True,
    )
    return per_hour


@dataclass(frozen=True)
class Zone:
    start_ns: int
    every_s: int
    files_by_slot: dict[int, list[Path]]
    steady_slots: list[int]
    """The cycles of the fleet's steady pushing: not its first pushes before the start (slot -1) nor the
    terminating pushes after its end."""


def build_zone(args: argparse.Namespace, root: Path) -> Zone:
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    start_ns = int(start.timestamp()) * NANOS
    shape = FleetShape(instances=args.instances, duration_s=args.minutes * 60, chunk_interval_s=args.every_s)
    began = time.perf_counter()
    counts = land_fleet(root, start, shape)
    files_by_slot = chunk_files_by_slot(root, start_ns, args.every_s)
    steady = [slot for slot in sorted(files_by_slot) if 0 <= slot < args.minutes * 60 // args.every_s]
    zone = Zone(start_ns, args.every_s, files_by_slot, steady)
    files = sum(len(paths) for paths in files_by_slot.values())
    size = sum(path.stat().st_size for paths in files_by_slot.values() for path in paths)
    print(
        f"zone: {counts['instances']:,} instances, {args.minutes} min, {counts['records']:,} records,"
        f" {counts['points']:,} points, {files} chunk files ({size / 1e6:.1f} MB), {len(steady)} cycles of"
        f" {args.every_s} s (built in {time.perf_counter() - began:.0f} s)",
        flush=True,
    )
    return zone


def run_design(name: str, args: argparse.Namespace, zone: Zone, work: Path) -> list[Cycle]:
    """One design's cycles on a server of its own (no state, cache or JIT left by the other design)."""
    from kip714_dev.local_spark import connect

    state = connect.start(work / "connect", master="local[2]")
    try:
        spark = SparkSession.builder.remote(state.url).getOrCreate()
        store = {"spark.sql.streaming.stateStore.providerClass": STATE_STORES[args.state_store]}
        for key, value in {**REQUIRED_CONF, **STREAMING_CONF, **store}.items():
            spark.conf.set(key, value)
        design: Recomputed | Streaming = (
            Recomputed(spark, args, work / "recomputed-out")
            if name == "recomputed"
            else Streaming(spark, args, work)
        )
        cycles = []
        try:
            for slot in zone.steady_slots:
                end_ns = zone.start_ns + (slot + 1) * zone.every_s * NANOS
                cycles.append(measured(state.pid, partial(design.cycle, slot, zone.files_by_slot, end_ns)))
                print(
                    f"  {name} cycle {slot}: server {cycles[-1].server_cpu:.2f} CPU s, wall"
                    f" {cycles[-1].wall:.2f} s{design.progress()}",
                    flush=True,
                )
        finally:
            if isinstance(design, Streaming):
                design.stop()
        if isinstance(design, Recomputed):
            print(
                f"  recomputed: {design.small_input_cycles} of {len(cycles)} cycles with small-input settings"
            )
        spark.stop()
        return cycles
    finally:
        connect.stop(work / "connect")


def rows_of(path: Path, buckets: set[object] | None = None) -> Counter[tuple[object, ...]]:
    """The rows of a rollup output as a multiset (floats to 9 significant digits: summation order)."""
    table = pq.read_table(path)
    rows: Counter[tuple[object, ...]] = Counter()
    for row in table.to_pylist():
        if buckets is not None and row["bucket_start"] not in buckets:
            continue
        rows[
            tuple(
                f"{value:.9g}" if isinstance(value, float) else repr(value)
                for _, value in sorted(row.items())
            )
        ] += 1
    return rows


def compare(recomputed_cycle: Path, streaming_out: Path) -> tuple[int, int, int]:
    """One recomputed cycle's rows against the streaming output's rows of the same buckets: (rows, only in
    recomputed, only in streaming)."""
    buckets = set(pq.read_table(recomputed_cycle, columns=["bucket_start"]).column(0).to_pylist())
    left, right = rows_of(recomputed_cycle), rows_of(streaming_out, buckets)
    return sum(left.values()), sum((left - right).values()), sum((right - left).values())


def run_round(args: argparse.Namespace, zone: Zone, compared: int, round_index: int, work: Path) -> float:
    """Both designs, each on a fresh server, the order alternating; returns streaming/recomputed CPU."""
    order = ["recomputed", "streaming"] if round_index % 2 == 0 else ["streaming", "recomputed"]
    per_hour = {}
    for name in order:
        cycles = run_design(name, args, zone, work / name)
        per_hour[name] = summary(name, settled(cycles, args.warmup_cycles), args.every_s)
    rows, only_recomputed, only_streaming = compare(
        work / "recomputed" / "recomputed-out" / f"cycle-{compared:06d}", work / "streaming" / "streaming-out"
    )
    print(
        f"outputs compared on cycle {compared}'s window: {rows:,} rows, {only_recomputed} only recomputed,"
        f" {only_streaming} only streaming",
        flush=True,
    )
    if not rows:
        raise SystemExit(f"cycle {compared}'s window is empty: nothing to compare")
    if only_recomputed or only_streaming:
        raise SystemExit("the two designs' outputs differ: the comparison is void")
    ratio = per_hour["streaming"] / per_hour["recomputed"]
    print(
        f"round {round_index + 1}: streaming/recomputed server CPU per hour of telemetry:"
        f" {per_hour['streaming']:.0f} / {per_hour['recomputed']:.0f} = {ratio:.2f}x",
        flush=True,
    )
    return ratio


def check_args(args: argparse.Namespace) -> None:
    if 3600 % args.every_s or 3600 % args.bucket_s:
        raise SystemExit("--every-s and --bucket-s must divide an hour")
    if args.work is not None and args.work.exists() and any(args.work.iterdir()):
        raise SystemExit(f"--work {args.work}: must be an empty or new folder")


def run(args: argparse.Namespace, work: Path) -> int:
    check_args(args)
    print(f"load average at start: {load_average()}", flush=True)
    zone = build_zone(args, work / "zone")
    # the latest cycle whose window the streaming sink holds in full: the watermark (slack) and a bucket
    # past it, and the batch after (a batch evicts with the previous batch's watermark)
    slack_s = int(CLOCK_SLACK.total_seconds())
    compared = zone.steady_slots[-1] - math.ceil((slack_s + args.bucket_s) / args.every_s) - 1
    if compared < zone.steady_slots[0] + args.warmup_cycles:
        raise SystemExit("--minutes: too few cycles to measure and compare; give more minutes")
    ratios = [
        run_round(args, zone, compared, round_index, work / f"round-{round_index + 1}")
        for round_index in range(args.rounds)
    ]
    print(
        f"streaming/recomputed server CPU per hour of telemetry, median of {len(ratios)} rounds:"
        f" {statistics.median(ratios):.2f}x ({', '.join(f'{ratio:.2f}' for ratio in ratios)});"
        f" load average at end: {load_average()}",
        flush=True,
    )
    return 0


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    exit_on_sigterm()  # the finally blocks stop the Connect server
    args = build_parser().parse_args()
    if args.work is not None:
        check_args(args)
        args.work.mkdir(parents=True, exist_ok=True)
        return run(args, args.work)
    with tempfile.TemporaryDirectory(prefix="kip714-bench-designs-") as work:
        return run(args, Path(work))


if __name__ == "__main__":
    sys.exit(main())
