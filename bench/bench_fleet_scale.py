"""Ten thousand client instances through three brokers: what the plugin accepts, lands, and costs.

Workload (issue: several brokers, broker failure, ten thousand clients): ``--instances`` (10,000)
distinct KIP-714 client instances speak the real wire protocol (ApiVersions, then
GetTelemetrySubscriptions, then PushTelemetry every ``--interval-s`` (10 s), and a terminating push at
the end) for ``--duration-s`` (300 s) through a local 3-broker Apache Kafka 4.4.0 with the plugin on
every broker. The instances come from ``--processes`` load processes, each pipelining its requests
over a few asyncio connections per broker (``kip714_dev.kafka_wire``), each instance sticking to one
broker as a real client does. A follow-mode landing (``kip714 telemetry land --follow``) runs beside
the load, as production runs it.

Figures, each against the baseline this run measures:

- pushes the brokers accepted (answered NONE) against client pushes landed in the landing zone
  (target >= 99.9 %), and against the plugin's own export count;
- plugin export time (p50/p99 from its histogram, max) and drops by reason;
- per broker: CPU cores used under load against the same broker idle before the load, and heap used
  (``jstat``) at the end against before;
- landing lag at the end: from the last accepted push until everything the brokers wrote has landed;
- throttled and refused pushes (should be 0: every push is sent on schedule);
- rollups (``fleet_rollups.py``, skip with ``--no-rollups``): after the brokers stop, the real rollups
  app on the landed zone with ``--master local[2]`` (the baseline) and on a Spark standalone cluster of
  2 workers started and stopped by the bench: points in, rollup rows out, wall seconds, the ratio, and
  exit 1 when the two outputs' fingerprints differ.

Bounded: the load targets 127.0.0.1 only and stops after ``--duration-s``. Prints the figures; the
latest go into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from bench_plugin_push import BrokerView, CpuWindow, ExportTime
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from fleet_rollups import print_rollups, run_rollups
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.get_telemetry_subscriptions.v0.request import GetTelemetrySubscriptionsRequest
from kio.schema.get_telemetry_subscriptions.v0.response import GetTelemetrySubscriptionsResponse
from kio.schema.push_telemetry.v0.request import PushTelemetryRequest
from kio.schema.push_telemetry.v0.response import PushTelemetryResponse
from kio.static.primitive import i8, i32
from kip714_dev.kafka_wire import AsyncKafkaWireConnection
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from kip714_dev.signals import exit_on_sigterm

from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.telemetry.landing_zone import LandingZone

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))
from otlp_payloads import producer_like_payload

CLIENT_ID_PREFIX = "fleet-"
SUBSCRIPTION_NAME = "bench-fleet-scale"
CONNECTIONS_PER_BROKER = 2
MAX_IN_FLIGHT = 64


# ---- load processes ----------------------------------------------------------------------------


@dataclass
class LoadReport:
    """What one load process saw: broker answers by error code, and when its last push was accepted."""

    subscribed: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    accepted: int = 0
    last_accepted_wall: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)


@dataclass
class Instance:
    connection: AsyncKafkaWireConnection
    instance_id: Any = None
    subscription_id: int = 0


async def _subscribe(instance: Instance) -> None:
    response = await instance.connection.send(
        GetTelemetrySubscriptionsRequest(client_instance_id=instance.instance_id),
        GetTelemetrySubscriptionsResponse,
    )
    if response.error_code is not ErrorCode.none:
        raise RuntimeError(f"GetTelemetrySubscriptions: {response.error_code.name}")
    instance.instance_id = response.client_instance_id or instance.instance_id
    instance.subscription_id = int(response.subscription_id)


async def push_telemetry(instance: Instance, payload: bytes, terminating: bool) -> ErrorCode:
    """One PushTelemetry (uncompressed) under the instance's subscription; the broker's answer."""
    response = await instance.connection.send(
        PushTelemetryRequest(
            client_instance_id=instance.instance_id,
            subscription_id=i32(instance.subscription_id),
            terminating=terminating,
            compression_type=i8(0),
            metrics=payload,
        ),
        PushTelemetryResponse,
    )
    return response.error_code


async def _push(instance: Instance, payload: bytes, terminating: bool, report: LoadReport) -> None:
    started = time.perf_counter()
    answer = await push_telemetry(instance, payload, terminating)
    report.latencies_ms.append((time.perf_counter() - started) * 1000)
    report.answers[answer.name] += 1
    if answer is ErrorCode.none:
        report.accepted += 1
        report.last_accepted_wall = time.time()
    elif answer is ErrorCode.unknown_subscription_id:
        await _subscribe(instance)  # what a real client does: ask again, push at the next interval


class Payloads:
    """The push payload, its points stamped with the current second (as a client stamps them).

    Rebuilt once a second per load process, not per push: the rollups phase buckets the points by
    their time, so they must carry the push's time rather than a fixed one.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.second = -1
        self.payload = b""

    def now(self) -> bytes:
        second = int(time.time())
        if second != self.second:
            self.second = second
            self.payload = producer_like_payload(10, seed=self.seed, time_ns=second * 10**9)
        return self.payload


