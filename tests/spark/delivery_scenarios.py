"""Landing-zone scenarios for delivery, convergence and capabilities (crafted pushes, broker records)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa

from tests.spark.scenarios import DAY, PUSH_SECONDS, ns, push_times
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

METRIC = "org.apache.kafka.producer.record.queue.time.max"
CONSUMER_METRIC = "org.apache.kafka.consumer.poll.idle.ratio.avg"
CLUSTER = "synthetic-cluster"
BROKER = {"record_type": "broker", "node_id": 1, "cluster_id": CLUSTER}


@dataclass(frozen=True)
class DeliveryScenario:
    steady: SyntheticClient
    killed: SyntheticClient
    closed: SyntheticClient
    java_stopped: SyntheticClient
    java_consumer_killed: SyntheticClient
    gappy: SyntheticClient
    throttled: SyntheticClient
    slowed: SyntheticClient
    slowed_from: datetime
    killed_at: datetime
    closed_at: datetime
    java_stopped_at: datetime
    gap: tuple[datetime, datetime]
    unseen_from: datetime
    start: datetime
    end: datetime
    resubscribed: SyntheticClient
    lost_at_resubscription: SyntheticClient
    window_opened_at: datetime


def _pushes(writer: LandingWriter, client: SyntheticClient, times: np.ndarray, metric: str = METRIC) -> None:
    values = np.full(times.shape, 5.0)
    writer.write(series_table([client], metric, "gauge", None, {}, times[None, :], values[None, :]))


def _broker_rows(scenario: DeliveryScenario) -> list[dict[str, object]]:
    """Gauge: live pushers (the killed one expires 60 s after its last push, the closed one at once) plus
    the refused one; the throttled client's cumulative throttle count steps to 2 at 13:40."""
    start, end = scenario.start, scenario.end
    rows: list[dict[str, object]] = []
    for moment in push_times(start, end, offset_seconds=0).tolist():
        at = datetime.fromtimestamp(moment // NANOS, start.tzinfo)
        known = 6 + (at < scenario.killed_at + timedelta(seconds=60)) + (at < scenario.closed_at)
        known += at < scenario.java_stopped_at + timedelta(seconds=60)
        known += at < scenario.java_stopped_at + timedelta(seconds=60)  # the killed Java consumer
        known += at >= scenario.unseen_from
        base = {**BROKER, "resource_attributes": {"node_id": "1", "cluster_id": CLUSTER}, "time": moment}
        rows.append(
            {
                **base,
                "metric_name": "kafka.server.client_metrics.instance.count",
                "metric_type": "gauge",
                "value": float(known),
            }
        )
        throttles = 2.0 if at >= start + timedelta(minutes=40) else 0.0
        rows.append(
            {
                **base,
                "metric_name": "kafka.server.client_metrics.throttle.count",
                "metric_type": "sum",
                "temporality": "cumulative",
                "is_monotonic": True,
                "start_time": ns(start) - 600 * NANOS,
                "attributes": {"client_instance_id": scenario.throttled.instance_id},
                "value": throttles,
            }
        )
    return rows


def _window_opens(client: SyntheticClient, opened_at: datetime, end: datetime, lost_s: int) -> pa.Table:
    """Pushes every 10 s from 13:00; at ``opened_at`` a 1 s window opens: the broker accepts one more push
    under the old subscription (5 s after), refuses the next one 10 s later (UNKNOWN_SUBSCRIPTION_ID),
    and the client pushes every 1 s from one second after that (``lost_s`` later still: pushes lost),
    until ``end``. The interval header changes with the subscription; the subscription id header is
    empty, as the plugin writes it."""
    old = push_times(DAY.replace(hour=13), opened_at + timedelta(seconds=6)).tolist()
    new = list(range(old[-1] + (11 + lost_s) * NANOS, ns(end), NANOS))
    points = [
        {
            **client_labels(client),
            "metric_name": METRIC,
            "metric_type": "gauge",
            "time": moment,
            "value": 5.0,
            "push_interval_ms": 10_000 if is_old else 1000,
            "offset": offset,
            "cluster_id": CLUSTER,
        }
        for offset, (moment, is_old) in enumerate([(t, True) for t in old] + [(t, False) for t in new])
    ]
    return rows_table(points)


def write_delivery_scenario(root: str) -> DeliveryScenario:
    """13:00-15:00, pushes every 10 s: a steady client; a librdkafka client killed at 13:20 (no terminating
    push, and librdkafka sends one on close); a Java client whose pushes stop at 13:25 (the Java client
    producer sends no terminating push even on a clean close, so it has ended, not gone silent) and a
    Java consumer killed at the same moment (the Java consumer does send one: it is silent); one
    closed at 13:30 with a terminating push; one with no push 13:10-13:12; one the broker throttled twice
    at 13:40; one that pushes every 40 s from 14:50 (a throttled client keeps its slower cadence: its last
    push, 14:59:25, is 35 s before the end, more than 2.5 intervals but not 2.5 of its own gaps); from
    13:05 the broker knows one instance more than push to it (a refused client); two that a 1 s window
    changes from a 10 s cadence at 14:30 (``_window_opens``), one re-subscribing as clients do and one that
    also loses 9 s of pushes then.
    """
    writer = LandingWriter(root)
    start, end = DAY.replace(hour=13), DAY.replace(hour=15)
    killed_at, closed_at = DAY.replace(hour=13, minute=20), DAY.replace(hour=13, minute=30)
    gap = (DAY.replace(hour=13, minute=10), DAY.replace(hour=13, minute=12))
    unseen_from = DAY.replace(hour=13, minute=5)
    steady, killed, closed = make_client(71), make_client(72, LIBRDKAFKA), make_client(73)
    java_stopped, java_stopped_at = make_client(77, JAVA), DAY.replace(hour=13, minute=25)
    java_consumer_killed = make_client(78, JAVA)
    gappy, throttled = make_client(74), make_client(75, LIBRDKAFKA)
    every = push_times(start, end)
    _pushes(writer, steady, every)
    _pushes(writer, killed, every[every < ns(killed_at)])
    _pushes(writer, java_stopped, every[every < ns(java_stopped_at)])
    _pushes(writer, java_consumer_killed, every[every < ns(java_stopped_at)], CONSUMER_METRIC)
    _pushes(writer, closed, every[every < ns(closed_at)])
    _pushes(writer, gappy, every[(every < ns(gap[0])) | (every >= ns(gap[1]))])
    _pushes(writer, throttled, every)
    slowed, slowed_from = make_client(76), DAY.replace(hour=14, minute=50)
    slower = np.arange(ns(slowed_from) + 5 * NANOS, ns(end), 40 * NANOS, dtype=np.int64)
    _pushes(writer, slowed, np.concatenate([every[every <= ns(slowed_from) + 5 * NANOS], slower[1:]]))
    terminating = {
        **client_labels(closed),
        "metric_name": METRIC,
        "metric_type": "gauge",
        "time": ns(closed_at) + 2 * NANOS,
        "value": 5.0,
        "terminating": True,
        "push_interval_ms": PUSH_SECONDS * 1000,
        "offset": 10_000,
        "cluster_id": CLUSTER,
    }
    scenario = DeliveryScenario(
        steady,
        killed,
        closed,
        java_stopped,
        java_consumer_killed,
        gappy,
        throttled,
        slowed,
        slowed_from,
        killed_at,
        closed_at,
        java_stopped_at,
        gap,
        unseen_from,
        start,
        end,
        make_client(79),
        make_client(80),
        DAY.replace(hour=14, minute=30),
    )
    for client, lost_s in ((scenario.resubscribed, 0), (scenario.lost_at_resubscription, 9)):
        writer.write(_window_opens(client, scenario.window_opened_at, end, lost_s))
    writer.write(rows_table([terminating, *_broker_rows(scenario)]))
    return scenario


STANDING = "org.apache.kafka.producer.request.latency.avg"
WINDOW_METRIC = "org.apache.kafka.producer.record.queue.time.max"
CONSUMER_METRIC = "org.apache.kafka.consumer.poll.idle.ratio.avg"


@dataclass(frozen=True)
class ConvergenceScenario:
    subscribed_at: datetime
    delays: dict[str, float | None]
    """client_id -> seconds from creation to its first push of the window's metric (None: never)."""
    outsider: SyntheticClient


def write_convergence_scenario(root: str) -> ConvergenceScenario:
    """13:00-13:30: every client pushes a standing metric every 10 s (at :05); a window created at 13:10
    asks ``orders-.*`` for the record queue time, which orders-1..3 start pushing 5, 25 and 65 s later and
    orders-4 never does; billing pushes the queue time all along (another subscription) but is not matched.
    """
    writer = LandingWriter(root)
    start, end, subscribed_at = (
        DAY.replace(hour=13),
        DAY.replace(hour=13, minute=30),
        DAY.replace(hour=13, minute=10),
    )
    delays: dict[str, float | None] = {"orders-1": 5.0, "orders-2": 25.0, "orders-3": 65.0, "orders-4": None}
    every = push_times(start, end)
    outsider = make_client(90, client_id="billing")
    for index, (client_id, delay) in enumerate(delays.items()):
        client = make_client(80 + index, client_id=client_id)
        ones = np.ones(every.shape)
        writer.write(series_table([client], STANDING, "gauge", None, {}, every[None, :], ones[None, :]))
        if delay is not None:
            later = every[every >= ns(subscribed_at) + int(delay) * NANOS]
            values = np.ones(later.shape)
            writer.write(
                series_table([client], WINDOW_METRIC, "gauge", None, {}, later[None, :], values[None, :])
            )
    for metric in (STANDING, WINDOW_METRIC):
        ones = np.ones(every.shape)
        writer.write(series_table([outsider], metric, "gauge", None, {}, every[None, :], ones[None, :]))
    return ConvergenceScenario(subscribed_at, delays, outsider)


POLL_IDLE = "org.apache.kafka.consumer.poll.idle.ratio.avg"


@dataclass(frozen=True)
class PeerScenario:
    slow: SyntheticClient
    peers: tuple[SyntheticClient, ...]
    group: str


def write_peer_scenario(root: str, seed: int = 11) -> PeerScenario:
    """13:00-15:00: four consumers of group ``audit`` push poll idle ratio every 10 s; three idle about
    0.9 of the time, ``audit-consumer-slow`` about 0.02 all along (it was slow before any window, so only
    its peers show it)."""
    rng = np.random.default_rng(seed)
    writer = LandingWriter(root)
    every = push_times(DAY.replace(hour=13), DAY.replace(hour=15))
    peers = tuple(make_client(60 + i, client_id=f"audit-consumer-{i}") for i in range(1, 4))
    slow = make_client(64, client_id="audit-consumer-slow")
    for client in (*peers, slow):
        level = 0.02 if client is slow else 0.9
        values = np.clip(level + rng.normal(0, 0.01, size=every.shape), 0, 1)
        writer.write(
            series_table(
                [client],
                POLL_IDLE,
                "gauge",
                None,
                {},
                every[None, :],
                values[None, :],
                resource_attributes={"group_id": "audit", "member_id": client.client_id},
            )
        )
    return PeerScenario(slow, peers, "audit")
