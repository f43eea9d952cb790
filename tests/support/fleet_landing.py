"""A landing zone of ``bench/bench_fleet_scale.py``'s shape, landed through the real lander's staging path.

The wire-level fleet (thousands of client instances, three brokers with the plugin, a follow-mode
landing cutting a chunk every 2 s) is heavy to run; this builds the topic records it would write and
lands them with ``landing_stage.stage_records`` and ``LandingZone.commit``, so the files, their sizes,
their Parquet layout and the decoded rows are what the lander writes:

- client records: one per push, every ``interval_s`` per instance (a ramp over the first interval, a
  terminating push at the end), the fleet's payload (``producer_like_payload``: 9 gauges with a
  ``node.id`` label and one delta sum, stamped with the push's second), the plugin's ``kip714.*``
  headers (client id per load connection, software ``kip714-fleet`` 1.0, each instance sticking to one
  broker), keyed by the instance id;
- broker records: every broker every ``interval_s``, the plugin's per-client-instance series for the
  instances it manages (plugin export, error and throttle counts as cumulative sums, the export-time
  histogram, the broker's windowed average and maximum) in records of at most 500 instances, the
  first one also carrying the broker-wide series;
- chunks: per partition, what arrived in each ``chunk_interval_s`` (``--chunk-interval-s 2``).

Compared with a real run in ``docs/benchmarks.md`` (files, rows, distinct instances, bytes).
"""

from __future__ import annotations

import base64
import sys
import uuid
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC, Header
from airflow_provider_kip714.decoding.records import TopicRecord
from airflow_provider_kip714.telemetry.landing_stage import stage_records
from airflow_provider_kip714.telemetry.landing_zone import LandingZone

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from otlp_payloads import client_headers, producer_like_payload

NANOS = 1_000_000_000
CLUSTER_ID = "fleet-cluster-0000000A"
INSTANCES_PER_RECORD = 500
"""``BrokerMetricsCollector.DEFAULT_INSTANCES_PER_RECORD``."""
EXPORT_TIME_BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 2.5, 5.0, 10.0]
EXPORT_TIME_BOUNDS += [25.0, 50.0, 100.0, 250.0, 1000.0]
"""The plugin's export-time histogram bounds (ms), as landed."""
DROP_REASONS = ("buffer_full", "not_running", "send_failed", "delivery_failed", "plugin_error", "oversized")


@dataclass(frozen=True)
class FleetShape:
    """The fleet's parameters (``bench_fleet_scale.py``'s flags and its fixed settings)."""

    instances: int = 10_000
    duration_s: int = 300
    interval_s: int = 10
    brokers: int = 3
    partitions: int = 6
    processes: int = 4
    connections_per_broker: int = 2
    chunk_interval_s: int = 2


@dataclass
class _Instance:
    instance_id: str
    instance_id_hex: str
    broker: int
    headers: list[tuple[str, bytes]]
    seed: int
    subscribed_ns: int
    pushes: list[int]


@dataclass
class _BrokerState:
    """What one broker's plugin reports about one instance at a tick."""

    started_ns: int
    pushes: int = 0
    export_sum: float = 0.0
    export_min: float = float("inf")
    export_max: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * (len(EXPORT_TIME_BOUNDS) + 1))