async def _open(ports: list[int], process: int) -> list[AsyncKafkaWireConnection]:
    connections = []
    for port in ports:
        for index in range(CONNECTIONS_PER_BROKER):
            connection = await AsyncKafkaWireConnection.open(
                "127.0.0.1", port, client_id=f"{CLIENT_ID_PREFIX}{process}-{port}-{index}"
            )
            await connection.send(
                ApiVersionsRequest(client_software_name="kip714-fleet", client_software_version="1.0"),
                ApiVersionsResponse,
            )
            connections.append(connection)
    return connections


async def _run_load(
    process: int, ports: list[int], instances: int, interval_s: float, duration_s: float
) -> LoadReport:
    report = LoadReport()
    payloads = Payloads(seed=process)
    connections = await _open(ports, process)
    fleet = [Instance(connections[index % len(connections)]) for index in range(instances)]
    gate = asyncio.Semaphore(MAX_IN_FLIGHT)
    started = time.monotonic()
    end = started + duration_s
    ramp = min(interval_s, duration_s / 4)
    subscribed: set[int] = set()

    async def life(index: int) -> None:
        """One client instance: subscribe, push one interval after each answer, a terminating push last.

        Timing from the answer (not from the plan) keeps every push at least one interval after the
        broker saw the previous request, so none is throttled however loaded the machine is.
        """
        instance = fleet[index]
        await asyncio.sleep(ramp * index / instances)  # a fleet that starts over one interval
        async with gate:
            await _subscribe(instance)
        subscribed.add(index)
        answered = time.monotonic()
        while answered + interval_s < end:
            await asyncio.sleep(answered + interval_s + random.uniform(0, 0.05) - time.monotonic())
            async with gate:
                await _push(instance, payloads.now(), False, report)
            answered = time.monotonic()
        await asyncio.sleep(max(0.0, end - time.monotonic()))
        async with gate:
            await _push(instance, payloads.now(), True, report)

    await asyncio.gather(*(life(index) for index in range(instances)))
    report.subscribed = len(subscribed)
    for connection in connections:
        await connection.close()
    return report


def load_process(
    process: int, ports: list[int], instances: int, interval_s: float, duration_s: float, out: Any
) -> None:
    report = asyncio.run(_run_load(process, ports, instances, interval_s, duration_s))
    out.put(report)


# ---- the brokers ---------------------------------------------------------------------------------


def start_cluster(factory: LocalKafkaClusterFactory, brokers: int, name: str) -> LocalKafkaCluster:
    """The fleet benches' cluster: a 6-partition telemetry topic, broker records every 10 s."""
    return factory.start(
        brokers=brokers,
        sasl_users={},
        broker_metrics_interval_ms=10_000,
        overrides={"kip714.topic.partitions": "6"},
        name=name,
    )


def broker_ports(cluster: LocalKafkaCluster) -> list[int]:
    """Each broker's bootstrap port: the load processes open their wire connections to every one."""
    return [int(b.state.bootstrap_servers.rsplit(":", 1)[1]) for b in cluster.brokers]


def subscribe_fleet(config: dict[str, Any], name: str, interval_s: float) -> None:
    """Create (or update) subscription ``name``: every metric from the fleet's clients each ``interval_s``.

    The fleet's clients are those whose ``client_id`` starts with ``CLIENT_ID_PREFIX`` (see ``_open``).
    """
    with ClientMetricsAdmin(to_kafka_python_kwargs(config)) as admin:
        admin.upsert(
            Subscription.from_spec(
                name,
                metrics="*",
                interval_ms=int(interval_s * 1000),
                match=f"client_id={CLIENT_ID_PREFIX}.*",
            )
        )


