"""Live mode's designs side by side (issue 29): a trailing window recomputed each cycle, as ``kip714_live``
does, against Spark Structured Streaming over the same committed landing files, incremental with state.

Both run the same aggregation on one Spark Connect server (``local[2]``), one after the other, over the
same chunk files released in arrival order, every ``--every-s`` of telemetry time (no waiting: the next
files are released when the previous cycle ends, so the figures are CPU per hour of telemetry, not
freshness under load):

- **recomputed** (the chosen design's shape, and the baseline): each cycle reads the chunks that arrived
  in ``[t - lookback - slack, t)`` (the lookback plus ``live.cycle.CLOCK_SLACK``, as ``--chunks-from``
  selects them), rolls up the points of ``[t - lookback, t)`` and overwrites its output;
- **streaming**: one query over a folder the chunk files are linked into as they arrive (the file
  source), a watermark of the same clock slack, a trigger every second, and ``processAllAvailable`` once
  a cycle's files are in: it reads each file once and keeps the open buckets' aggregates in its state
  store; a file sink (the only sink that writes tables without a Python worker on the server) takes a
  bucket once the watermark has passed it, so a bucket is readable no sooner than bucket + slack after
  its last point.

The aggregation is the rollup's scalar part (count, min, max, avg, sum and last value per bucket x client
instance x metric x labels): what both designs can compute. The real rollup also diffs cumulative counters
against their previous point (a per-series lag, which a streaming aggregation cannot express without
arbitrary state) and merges histogram buckets; the real pipeline has four more steps, each its own query.

The zone is ``tests/support/fleet_landing.py``'s fleet shape (``bench_fleet_scale.py``'s clients and
brokers, landed through the lander's staging path), one chunk per partition per cycle. After the cycles,
the buckets both designs hold in full are compared row for row.

    .venv/bin/python bench/bench_live_designs.py                     # 1,000 instances, 10 minutes
    .venv/bin/python bench/bench_live_designs.py --instances 100 --minutes 3 --warmup-cycles 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "devtools"))
sys.path.insert(0, str(REPO / "spark_apps"))

import pyarrow.parquet as pq  # noqa: E402
from kip714_common.schemas import DATAPOINT_SCHEMA  # noqa: E402
from kip714_common.session import REQUIRED_CONF  # noqa: E402
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


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def non_negative_int(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return int(text)


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
    """Each committed datapoints file under the cycle slot its records arrived in (broker timestamps)."""
    slots: dict[int, list[Path]] = defaultdict(list)
    for path in sorted((zone / "datapoints").rglob("*.parquet")):
        stamps = pq.read_table(path, columns=["record_timestamp"]).column(0)
        newest_ns = max(stamp.value for stamp in stamps) * 1_000_000  # timestamp_ms
        slots[(newest_ns - start_ns) // (every_s * NANOS)].append(path)
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
        self.read_slots = -(-(args.lookback_s + slack_s) // args.every_s)

    def cycle(self, slot: int, files_by_slot: dict[int, list[Path]], end_ns: int) -> None:
        files = [
            str(path)
            for earlier in range(slot - self.read_slots, slot + 1)
            for path in files_by_slot.get(earlier, [])
        ]
        start_ns = end_ns - self.args.lookback_s * NANOS
        points = self.spark.read.schema(DATAPOINT_SCHEMA).parquet(*files)
        window = event_time(points.where((F.col("time") >= start_ns) & (F.col("time") < end_ns)))
        rollup(window, self.args.bucket_s).write.parquet(str(self.output(slot)))

    def output(self, slot: int) -> Path:
        return self.out / f"cycle-{slot:06d}"


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


def compare(spark: SparkSession, recomputed: DataFrame, streaming_out: Path) -> tuple[int, int, int]:
    """One cycle's rows (``recomputed``) against the streaming output's rows of the same buckets: (rows, only
    in recomputed, only in streaming); floats to 9 significant digits (summation order)."""
    streaming = spark.read.parquet(str(streaming_out))
    buckets = recomputed.select("bucket_start").distinct()

    def rounded(frame: DataFrame) -> DataFrame:
        return frame.join(buckets, "bucket_start").select(
            *[
                F.format_string("%.9g", name).alias(name)
                if name in ("min", "max", "avg", "sum", "last")
                else name
                for name in frame.columns
            ]
        )

    left, right = rounded(recomputed), rounded(streaming)
    return left.count(), left.exceptAll(right).count(), right.exceptAll(left).count()


def run_design(name: str, design: Recomputed | Streaming, server_pid: int, zone: Zone) -> list[Cycle]:
    cycles = []
    for slot in zone.slots:
        end_ns = zone.start_ns + (slot + 1) * zone.every_s * NANOS
        cycles.append(measured(server_pid, lambda: design.cycle(slot, zone.files_by_slot, end_ns)))  # noqa: B023
        print(
            f"  {name} cycle {slot}: server {cycles[-1].server_cpu:.2f} CPU s, wall {cycles[-1].wall:.2f} s"
        )
    return cycles


@dataclass(frozen=True)
class Zone:
    start_ns: int
    every_s: int
    files_by_slot: dict[int, list[Path]]

    @property
    def slots(self) -> list[int]:
        return sorted(self.files_by_slot)


def build_zone(args: argparse.Namespace, root: Path) -> Zone:
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    start_ns = int(start.timestamp()) * NANOS
    shape = FleetShape(instances=args.instances, duration_s=args.minutes * 60, chunk_interval_s=args.every_s)
    began = time.perf_counter()
    counts = land_fleet(root, start, shape)
    zone = Zone(start_ns, args.every_s, chunk_files_by_slot(root, start_ns, args.every_s))
    files = sum(len(paths) for paths in zone.files_by_slot.values())
    print(
        f"zone: {counts['instances']:,} instances, {args.minutes} min, {counts['records']:,} records,"
        f" {counts['points']:,} points, {files} chunk files in {len(zone.slots)} cycles of {args.every_s} s"
        f" (built in {time.perf_counter() - began:.0f} s)",
        flush=True,
    )
    return zone


def run_round(
    spark: SparkSession, args: argparse.Namespace, server_pid: int, zone: Zone, round_index: int, work: Path
) -> float:
    """Both designs over the zone, the order alternating round by round; returns streaming/recomputed."""
    recomputed, streaming = Recomputed(spark, args, work / "recomputed-out"), Streaming(spark, args, work)
    order: list[tuple[str, Recomputed | Streaming]] = [("recomputed", recomputed), ("streaming", streaming)]
    if round_index % 2:
        order.reverse()
    per_hour: dict[str, float] = {}
    try:
        for name, design in order:
            cycles = run_design(name, design, server_pid, zone)
            per_hour[name] = summary(name, settled(cycles, args.warmup_cycles), args.every_s)
    finally:
        streaming.stop()
    # the latest cycle whose window the watermark has passed (the streaming sink holds it in full)
    slack_s = int(CLOCK_SLACK.total_seconds())
    compared = zone.slots[-1] - -(-(slack_s + args.bucket_s) // args.every_s) - 1
    rows, only_recomputed, only_streaming = compare(
        spark, spark.read.parquet(str(recomputed.output(compared))), streaming.out
    )
    print(
        f"outputs compared on cycle {compared}'s window: {rows:,} rows, {only_recomputed} only recomputed,"
        f" {only_streaming} only streaming",
        flush=True,
    )
    if not rows or only_recomputed or only_streaming:
        raise SystemExit("the two designs' outputs differ: the comparison is void")
    ratio = per_hour["streaming"] / per_hour["recomputed"]
    print(
        f"round {round_index + 1}: streaming/recomputed server CPU per hour of telemetry:"
        f" {per_hour['streaming']:.0f} / {per_hour['recomputed']:.0f} = {ratio:.2f}x",
        flush=True,
    )
    return ratio


def run(args: argparse.Namespace, work: Path) -> int:
    from kip714_dev.local_spark import connect

    print(f"load average at start: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
    zone = build_zone(args, work / "zone")
    state = connect.start(work / "connect", master="local[2]")
    try:
        spark = SparkSession.builder.remote(state.url).getOrCreate()
        store = {"spark.sql.streaming.stateStore.providerClass": STATE_STORES[args.state_store]}
        for key, value in {**REQUIRED_CONF, **STREAMING_CONF, **store}.items():
            spark.conf.set(key, value)
        ratios = []
        for round_index in range(args.rounds):
            ratios.append(
                run_round(spark, args, state.pid, zone, round_index, work / f"round-{round_index + 1}")
            )
        slack_s = int(CLOCK_SLACK.total_seconds())
        print(
            f"streaming/recomputed server CPU per hour of telemetry, median of {len(ratios)} rounds:"
            f" {statistics.median(ratios):.2f}x ({', '.join(f'{ratio:.2f}' for ratio in ratios)}); a bucket"
            f" is readable after the cycle that read it (recomputed) or once the watermark has passed it"
            f" (streaming: its last point + {slack_s} s of slack + a cycle); load average at end:"
            f" {' '.join(Path('/proc/loadavg').read_text().split()[:3])}",
            flush=True,
        )
        spark.stop()
        return 0
    finally:
        connect.stop(work / "connect")


def main() -> int:
    exit_on_sigterm()  # the finally blocks stop the Connect server
    args = build_parser().parse_args()
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return run(args, args.work)
    with tempfile.TemporaryDirectory(prefix="kip714-bench-designs-") as work:
        return run(args, Path(work))


if __name__ == "__main__":
    sys.exit(main())