def _string(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _fleet(shape: FleetShape, start_ns: int, rng: np.random.Generator) -> list[_Instance]:
    """The instances, their broker, client id (one per load connection) and push times."""
    share = [
        shape.instances // shape.processes + (1 if k < shape.instances % shape.processes else 0)
        for k in range(shape.processes)
    ]
    end_ns = start_ns + shape.duration_s * NANOS
    ramp_ns = min(shape.interval_s, shape.duration_s / 4) * NANOS
    connections = shape.brokers * shape.connections_per_broker
    fleet = []
    for process, count in enumerate(share):
        for local in range(count):
            connection = local % connections
            broker = connection // shape.connections_per_broker + 1
            raw = uuid.UUID(bytes=rng.bytes(16))
            instance_id = base64.urlsafe_b64encode(raw.bytes).decode("ascii").rstrip("=")
            port = 40_000 + process * 100 + connection
            headers = client_headers(
                instance_id,
                f"fleet-{process}-{9092 + broker}-{connection % shape.connections_per_broker}",
                **{
                    Header.CLIENT_SOFTWARE_NAME: "kip714-fleet",
                    Header.CLIENT_SOFTWARE_VERSION: "1.0",
                    Header.CLIENT_SOURCE_PORT: str(port),
                    Header.NODE_ID: str(broker),
                    Header.CLUSTER_ID: CLUSTER_ID,
                    Header.PUSH_INTERVAL_MS: str(shape.interval_s * 1000),
                },
            )
            subscribed = start_ns + int(ramp_ns * local / count) + int(rng.integers(0, 50_000_000))
            pushes = []
            answered = subscribed
            while answered + shape.interval_s * NANOS < end_ns:
                answered += shape.interval_s * NANOS + int(rng.integers(0, 60_000_000))
                pushes.append(answered)
            pushes.append(end_ns + int(rng.integers(0, 50_000_000)))  # the terminating push
            fleet.append(_Instance(instance_id, str(raw), broker, headers, process, subscribed, pushes))
    return fleet


def _client_records(fleet: list[_Instance]) -> list[tuple[int, str, bytes, list[tuple[str, bytes]], bytes]]:
    """(accept time ns, key, value, headers, partition key) per push; payloads built once per second."""
    payloads: dict[tuple[int, int], bytes] = {}
    records = []
    for instance in fleet:
        last = len(instance.pushes) - 1
        for index, pushed in enumerate(instance.pushes):
            second = pushed // NANOS
            payload = payloads.get((instance.seed, second))
            if payload is None:
                payload = producer_like_payload(10, seed=instance.seed, time_ns=second * NANOS)
                payloads[(instance.seed, second)] = payload
            headers = instance.headers
            if index == last:
                headers = [(k, b"true" if k == Header.TERMINATING else v) for k, v in headers]
            records.append((pushed, instance.instance_id, payload, headers, instance.instance_id.encode()))
    return records


def _number(
    value: float, time_ns: int, start_ns: int = 0, labels: tuple[KeyValue, ...] = ()
) -> m.NumberDataPoint:
    point = m.NumberDataPoint(time_unix_nano=time_ns, start_time_unix_nano=start_ns, attributes=labels)
    if float(value).is_integer():
        point.as_int = int(value)
    else:
        point.as_double = value
    return point


def _broker_record(
    node: int, tick_ns: int, started_ns: int, group: list[tuple[str, _BrokerState]], first: bool, managed: int
) -> bytes:
    """One broker record: the group's per-instance series, and the broker-wide ones in the first."""
    sums: dict[str, list[m.NumberDataPoint]] = defaultdict(list)
    gauges: dict[str, list[m.NumberDataPoint]] = defaultdict(list)
    histograms: list[m.HistogramDataPoint] = []
    for instance_id, state in group:
        label = (_string("client_instance_id", instance_id),)
        sums["kafka.server.client_metrics.plugin_export.count"].append(
            _number(state.pushes, tick_ns, state.started_ns, label)
        )
        sums["kafka.server.client_metrics.plugin_error.count"].append(
            _number(0, tick_ns, state.started_ns, label)
        )
        sums["kafka.server.client_metrics.throttle.count"].append(
            _number(0, tick_ns, state.started_ns, label)
        )
        if state.pushes:
            average = state.export_sum / state.pushes
            gauges["kafka.server.client_metrics.plugin_export.time.avg"].append(
                _number(round(average, 6) + 1e-6, tick_ns, 0, label)
            )
            gauges["kafka.server.client_metrics.plugin_export.time.max"].append(
                _number(float(round(state.export_max)), tick_ns, 0, label)
            )
            histograms.append(
                m.HistogramDataPoint(
                    start_time_unix_nano=state.started_ns,
                    time_unix_nano=tick_ns,
                    count=state.pushes,
                    sum=state.export_sum,
                    bucket_counts=state.buckets,
                    explicit_bounds=EXPORT_TIME_BOUNDS,
                    attributes=label,
                    min=state.export_min,
                    max=state.export_max,
                )
            )
    if first:
        gauges["kafka.server.client_metrics.instance.count"].append(_number(managed, tick_ns))
        sums["kafka.server.client_metrics.unknown_subscription_request.count"].append(
            _number(0, tick_ns, started_ns)
        )
        for reason in DROP_REASONS:
            sums["kip714.plugin.dropped.count"].append(
                _number(0, tick_ns, started_ns, (_string("reason", reason),))
            )
        exported = sum(state.pushes for _, state in group)
        sums["kip714.plugin.exported.count"].append(_number(exported, tick_ns, started_ns))
        gauges["kip714.plugin.buffered.records"].append(_number(0, tick_ns))
    metrics = [m.Metric(name=name, gauge=m.Gauge(data_points=points)) for name, points in gauges.items()]
    metrics += [
        m.Metric(
            name=name,
            sum=m.Sum(
                data_points=points,
                aggregation_temporality=m.AGGREGATION_TEMPORALITY_CUMULATIVE,
                is_monotonic=True,
            ),
        )
        for name, points in sums.items()
    ]
    if histograms:
        metrics.append(
            m.Metric(
                name="kafka.server.client_metrics.plugin_export.time",
                unit="ms",
                histogram=m.Histogram(
                    data_points=histograms, aggregation_temporality=m.AGGREGATION_TEMPORALITY_CUMULATIVE
                ),
            )
        )
    resource = Resource(attributes=[_string("node_id", str(node)), _string("cluster_id", CLUSTER_ID)])
    scope = InstrumentationScope(name="io.kip714.broker", version="0.1.0")
    data = m.MetricsData(
        resource_metrics=[
            m.ResourceMetrics(resource=resource, scope_metrics=[m.ScopeMetrics(scope=scope, metrics=metrics)])
        ]
    )
    return data.SerializeToString()


def _broker_records(
    shape: FleetShape, fleet: list[_Instance], start_ns: int, rng: np.random.Generator
) -> list[tuple[int, str, bytes, list[tuple[str, bytes]], bytes]]:
    """Every broker's plugin records from one interval before the load until one after it."""
    events: list[tuple[int, int, _Instance]] = []  # (time, kind: 0 subscribe / 1 push / 2 gone, instance)
    for instance in fleet:
        events.append((instance.subscribed_ns, 0, instance))
        events += [(pushed, 1, instance) for pushed in instance.pushes]
        events.append((instance.pushes[-1] + 1, 2, instance))
    events.sort(key=lambda event: (event[0], event[1]))
    interval = shape.interval_s * NANOS
    started = start_ns - 2 * interval
    ticks = sorted(
        (started + int(rng.integers(0, interval)) + k * interval, node)
        for node in range(1, shape.brokers + 1)
        for k in range(shape.duration_s // shape.interval_s + 4)
    )
    managed: dict[int, dict[str, _BrokerState]] = {node: {} for node in range(1, shape.brokers + 1)}
    retired: dict[int, list[str]] = {node: [] for node in managed}
    records = []
    cursor = 0
    for tick_ns, node in ticks:
        while cursor < len(events) and events[cursor][0] <= tick_ns:
            moment, kind, instance = events[cursor]
            states = managed[instance.broker]
            if kind == 0:
                states[instance.instance_id] = _BrokerState(moment)
            elif kind == 1:
                state = states[instance.instance_id]
                millis = float(rng.gamma(2.0, 0.007))
                state.pushes += 1
                state.export_sum += millis
                state.export_min = min(state.export_min, millis)
                state.export_max = max(state.export_max, millis)
                state.buckets[int(np.searchsorted(EXPORT_TIME_BOUNDS, millis))] += 1
            else:
                retired[instance.broker].append(instance.instance_id)  # reported once more, then forgotten
            cursor += 1
        states = managed[node]
        ordered = sorted(states.items())
        groups = [ordered[k : k + INSTANCES_PER_RECORD] for k in range(0, len(ordered), INSTANCES_PER_RECORD)]
        headers = [
            (str(Header.TYPE), b"broker"),
            (str(Header.NODE_ID), str(node).encode()),
            (str(Header.CLUSTER_ID), CLUSTER_ID.encode()),
        ]
        key = f"broker-{node}"  # the plugin's key of broker records (docs/topic-contract.md)
        for index, group in enumerate(groups or [[]]):
            value = _broker_record(node, tick_ns, started, group, index == 0, len(ordered))
            records.append((tick_ns, key, value, headers, key.encode()))
        for instance_id in retired[node]:
            states.pop(instance_id, None)
        retired[node].clear()
    return records


def land_fleet(
    root: str | Path,
    start: datetime,
    shape: FleetShape = FleetShape(),
    seed: int = 714,
    progress: Callable[[str], None] | None = None,
) -> dict[str, int]:
    """Land the fleet's records, starting at ``start``, into the zone at ``root``; returns its counts."""
    rng = np.random.default_rng(seed)
    start_ns = int(start.timestamp()) * NANOS
    fleet = _fleet(shape, start_ns, rng)
    records = _client_records(fleet) + _broker_records(shape, fleet, start_ns, rng)
    records.sort(key=lambda record: record[0])
    if progress:
        progress(f"fleet: {len(records):,} records built")
    chunks: dict[tuple[int, int], list[TopicRecord]] = defaultdict(list)
    offsets = [0] * shape.partitions
    chunk_ns = shape.chunk_interval_s * NANOS
    for accepted, _, value, headers, key in records:
        partition = zlib.crc32(key) % shape.partitions
        chunks[(accepted // chunk_ns, partition)].append(
            TopicRecord(
                DEFAULT_TELEMETRY_TOPIC,
                partition,
                offsets[partition],
                accepted // 1_000_000,
                key,
                headers,
                value,
            )
        )
        offsets[partition] += 1
    zone = LandingZone(str(root), DEFAULT_TELEMETRY_TOPIC, fsync=False)
    points = 0
    with zone.lock():
        zone.prepare()
        for _, batch in sorted(chunks.items()):
            staged = stage_records(zone, "otlp_proto", batch)
            zone.commit(staged)
            points += staged.points
    return {"records": len(records), "chunks": len(chunks), "points": points, "instances": len(fleet)}
