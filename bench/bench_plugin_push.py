"""Broker plugin under load: N real librdkafka clients pushing KIP-714 telemetry every 1 s through the plugin.

Default workload (the plugin's benchmark issue): 200 confluent-kafka producers, split over a few
processes, live 60 s each on a throw-away local Apache Kafka 4.4.0 that loads ``broker_plugin/``.
A subscription (interval 1000 ms, all metrics, ``client_id=bench-.*``) exists before they start, so
each one picks it up at its first GetTelemetrySubscriptions.

Baselines from the same run, and what is compared with them:

- expected pushes = sum over clients of floor(active seconds / interval) + one terminating push each;
  compared with the pushes that landed on the telemetry topic (per client instance, from the record
  headers) and with the broker's own ``plugin_export.count`` (read from the plugin's broker records);
- export time p99, from the plugin's bucketed histogram, against the 1 ms target; the broker's own
  windowed avg/max gauges are printed beside it;
- drops (``kip714.plugin.dropped.count`` by reason) against zero;
- broker CPU (utime+stime of the broker process from /proc) under load against the same broker idle.
"""

from __future__ import annotations

import argparse
import logging
import math
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition, libversion
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from kip714_dev.local_kafka.plugin_jar import default_plugin_jar, repository_root
from kip714_dev.signals import exit_on_sigterm
from kip714_dev.telemetry_probe import TelemetryProbe
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import HistogramDataPoint, Metric, MetricsData

from airflow_provider_kip714.contract.topic import BrokerMetric, Header, RecordType
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription, parse_match

CLIENT_ID_PREFIX: Final = "bench-"
SUBSCRIPTION_NAME: Final = "bench-plugin-push"
EXPORTED_TARGET: Final = 0.99
P99_TARGET_MS: Final = 1.0
# Gauges the plugin writes next to its histogram (broker's own windowed values) and its own counter.
EXPORT_TIME_AVG: Final = f"{BrokerMetric.PLUGIN_EXPORT_TIME}.avg"
EXPORT_TIME_MAX: Final = f"{BrokerMetric.PLUGIN_EXPORT_TIME}.max"
PLUGIN_EXPORTED: Final = "kip714.plugin.exported.count"
PLUGIN_BUFFERED: Final = "kip714.plugin.buffered.records"
INSTANCE_ID_ATTRIBUTE: Final = "client_instance_id"
CLOCK_TICKS_PER_S: Final = os.sysconf("SC_CLK_TCK")


# ---- clients (run in worker processes) ------------------------------------------------------


@dataclass
class TelemetryLog:
    """One client's telemetry as librdkafka's own debug log tells it (``debug=telemetry``)."""

    subscribed_at: float | None = None  # first "Handled GetTelemetrySubscriptions" with metrics
    sent_regular: int = 0
    succeeded: int = 0
    failed: int = 0


