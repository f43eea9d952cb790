"""Landing-zone scenarios for the Spark tests, written with pyarrow in ``DATAPOINT_SCHEMA``.

Each builder writes one scenario under ``root`` and returns what the test must find. When ingestion
lands real client data, a test can point the apps at that landing root instead; the expectations below
are what changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from tests.support.broker_landing import ExportTime, broker_push_rows
from tests.support.synthetic_landing import (
    JAVA,
    LIBRDKAFKA,
    NANOS,
    LandingWriter,
    SyntheticClient,
    client_labels,
    make_client,
    rows_table,
    series_table,
)

DAY = datetime(2026, 1, 31, tzinfo=UTC)
PUSH_SECONDS = 10
QUEUE_TIME_MAX = "org.apache.kafka.producer.record.queue.time.max"
FLAT_METRIC = "org.apache.kafka.producer.connection.creation.rate"


def ns(moment: datetime) -> int:
    return int(moment.timestamp()) * NANOS


def push_times(start: datetime, end: datetime, offset_seconds: int = 5) -> np.ndarray:
    first = ns(start) + offset_seconds * NANOS
    return np.arange(first, ns(end), PUSH_SECONDS * NANOS, dtype=np.int64)


@dataclass(frozen=True)
class LateSpike:
    """Two librdkafka producers, one instance per client group, 13:00-15:00; one spikes from 14:52."""

    spiking: SyntheticClient
    steady: SyntheticClient


def write_late_spike(root: str | Path) -> LateSpike:
    """The record queue time of ``orders-producer`` jumps from about 100 to 8000 ms at 14:52 (a late live
    window's spike); ``billing-producer`` stays steady. Its own baseline needs the hour before the window."""
    rng = np.random.default_rng(3)
    writer = LandingWriter(str(root))
    spiking = make_client(1, LIBRDKAFKA, client_id="orders-producer")
    steady = make_client(2, LIBRDKAFKA, client_id="billing-producer")
    times = push_times(DAY.replace(hour=13), DAY.replace(hour=15))
    for client in (spiking, steady):
        values = 100 + rng.normal(0, 5, size=times.shape)
        if client is spiking:
            values[times >= ns(DAY.replace(hour=14, minute=52))] = 8000.0
        writer.write(
            series_table([client], QUEUE_TIME_MAX, "gauge", None, {}, times[None, :], values[None, :])
        )
    return LateSpike(spiking, steady)


@dataclass(frozen=True)
class AnomalyScenario:
    anomalous: SyntheticClient
    clean: SyntheticClient
    java: SyntheticClient
    interval_start: datetime
    interval_end: datetime
    breach_start: datetime
    breach_end: datetime
    spike_value: float


def write_anomaly_scenario(root: str, seed: int = 7) -> AnomalyScenario:
    """Two librdkafka producers of one app plus a Java producer, 13:00-15:00; one spikes 14:20-14:25.

    The spike (8000 ms record queue time, 5 whole minutes) breaks the KIP's example rule (> 5000 ms for
    more than 180 s) and the learned baseline; everything else is noise around a steady level, and one
    metric is perfectly flat.
    """
    rng = np.random.default_rng(seed)
    writer = LandingWriter(root)
    start, end = DAY.replace(hour=13), DAY.replace(hour=15)
    breach_start, breach_end = DAY.replace(hour=14, minute=20), DAY.replace(hour=14, minute=25)
    anomalous = make_client(1, LIBRDKAFKA, client_id="orders-producer")
    clean = make_client(2, LIBRDKAFKA, client_id="orders-producer")
    java = make_client(3, JAVA, client_id="billing-producer")
    times = push_times(start, end)
    for client in (anomalous, clean, java):
        values = 100 + rng.normal(0, 5, size=times.shape)
        if client is anomalous:
            spiking = (times >= ns(breach_start)) & (times < ns(breach_end))
            values[spiking] = 8000.0
        writer.write(
            series_table([client], QUEUE_TIME_MAX, "gauge", None, {}, times[None, :], values[None, :])
        )
        flat = np.full(times.shape, 42.0)
        writer.write(series_table([client], FLAT_METRIC, "gauge", None, {}, times[None, :], flat[None, :]))
    return AnomalyScenario(
        anomalous, clean, java, DAY.replace(hour=14), end, breach_start, breach_end, 8000.0
    )


def write_label_scenario(root: str) -> tuple[SyntheticClient, SyntheticClient]:
    """The same node latency from librdkafka (int ``node.id``) and Java (``node_id="node-1"``)."""
    writer = LandingWriter(root)
    start = DAY.replace(hour=13)
    times = push_times(start, start + timedelta(minutes=2))[None, :]
    rdkafka, java = make_client(11, LIBRDKAFKA), make_client(12, JAVA)
    name = "org.apache.kafka.producer.node.request.latency.avg"
    writer.write(
        series_table([rdkafka], name, "gauge", None, {"node.id": "1"}, times, np.full(times.shape, 3.0))
    )
    writer.write(
        series_table(
            [java],
            name.upper().replace(".", "-"),
            "gauge",
            None,
            {"node_id": "node-1", "client-id": "x"},
            times,
            np.full(times.shape, 4.0),
        )
    )
    return rdkafka, java


def write_null_label_scenario(root: str) -> SyntheticClient:
    """One client, two series of one metric whose label sets differ only in which value is null.

    Hashes skip nulls, so the two land on the same raw-series hash under every seed: the read must
    notice and join points on the whole series instead. Values: 1.0 for ``{"a": null, "b": "x"}``,
    2.0 for ``{"a": "x", "b": null}``.
    """
    writer = LandingWriter(root)
    start = DAY.replace(hour=13)
    times = push_times(start, start + timedelta(minutes=1))[None, :]
    client = make_client(13, LIBRDKAFKA)
    name = "org.apache.kafka.producer.node.request.latency.avg"
    for labels, value in (({"a": None, "b": "x"}, 1.0), ({"a": "x", "b": None}, 2.0)):
        writer.write(series_table([client], name, "gauge", None, labels, times, np.full(times.shape, value)))
    return client


@dataclass(frozen=True)
class CounterScenario:
    restarting: SyntheticClient
    long_running: SyntheticClient
    restart_at: datetime


def write_counter_scenario(root: str) -> CounterScenario:
    """Cumulative sums: one client restarts at 13:30 (counter drops, start_time moves); one started at 12:00.

    Restarting client: +10 per push before 13:30 (counter started 13:00:00), +7 per push after.
    Long-running client: +5 per push since 12:00; its points from 12:50 on let the first point of 13:00
    be differenced (the apps' counter lookback).
    """
    writer = LandingWriter(root)
    name = "org.apache.kafka.producer.connection.creation.total"
    start, end, restart = DAY.replace(hour=13), DAY.replace(hour=14), DAY.replace(hour=13, minute=30)
    restarting, long_running = make_client(21), make_client(22)
    times = push_times(start, end)
    before = times < ns(restart)
    pushes_before = int(before.sum())
    values = np.where(
        before, 10.0 * (np.arange(times.size) + 1), 7.0 * (np.arange(times.size) - pushes_before + 1)
    )
    starts = np.where(before, ns(start), ns(restart))
    writer.write(
        series_table(
            [restarting], name, "sum", "cumulative", {}, times[None, :], values[None, :], starts[None, :]
        )
    )
    early = push_times(DAY.replace(hour=12, minute=50), end)
    since_noon = (early - ns(DAY.replace(hour=12))) // (PUSH_SECONDS * NANOS)
    writer.write(
        series_table(
            [long_running],
            name,
            "sum",
            "cumulative",
            {},
            early[None, :],
            (5.0 * since_noon)[None, :],
            np.full((1, early.size), ns(DAY.replace(hour=12))),
        )
    )
    return CounterScenario(restarting, long_running, restart)


def write_histogram_scenario(root: str) -> SyntheticClient:
    """Two delta histogram points in one minute: 100 observations in (10, 100], 100 in (100, 1000]."""
    client = make_client(31)
    start = DAY.replace(hour=13)
    rows = []
    for second, counts in ((10, [0, 100, 0, 0]), (40, [0, 0, 100, 0])):
        moment = start + timedelta(seconds=second)
        rows.append(
            {
                **client_labels(client),
                "metric_name": "org.apache.kafka.producer.request.size",
                "metric_type": "histogram",
                "temporality": "delta",
                "attributes": {},
                "start_time": ns(moment) - 30 * NANOS,
                "time": ns(moment),
                "count": 100,
                "sum": 100 * (55.0 if second == 10 else 550.0),
                "min": 20.0 if second == 10 else 150.0,
                "max": 90.0 if second == 10 else 900.0,
                "bucket_counts": counts,
                "explicit_bounds": [10.0, 100.0, 1000.0],
            }
        )
    LandingWriter(root).write(rows_table(rows))
    return client


@dataclass(frozen=True)
class BrokerScenario:
    throttled_client: SyntheticClient
    calm_client: SyntheticClient
    failing_client: SyntheticClient
    restart_at: datetime


def write_broker_scenario(root: str) -> BrokerScenario:
    """Two brokers, 13:00-14:00, pushes every 10 s; broker 1 restarts at 13:30 (its counters reset).

    Broker 1 serves calm (1 export/push) and throttled (1 export + 3 throttles/push) clients; broker 2
    serves failing (1 export + 1 plugin error/push). Export time histogram: one 3 ms export per push in
    bucket (1, 5]. Unknown subscriptions: +1 per push on each broker. Instance count gauge: 2 and 1.
    """
    writer = LandingWriter(root)
    start, end, restart = DAY.replace(hour=13), DAY.replace(hour=14), DAY.replace(hour=13, minute=30)
    calm, throttled, failing = make_client(41), make_client(42, JAVA), make_client(43)
    times = push_times(start, end)
    rows: list[dict[str, object]] = []
    for broker, clients in ((1, (calm, throttled)), (2, (failing,))):
        for moment_ns in times.tolist():
            restarted = broker == 1 and moment_ns >= ns(restart)
            origin = ns(restart) if restarted else ns(start)
            pushes = (moment_ns - origin) // (PUSH_SECONDS * NANOS) + 1
            counters = {}
            for client in clients:
                totals = {"plugin_export.count": pushes}
                if client is throttled:
                    totals["throttle.count"] = 3 * pushes
                if client is failing:
                    totals["plugin_error.count"] = pushes
                counters[client.instance_id] = totals
            rows += broker_push_rows(
                node_id=broker,
                cluster_id="cluster-a",
                time_ns=moment_ns,
                start_ns=origin,
                pushes=pushes,
                counters=counters,
                export_time=ExportTime(sum_per_push=3.0, min=3.0, max=3.0, buckets_per_push=[0, 1, 0, 0]),
            )
    for client in (calm, throttled, failing):
        rows.append(
            {
                **client_labels(client),
                "metric_name": FLAT_METRIC,
                "metric_type": "gauge",
                "time": ns(start) + 5 * NANOS,
                "value": 1.0,
            }
        )
    writer.write(rows_table(rows))
    return BrokerScenario(throttled, calm, failing, restart)