def heap_used_mb(pid: int) -> float:
    """Heap in use (survivor + eden + old, KB from ``jstat -gc``) in MB."""
    jstat = shutil.which("jstat") or str(Path(os.environ.get("JAVA_HOME", "/usr")) / "bin" / "jstat")
    lines = subprocess.run([jstat, "-gc", str(pid)], capture_output=True, text=True, timeout=30).stdout.split(
        "\n"
    )
    values = dict(zip(lines[0].split(), lines[1].split(), strict=False))
    return sum(float(values[key]) for key in ("S0U", "S1U", "EU", "OU")) / 1024


def read_broker_records(bootstrap: str, topic: str) -> BrokerView:
    """The plugin's broker records (keys ``broker-<node>``), read from the start to the end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"fleet-{uuid.uuid4().hex[:6]}",
            "enable.metrics.push": False,
        }
    )
    view = BrokerView()
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        remaining = {p for p, end in ends.items() if end > 0}
        while remaining:
            for message in consumer.consume(5000, timeout=1.0):
                if message.error():
                    continue
                if (message.key() or b"").startswith(b"broker-"):
                    view.add(message.value() or b"", message.timestamp()[1])
                if message.offset() >= ends[message.partition()] - 1:
                    remaining.discard(message.partition())
    finally:
        consumer.close()
    return view


def topic_end_total(bootstrap: str, topic: str) -> int:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "fleet-ends", "enable.metrics.push": False}
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions
        )
    finally:
        consumer.close()


def landed_counts(zone: LandingZone) -> tuple[int, int]:
    """(every landed record, landed client pushes): committed raw rows, broker records told by key."""
    keys = zone.read_table("raw", columns=["key"])
    if not keys.num_rows:
        return 0, 0
    broker = pc.starts_with(pc.cast(keys.column("key"), pa.string()), "broker-")
    return keys.num_rows, keys.num_rows - pc.sum(broker).as_py()


# ---- the run -------------------------------------------------------------------------------------


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The load and the landing; the brokers are stopped on return (the zone stays in ``work``)."""
    factory = LocalKafkaClusterFactory(work / "kafka")
    cluster = start_cluster(factory, brokers=3, name="fleet")
    try:
        bootstrap = cluster.bootstrap_servers
        ports = broker_ports(cluster)
        subscribe_fleet(cluster.client_config(), SUBSCRIPTION_NAME, args.interval_s)
        time.sleep(2)
        idle = {b.node_id: CpuWindow(b.pid) for b in cluster.brokers}
        time.sleep(10)
        for window in idle.values():
            window.sample()
        heap_before = {b.node_id: heap_used_mb(b.pid) for b in cluster.brokers}
        zone_dir = work / "zone"
        lander = subprocess.Popen(
            [str(Path(sys.executable).with_name("kip714")), "telemetry", "land",
             "--bootstrap-server", bootstrap,
             "--topic", cluster.telemetry_topic, "--out", str(zone_dir), "--follow",
             "--timeout-s", str(args.duration_s + 240), "--chunk-interval-s", "2", "--no-fsync", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        loaded = {b.node_id: CpuWindow(b.pid) for b in cluster.brokers}
        queue: Any = multiprocessing.get_context("spawn").Queue()
        share = [
            args.instances // args.processes + (1 if k < args.instances % args.processes else 0)
            for k in range(args.processes)
        ]
        workers = [
            multiprocessing.get_context("spawn").Process(
                target=load_process, args=(k, ports, share[k], args.interval_s, args.duration_s, queue)
            )
            for k in range(args.processes)
        ]
        print(
            f"load: {args.instances} instances from {args.processes} processes for {args.duration_s:.0f} s",
            flush=True,
        )
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + args.duration_s + 120
        reports: list[LoadReport] = []
        while len(reports) < len(workers) and time.monotonic() < deadline:
            for window in loaded.values():
                window.sample()
            with contextlib.suppress(Empty):  # nothing yet: keep sampling
                reports.append(queue.get(timeout=1))
        for worker in workers:
            worker.join(timeout=10)
        if len(reports) < len(workers):
            raise SystemExit("a load process did not report")
        heap_after = {b.node_id: heap_used_mb(b.pid) for b in cluster.brokers}
        accepted = sum(r.accepted for r in reports)
        last_accepted = max(r.last_accepted_wall for r in reports)
        # Landing lag: from the last accepted push until every record the brokers wrote by then is landed.
        time.sleep(1)
        written = topic_end_total(bootstrap, cluster.telemetry_topic)
        zone = LandingZone(str(zone_dir), cluster.telemetry_topic, fsync=False)
        while True:
            records, _ = landed_counts(zone)
            if records >= written or time.time() - last_accepted > 180:
                break
            time.sleep(1.0)
        lag_s = time.time() - last_accepted  # resolution: this poll's second plus one read of the zone
        lander.terminate()
        lander.wait(timeout=60)
        _, pushes_landed = landed_counts(zone)
        view = read_broker_records(bootstrap, cluster.telemetry_topic)
        export = ExportTime.merge(view.final_histograms())
        answers = sum((r.answers for r in reports), Counter())
        latencies = sorted(ms for r in reports for ms in r.latencies_ms)
        return {
            "instances": args.instances,
            "subscribed": sum(r.subscribed for r in reports),
            "duration_s": args.duration_s,
            "interval_s": args.interval_s,
            "answers": dict(answers),
            "accepted": accepted,
            "landed": pushes_landed,
            "landed_ratio": pushes_landed / accepted if accepted else 0.0,
            "plugin_exports": sum(view.exports_by_instance.values()),
            "max_instance_count": view.max_instance_count,
            "drops": view.drops_by_reason,
            "export_p50_ms": export.quantile(0.50)[1],
            "export_p99_ms": export.quantile(0.99)[1],
            "export_max_ms": export.max_ms,
            "push_rtt_p99_ms": latencies[int(0.99 * (len(latencies) - 1))] if latencies else 0.0,
            "landing_lag_s": lag_s,
            "brokers": {
                node: {
                    "idle_cores": idle[node].cores,
                    "load_cores": loaded[node].cores,
                    "peak_cores": loaded[node].peak_cores,
                    "heap_before_mb": heap_before[node],
                    "heap_after_mb": heap_after[node],
                }
                for node in idle
            },
        }
    finally:
        factory.stop_all()


def print_report(figures: dict[str, Any]) -> None:
    f = figures
    print(
        f"\n{f['instances']} instances ({f['subscribed']} subscribed), a push every {f['interval_s']:.0f} s "
        f"for {f['duration_s']:.0f} s, 3 brokers"
    )
    print(f"answers: {f['answers']}")
    print(
        f"accepted {f['accepted']}, landed {f['landed']}: {100 * f['landed_ratio']:.3f} % (target >= 99.9 %)"
    )
    print(
        f"plugin export count {f['plugin_exports']}; "
        f"broker instance count (max of one broker) {f['max_instance_count']}"
    )
    print(
        f"export time p50 {f['export_p50_ms']:.3f} ms, p99 {f['export_p99_ms']:.3f} ms, "
        f"max {f['export_max_ms']:.1f} ms; drops {f['drops'] or 0}"
    )
    print(
        f"push round trip p99 {f['push_rtt_p99_ms']:.1f} ms; "
        f"landing lag at the end {f['landing_lag_s']:.1f} s"
    )
    for node, b in sorted(f["brokers"].items()):
        ratio = b["load_cores"] / b["idle_cores"] if b["idle_cores"] else float("inf")
        print(
            f"broker {node}: {b['load_cores']:.2f} cores under load (peak {b['peak_cores']:.2f}) vs "
            f"{b['idle_cores']:.3f} idle ({ratio:.0f}x); "
            f"heap {b['heap_before_mb']:.0f} -> {b['heap_after_mb']:.0f} MB"
        )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--interval-s", type=float, default=10.0)
    parser.add_argument("--duration-s", type=float, default=300.0)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true", help="keep the brokers' and the zone's files")
    parser.add_argument(
        "--no-rollups",
        dest="rollups",
        action="store_false",
        help="skip the rollups on local[2] and standalone",
    )
    args = parser.parse_args(argv)
    if not (
        1 <= args.instances <= 50_000
        and 1 <= args.processes <= 16
        and 1 <= args.interval_s <= 300
        and 10 <= args.duration_s <= 900
    ):
        parser.error("--instances 1..50000, --processes 1..16, --interval-s 1..300, --duration-s 10..900")
    return args


def main() -> None:
    args = parse_args()
    work = Path(tempfile.mkdtemp(prefix="kip714-fleet-"))
    try:
        figures = run(args, work)
        print_report(figures)
        if args.rollups:
            figures["rollups"] = run_rollups(work / "zone", work)
            print_rollups(figures["rollups"])
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    if args.rollups and not figures["rollups"]["same"]:
        sys.exit(1)


if __name__ == "__main__":
    exit_on_sigterm()  # a kill still stops the local brokers this script started
    main()