class TelemetryLogCounter(logging.Handler):
    """Counts each client's push requests and answers from the log lines librdkafka hands Python."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.by_client: dict[str, TelemetryLog] = defaultdict(TelemetryLog)

    def emit(self, record: logging.LogRecord) -> None:
        if not isinstance(record.args, tuple) or len(record.args) != 3:
            return
        _, name, text = record.args
        log = self.by_client[str(name).split("#", 1)[0]]
        text = str(text)
        # The terminating push is logged during close(), after Python stops serving this client's logs.
        if "Sending PushTelemetryRequest" in text and not text.rstrip().endswith("terminating = true"):
            log.sent_regular += 1
        elif "PushTelemetryRequest succeeded" in text:
            log.succeeded += 1
        elif "PushTelemetryRequest failed" in text:
            log.failed += 1
        elif (
            "Handled GetTelemetrySubscriptions" in text
            and "PushScheduled" in text
            and log.subscribed_at is None
        ):
            log.subscribed_at = record.created


@dataclass(frozen=True)
class ClientLife:
    """Wall-clock life of one client (created, close() called, close() returned) and its telemetry log."""

    client_id: str
    created_at: float
    closing_at: float
    closed_at: float
    log: TelemetryLog

    @property
    def active_s(self) -> float:
        return self.closing_at - self.created_at

    @property
    def subscribed_s(self) -> float:
        return self.closing_at - self.log.subscribed_at if self.log.subscribed_at else 0.0


@dataclass(frozen=True)
class GroupReport:
    """What one client process did and what it cost."""

    lives: list[ClientLife]
    cpu_s: float
    max_rss_mib: float
    threads_while_running: int


def thread_count() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def run_client_group(bootstrap: str, client_ids: list[str], seconds: float, reports: Queue) -> None:
    """Create the producers, keep each one alive ``seconds`` (idle: telemetry only), then close it."""
    counter = TelemetryLogCounter()
    logger = logging.getLogger("bench.librdkafka")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(counter)
    started: list[tuple[str, float, Producer]] = []
    for client_id in client_ids:
        config = {"bootstrap.servers": bootstrap, "client.id": client_id, "enable.metrics.push": True}
        producer = Producer({**config, "debug": "telemetry", "logger": logger})
        started.append((client_id, time.time(), producer))
    threads = thread_count()
    closed: list[tuple[str, float, float, float]] = []
    while started:
        running: list[tuple[str, float, Producer]] = []
        for client_id, created_at, producer in started:
            if time.time() < created_at + seconds:
                producer.poll(0)  # serves queued log lines to the counter, so their time is right
                running.append((client_id, created_at, producer))
                continue
            closing_at = time.time()
            producer.close()  # sends librdkafka's terminating push (waits up to 1 s for it)
            closed.append((client_id, created_at, closing_at, time.time()))
        started = running
        time.sleep(0.1)
    lives = [ClientLife(*times, counter.by_client[times[0]]) for times in closed]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    reports.put(GroupReport(lives, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, threads))


# ---- broker side measurements ----------------------------------------------------------------


def process_cpu_s(pid: int) -> float:
    """utime + stime of a process in seconds (fields 14 and 15 of /proc/<pid>/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S


@dataclass
class CpuWindow:
    """Cores a process used over a wall-clock window, with the busiest one-second sample."""

    pid: int
    started_wall: float = field(default_factory=time.monotonic)
    started_cpu: float = 0.0
    last_wall: float = 0.0
    last_cpu: float = 0.0
    peak_cores: float = 0.0

    def __post_init__(self) -> None:
        self.started_cpu = self.last_cpu = process_cpu_s(self.pid)
        self.last_wall = self.started_wall

    def sample(self) -> None:
        now, cpu = time.monotonic(), process_cpu_s(self.pid)
        if now - self.last_wall >= 0.5:
            self.peak_cores = max(self.peak_cores, (cpu - self.last_cpu) / (now - self.last_wall))
        self.last_wall, self.last_cpu = now, cpu

    @property
    def cpu_s(self) -> float:
        return self.last_cpu - self.started_cpu

    @property
    def wall_s(self) -> float:
        return self.last_wall - self.started_wall

    @property
    def cores(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


def idle_broker_cores(pid: int, seconds: float) -> float:
    window = CpuWindow(pid)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.5)
        window.sample()
    return window.cores


# ---- reading the telemetry topic ---------------------------------------------------------------


@dataclass(frozen=True)
class LandedRecord:
    headers: dict[str, str]
    timestamp_ms: int
    value: bytes  # kept only for broker records


def read_telemetry_topic(
    bootstrap: str, topic: str, broker_record_after_ms: int, timeout_s: float
) -> list[LandedRecord]:
    """Everything on the topic, read until its end *and* a broker record newer than the given time."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.metrics.push": False,
            "client.id": "kip714-bench-reader",
        }
    )
    records: list[LandedRecord] = []
    fresh_broker_record = False
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.5):
                if message.error():
                    continue
                headers = {key: (value or b"").decode() for key, value in message.headers() or []}
                is_broker = headers.get(Header.TYPE) == RecordType.BROKER
                timestamp_ms = message.timestamp()[1]
                records.append(
                    LandedRecord(headers, timestamp_ms, (message.value() or b"") if is_broker else b"")
                )
                fresh_broker_record |= is_broker and timestamp_ms > broker_record_after_ms
            if fresh_broker_record and at_end(consumer, topic, partitions):
                return records
    finally:
        consumer.close()
    raise SystemExit(f"the topic had no broker record after the clients closed within {timeout_s:.0f} s")


def at_end(consumer: Consumer, topic: str, partitions: list[int]) -> bool:
    positions = consumer.position([TopicPartition(topic, p) for p in partitions])
    for position in positions:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, position.partition), timeout=5)
        if position.offset < high:
            return False
    return True


# ---- analysis ----------------------------------------------------------------------------------


def attributes_of(attributes: list[KeyValue]) -> dict[str, str]:
    return {kv.key: kv.value.string_value for kv in attributes}


@dataclass
class BrokerView:
    """The plugin's broker records reduced to final values (cumulative sums: the largest value seen)."""

    exports_by_instance: dict[str, int] = field(default_factory=dict)
    throttles: dict[str, int] = field(default_factory=dict)
    plugin_errors: dict[str, int] = field(default_factory=dict)
    unknown_subscription_requests: int = 0
    max_instance_count: int = 0
    drops_by_reason: dict[str, int] = field(default_factory=dict)
    plugin_exported: int = 0
    max_buffered: int = 0
    # Export-time histograms of each broker record (timestamp ms, instance -> cumulative point).
    histogram_history: list[tuple[int, dict[str, HistogramDataPoint]]] = field(default_factory=list)
    broker_avg_ms: list[float] = field(default_factory=list)
    broker_max_ms: float = 0.0

    def add(self, value: bytes, timestamp_ms: int) -> None:
        histograms: dict[str, HistogramDataPoint] = {}
        self.histogram_history.append((timestamp_ms, histograms))
        data = MetricsData.FromString(value)
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    if metric.name == BrokerMetric.PLUGIN_EXPORT_TIME and metric.HasField("histogram"):
                        for point in metric.histogram.data_points:
                            histograms[attributes_of(point.attributes).get(INSTANCE_ID_ATTRIBUTE, "")] = point
                    else:
                        self._add_numbers(metric)

    def _add_numbers(self, metric: Metric) -> None:
        name = metric.name
        if metric.HasField("sum"):
            points = metric.sum.data_points
        elif metric.HasField("gauge"):
            points = metric.gauge.data_points
        else:
            return
        for point in points:
            value = point.as_int if point.HasField("as_int") else point.as_double
            labels = attributes_of(point.attributes)
            instance = labels.get(INSTANCE_ID_ATTRIBUTE, "")
            if name == BrokerMetric.PLUGIN_EXPORTS:
                keep_max(self.exports_by_instance, instance, int(value))
            elif name == BrokerMetric.THROTTLES:
                keep_max(self.throttles, instance, int(value))
            elif name == BrokerMetric.PLUGIN_ERRORS:
                keep_max(self.plugin_errors, instance, int(value))
            elif name == BrokerMetric.PLUGIN_DROPS:
                keep_max(self.drops_by_reason, labels.get("reason", "?"), int(value))
            elif name == BrokerMetric.UNKNOWN_SUBSCRIPTION_REQUESTS:
                self.unknown_subscription_requests = max(self.unknown_subscription_requests, int(value))
            elif name == BrokerMetric.INSTANCE_COUNT:
                self.max_instance_count = max(self.max_instance_count, int(value))
            elif name == PLUGIN_EXPORTED:
                self.plugin_exported = max(self.plugin_exported, int(value))
            elif name == PLUGIN_BUFFERED:
                self.max_buffered = max(self.max_buffered, int(value))
            elif name == EXPORT_TIME_AVG and not math.isnan(value):
                self.broker_avg_ms.append(value)
            elif name == EXPORT_TIME_MAX and not math.isnan(value):
                self.broker_max_ms = max(self.broker_max_ms, value)

    @property
    def records(self) -> int:
        return len(self.histogram_history)

    def final_histograms(self) -> dict[str, HistogramDataPoint]:
        """Each instance's last cumulative histogram (a retired instance is reported once more, then gone)."""
        final: dict[str, HistogramDataPoint] = {}
        for _, histograms in sorted(self.histogram_history, key=lambda entry: entry[0]):
            final.update(histograms)
        return final

    def histograms_at(self, timestamp_ms: int) -> tuple[int, dict[str, HistogramDataPoint]]:
        """The first broker record at or after ``timestamp_ms``: its time and its histograms."""
        for written_ms, histograms in sorted(self.histogram_history, key=lambda entry: entry[0]):
            if written_ms >= timestamp_ms:
                return written_ms, histograms
        return timestamp_ms, {}


def keep_max(values: dict[str, int], key: str, value: int) -> None:
    values[key] = max(values.get(key, 0), value)


@dataclass(frozen=True)
class ExportTime:
    """Per-instance histograms merged into one distribution of the plugin's export call."""

    count: int
    sum_ms: float
    max_ms: float
    bounds_ms: tuple[float, ...]
    bucket_counts: tuple[int, ...]

    @classmethod
    def merge(
        cls, final: dict[str, HistogramDataPoint], earlier: dict[str, HistogramDataPoint] | None = None
    ) -> ExportTime:
        """Sum of ``final`` over instances, minus ``earlier`` (cumulative points) when given."""
        points = list(final.values())
        if not points:
            return cls(0, 0.0, 0.0, (), ())
        bounds = tuple(points[0].explicit_bounds)
        counts = [0] * (len(bounds) + 1)
        count, sum_ms = 0, 0.0
        for instance, point in final.items():
            if tuple(point.explicit_bounds) != bounds:
                raise SystemExit("export time histograms with different bucket bounds cannot be merged")
            before = (earlier or {}).get(instance)
            for index, bucket in enumerate(point.bucket_counts):
                counts[index] += bucket - (before.bucket_counts[index] if before else 0)
            count += point.count - (before.count if before else 0)
            sum_ms += point.sum - (before.sum if before else 0.0)
        # The max of a difference is unknown; the overall max still bounds it from above.
        return cls(count, sum_ms, max(p.max for p in points), bounds, tuple(counts))

    @property
    def avg_ms(self) -> float:
        return self.sum_ms / self.count if self.count else 0.0

    def quantile(self, q: float) -> tuple[float, float]:
        """(upper bound of the bucket holding the q-quantile, linear estimate inside that bucket)."""
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for index, bucket in enumerate(self.bucket_counts):
            if bucket and seen + bucket >= rank:
                lower = self.bounds_ms[index - 1] if index > 0 else 0.0
                upper = self.bounds_ms[index] if index < len(self.bounds_ms) else self.max_ms
                upper = min(upper, self.max_ms)
                return upper, lower + (upper - lower) * (rank - seen) / bucket
            seen += bucket
        return 0.0, 0.0


def expected_pushes(lives: list[ClientLife], interval_s: float) -> tuple[int, int]:
    """(regular pushes, terminating pushes) the clients should have made."""
    return sum(math.floor(life.active_s / interval_s) for life in lives), len(lives)


# ---- the run -----------------------------------------------------------------------------------


def ensure_plugin_jar() -> None:
    jar = default_plugin_jar()
    if jar is None or not jar.is_file():
        print("building the broker plugin (make plugin) ...", flush=True)
        subprocess.run(["make", "plugin"], cwd=repository_root(), check=True)


def wait_until_served(bootstrap: str, interval_ms: int, timeout_s: float = 30.0) -> None:
    """Ask as a matching client until the broker hands out the subscription (config propagation)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with TelemetryProbe(bootstrap, client_id=f"{CLIENT_ID_PREFIX}probe") as probe:
            view = probe.get_subscription()
        if view.subscribed and view.push_interval_ms == interval_ms:
            return
        time.sleep(0.5)
    raise SystemExit(f"the broker did not serve the subscription within {timeout_s:.0f} s")


def start_clients(
    bootstrap: str, client_ids: list[str], processes: int, seconds: float
) -> tuple[list[multiprocessing.Process], Queue]:
    context = multiprocessing.get_context("spawn")
    reports: Queue = context.Queue()
    groups = [client_ids[index::processes] for index in range(processes)]
    workers = [
        context.Process(target=run_client_group, args=(bootstrap, group, seconds, reports), daemon=True)
        for group in groups
        if group
    ]
    for worker in workers:
        worker.start()
    return workers, reports


@dataclass(frozen=True)
class LoadRun:
    """What the load phase produced, for the report."""

    lives: list[ClientLife]
    groups: list[GroupReport]
    records: list[LandedRecord]
    idle_cores: float
    broker_cpu: CpuWindow
    load_average: tuple[float, float]  # 1-min load average before and after the load


def run(cluster: LocalKafkaCluster, args: argparse.Namespace) -> LoadRun:
    bootstrap = cluster.bootstrap_servers
    run_id = uuid.uuid4().hex[:6]
    client_ids = [f"{CLIENT_ID_PREFIX}{run_id}-{index:04d}" for index in range(args.clients)]
    subscription = Subscription(
        name=SUBSCRIPTION_NAME,
        metrics=("*",),
        interval_ms=args.interval_ms,
        match=parse_match(f"client_id={CLIENT_ID_PREFIX}.*"),
    )
    with ClientMetricsAdmin(to_kafka_python_kwargs(cluster.client_config())) as admin:
        admin.upsert(subscription)
        try:
            wait_until_served(bootstrap, args.interval_ms)
            idle_cores = idle_broker_cores(cluster.pid, args.idle_seconds)
            load_before = os.getloadavg()[0]
            print(
                f"starting {args.clients} librdkafka producers in {args.processes} processes, "
                f"{args.seconds:g} s each ...",
                flush=True,
            )
            broker_cpu = CpuWindow(cluster.pid)
            workers, reports = start_clients(bootstrap, client_ids, args.processes, args.seconds)
            groups: list[GroupReport] = []
            give_up = time.monotonic() + args.seconds + 180
            while len(groups) < len(workers) and time.monotonic() < give_up:
                time.sleep(1.0)
                broker_cpu.sample()
                while not reports.empty():
                    groups.append(reports.get())
            load_after = os.getloadavg()[0]
            for worker in workers:
                worker.join(timeout=10)
                if worker.is_alive():
                    worker.kill()  # our own child, by its handle
            if len(groups) < len(workers):
                raise SystemExit(f"only {len(groups)} of {len(workers)} client processes reported")
            lives = [life for group in groups for life in group.lives]
            last_closed_ms = int(max(life.closed_at for life in lives) * 1000)
            records = read_telemetry_topic(
                bootstrap,
                cluster.telemetry_topic,
                broker_record_after_ms=last_closed_ms + 1000,
                timeout_s=args.broker_metrics_interval_ms / 1000 * 3 + 30,
            )
        finally:
            admin.delete(SUBSCRIPTION_NAME)
    return LoadRun(lives, groups, records, idle_cores, broker_cpu, (load_before, load_after))


def median(values: list[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def report(args: argparse.Namespace, load: LoadRun) -> None:
    interval_s = args.interval_ms / 1000
    lives = load.lives
    ours = {life.client_id for life in lives}
    regular_expected, terminating_expected = expected_pushes(lives, interval_s)
    expected = regular_expected + terminating_expected

    landed_by_instance: dict[str, int] = defaultdict(int)
    regular_times: dict[str, list[int]] = defaultdict(list)
    terminating_by_client: dict[str, int] = defaultdict(int)
    broker = BrokerView()
    for record in load.records:
        if record.headers.get(Header.TYPE) == RecordType.BROKER:
            broker.add(record.value, record.timestamp_ms)
            continue
        client_id = record.headers.get(Header.CLIENT_ID, "")
        if client_id not in ours:
            continue
        landed_by_instance[record.headers.get(Header.CLIENT_INSTANCE_ID, "")] += 1
        if record.headers.get(Header.TERMINATING) == "true":
            terminating_by_client[client_id] += 1
        else:
            regular_times[client_id].append(record.timestamp_ms)
    terminating_landed = sum(terminating_by_client.values())
    landed = sum(landed_by_instance.values())

    def landed_of(life: ClientLife) -> int:
        return len(regular_times[life.client_id]) + terminating_by_client[life.client_id]

    def expected_of(life: ClientLife) -> int:
        return math.floor(life.active_s / interval_s) + 1

    short = sorted((life for life in lives if landed_of(life) < expected_of(life)), key=landed_of)
    silent = sum(1 for life in lives if landed_of(life) == 0)
    first_push_delays = [
        min(regular_times[life.client_id]) / 1000 - life.created_at
        for life in lives
        if regular_times[life.client_id]
    ]
    spacings = [
        (max(times) - min(times)) / 1000 / (len(times) - 1)
        for times in regular_times.values()
        if len(times) > 1
    ]
    landed_ratio = landed / expected if expected else 0.0
    sent_regular = sum(life.log.sent_regular for life in lives)
    landed_regular = landed - terminating_landed
    subscribed = [life for life in lives if life.log.subscribed_at is not None]
    subscribed_expected = sum(math.floor(life.subscribed_s / interval_s) + 1 for life in subscribed)
    selection_delays = [life.log.subscribed_at - life.created_at for life in subscribed]

    broker_exports = sum(broker.exports_by_instance.get(i, 0) for i in landed_by_instance)
    mismatched = sum(
        1 for i, count in landed_by_instance.items() if broker.exports_by_instance.get(i) != count
    )
    final = {i: p for i, p in broker.final_histograms().items() if i in landed_by_instance}
    whole = ExportTime.merge(final)
    warm_up_s = min(10.0, args.seconds / 3)
    first_created = min(life.created_at for life in lives)
    steady_from_ms, steady_base = broker.histograms_at(int((first_created + warm_up_s) * 1000))
    steady = ExportTime.merge(final, steady_base)
    drops = sum(broker.drops_by_reason.values())
    active = [life.active_s for life in lives]
    cpu = load.broker_cpu
    client_cpu = sum(group.cpu_s for group in load.groups)

    print()
    print(
        f"workload: {len(lives)} librdkafka {libversion()[0]} producers (idle, telemetry only) in "
        f"{len(load.groups)} processes, push interval {args.interval_ms} ms, "
        f"active {min(active):.1f}..{max(active):.1f} s each"
    )
    print(
        f"expected pushes (baseline): {expected} = {regular_expected} regular "
        f"(sum of floor(active s / {interval_s:g} s)) + {terminating_expected} terminating"
    )
    print(
        f"landed on the topic:        {landed} ({landed - terminating_landed} regular + "
        f"{terminating_landed} terminating) from {len(landed_by_instance)} client instances"
    )
    print(f"  ratio landed/expected:    {landed_ratio:.4f} (target >= {EXPORTED_TARGET})")
    print(
        f"regular pushes the clients sent: {sent_regular} (librdkafka's telemetry debug log); answers: "
        f"{sum(life.log.succeeded for life in lives)} succeeded, "
        f"{sum(life.log.failed for life in lives)} failed"
    )
    print(
        f"  ratio landed/sent (regular): {landed_regular / sent_regular if sent_regular else 0.0:.4f}; "
        f"terminating pushes landed for {terminating_landed} of {len(lives)} clients"
    )
    print(
        f"expected from subscribed time: {subscribed_expected} (floor((close - subscription received) / "
        f"interval) + 1 over {len(subscribed)} subscribed clients; subscription received "
        f"{median(selection_delays):.2f} s after creation, median); ratio landed/that: "
        f"{landed / subscribed_expected if subscribed_expected else 0.0:.4f}"
    )
    print(
        f"  clients short of expected: {len(short)}, silent: {silent}; client cadence: first push "
        f"{median(first_push_delays):.2f} s after creation, "
        f"then every {median(spacings) * 1000:.0f} ms (medians)"
    )
    print(
        f"broker plugin_export.count: {broker_exports} for these instances "
        f"({sum(broker.exports_by_instance.values())} all, {broker.records} broker records)"
    )
    print(
        f"  ratio landed/broker count: {landed / broker_exports if broker_exports else 0.0:.4f}; "
        f"instances where they differ: {mismatched}"
    )
    print(
        f"  throttled pushes: {sum(broker.throttles.values())}; unknown-subscription requests: "
        f"{broker.unknown_subscription_requests}; plugin errors: {sum(broker.plugin_errors.values())}; "
        f"max instance count: {broker.max_instance_count}"
    )
    for label, export_time in (
        ("whole run", whole),
        (f"after warm-up (from the broker record {steady_from_ms / 1000 - first_created:.0f} s in)", steady),
    ):
        p50_bound, p50_estimate = export_time.quantile(0.50)
        p99_bound, p99_estimate = export_time.quantile(0.99)
        print(
            f"plugin export time, {label}: {export_time.count} pushes, "
            f"avg {export_time.avg_ms * 1000:.1f} us, "
            f"p50 <= {p50_bound:g} ms (~{p50_estimate * 1000:.0f} us), "
            f"p99 <= {p99_bound:g} ms (~{p99_estimate * 1000:.0f} us); p99 bound / 1 ms target = "
            f"{p99_bound / P99_TARGET_MS:.2f}"
        )
    print(f"  max {whole.max_ms:.3f} ms (whole run)")
    broker_avg = median(broker.broker_avg_ms)
    print(
        f"  broker's own gauges (whole ms, windowed): median avg {broker_avg:.3f} ms, "
        f"max {broker.broker_max_ms:.0f} ms"
    )
    print(
        f"drops: {drops} {dict(broker.drops_by_reason)}; plugin exported.count {broker.plugin_exported}, "
        f"max buffered {broker.max_buffered}"
    )
    print(
        f"broker CPU: {cpu.cores:.2f} cores over {cpu.wall_s:.0f} s of load "
        f"(busiest 1 s: {cpu.peak_cores:.2f}); "
        f"idle baseline {load.idle_cores:.2f} cores; {cpu.cpu_s / max(landed, 1) * 1e6:.0f} us CPU per push"
    )
    print(
        f"client processes: {client_cpu:.1f} CPU s ({client_cpu / max(cpu.wall_s, 1):.2f} cores), "
        f"{sum(g.threads_while_running for g in load.groups)} threads, "
        f"max RSS {max(g.max_rss_mib for g in load.groups):.0f} MiB per process; machine load average "
        f"{load.load_average[0]:.1f} before, {load.load_average[1]:.1f} after ({os.cpu_count()} cores)"
    )
    p99_bound = steady.quantile(0.99)[0]
    verdicts = {
        f"exported >= {EXPORTED_TARGET:.0%} of expected": landed_ratio >= EXPORTED_TARGET,
        f"exported >= {EXPORTED_TARGET:.0%} of sent": sent_regular > 0
        and landed_regular / sent_regular >= EXPORTED_TARGET,
        f"export time p99 < {P99_TARGET_MS:g} ms (after warm-up)": steady.count > 0
        and p99_bound < P99_TARGET_MS,
        "no drops": drops == 0,
    }
    print("targets: " + "; ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in verdicts.items()))
    if short:
        shown = ", ".join(f"{life.client_id} {landed_of(life)}/{expected_of(life)}" for life in short[:5])
        print(f"  shortest clients (landed/expected): {shown}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=200, help="librdkafka producers (default 200)")
    parser.add_argument("--seconds", type=float, default=60.0, help="life of each client (default 60)")
    parser.add_argument("--processes", type=int, default=4, help="client processes (default 4)")
    parser.add_argument(
        "--interval-ms", type=int, default=1000, help="subscription push interval (default 1000)"
    )
    parser.add_argument(
        "--idle-seconds", type=float, default=5.0, help="idle broker CPU baseline (default 5)"
    )
    parser.add_argument(
        "--broker-metrics-interval-ms",
        type=int,
        default=5000,
        help="plugin broker-record interval (default 5000)",
    )
    args = parser.parse_args(argv)
    for name in ("clients", "processes", "interval_ms", "broker_metrics_interval_ms"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.seconds <= 0 or args.idle_seconds <= 0:
        parser.error("--seconds and --idle-seconds must be positive")
    args.processes = min(args.processes, args.clients)
    return args


def main() -> None:
    args = parse_args()
    ensure_plugin_jar()
    factory = LocalKafkaClusterFactory(Path(tempfile.mkdtemp(prefix="kip714-bench-plugin-")))
    try:
        cluster = factory.start(
            name="bench-plugin-push", broker_metrics_interval_ms=args.broker_metrics_interval_ms
        )
        if not cluster.plugin_loaded:
            raise SystemExit("the broker started without the KIP-714 plugin jar")
        print(
            f"broker pid {cluster.pid} on {cluster.bootstrap_servers} (Kafka {cluster.kafka_version}, plugin "
            f"{cluster.plugin_jar})",
            flush=True,
        )
        load = run(cluster, args)
    finally:
        factory.stop_all()
    report(args, load)


if __name__ == "__main__":
    exit_on_sigterm()  # a kill still stops the local brokers this script started
    sys.exit(main())
