"""The demo fleet's findings as the Spark apps write them, for the UI page's screenshot and tests.

On top of ``tests/ui/analytics_data.land_analytics`` (a client with a latency spike, a quiet one, a
broker): the two silent clients of the demo (a producer killed with SIGKILL, a Java producer the
broker switched off under a small ``telemetry.max.bytes``), a finished window's convergence, the
capabilities of librdkafka and the Java client, and a peer anomaly (one consumer of a group much slower
than the others). Schemas are the apps' (``analytics_data.write_table``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from tests.ui.analytics_data import Landed, land_analytics, minute_bucket, write_table

RDKAFKA = ("confluent-kafka-python", "2.16.0")
JAVA = ("apache-kafka-java", "4.4.0")


def _who(instance: str, client_id: str, software: tuple[str, str]) -> dict[str, str]:
    return {
        "client_instance_id": instance,
        "client_id": client_id,
        "client_software_name": software[0],
        "client_software_version": software[1],
        "client_source_address": "127.0.0.1",
        "principal": "User:ANONYMOUS",
    }


POLL_IDLE = "org.apache.kafka.consumer.poll.idle.ratio.avg"


def _audit_group_rollups(slow: dict[str, str], end: datetime, breach: datetime) -> list[dict]:
    """Poll idle ratio of the four consumers of group ``audit``: the slow one falls near 0 from
    ``breach`` on (it never waits for records), its three peers sit near 1 (the demo's picture)."""
    peers = [_who(f"AuDiTpEeRaUdItPeEr0{n}", f"audit-consumer-{n}", RDKAFKA) for n in (1, 2, 3)]
    rows = []
    for minute in range(12, 0, -1):
        start = end - timedelta(minutes=minute)
        for who in (slow, *peers):
            late = who is slow and start >= breach
            value = 0.02 if late else 0.95 + 0.01 * (len(who["client_id"]) % 3)
            rows.append(
                {
                    **who,
                    **minute_bucket(start),
                    "record_type": "client",
                    "resource_attributes": [("group_id", "audit")],
                    "metric_name": POLL_IDLE,
                    "metric_type": "gauge",
                    "attributes_key": "",
                    "signal": value,
                    "avg": value,
                    "count": 6,
                }
            )
    return rows


def land_demo_analytics(analytics: Path, end: datetime) -> Landed:
    """Write the page's tables into ``analytics``; returns the anomalous client of ``land_analytics``."""
    landed = land_analytics(analytics, end=end)
    hour = end.replace(minute=0, second=0, microsecond=0)
    killed = _who("KiLLeDKiLLeDKiLLeDKi01", "demo-producer-killed", RDKAFKA)
    java = _who("JaVaJaVaJaVaJaVaJaVa01", "demo-java-producer", JAVA)
    silent = []
    for who, since, reason in (
        (killed, end - timedelta(minutes=9), "no push for 4.2 intervals and no terminating push"),
        (java, end - timedelta(minutes=11), "broker plugin errors for this instance: push refused"),
    ):
        silent.append(
            {
                **who,
                "hour_start": hour,
                "interval_start": hour,
                "cluster_id": "kip714-demo",
                "broker_node_id": 1,
                "push_interval_seconds": 10.0,
                "expected_pushes": 30,
                "landed_pushes": 12,
                "first_push_time": hour,
                "last_push_time": since,
                "terminated": False,
                "status": "silent",
                "silent_since": since,
                "reason": reason,
            }
        )
    write_table(analytics, "delivery", silent)
    created = end - timedelta(minutes=20)
    convergence = []
    for index, delay in enumerate((2.1, 4.8, 9.7)):
        who = _who(f"CoNvErGeNcE0000000000{index}", f"orders-producer-{index}", RDKAFKA)
        convergence.append(
            {
                **who,
                "subscription_name": "kip714-troubleshoot-exp20261124T050000Z-1a2b3c4d",
                "interval_start": created,
                "subscribed_at": created,
                "first_push_time": created + timedelta(seconds=delay),
                "delay_seconds": delay,
                "matched_clients": 3,
                "converged_clients": 3,
                "p50_seconds": 4.8,
                "p90_seconds": 9.7,
                "p100_seconds": 9.7,
            }
        )
    write_table(analytics, "convergence", convergence)
    capabilities = [
        (RDKAFKA, "org.apache.kafka.producer.record.queue.time.avg", 4, 1.0),
        (RDKAFKA, "org.apache.kafka.producer.node.request.latency.avg", 4, 3.0),
        (RDKAFKA, "org.apache.kafka.consumer.poll.idle.ratio.avg", 4, 1.0),
        (JAVA, "org.apache.kafka.producer.record.queue.time.avg", 1, 1.0),
        (JAVA, "org.apache.kafka.producer.node.request.latency.avg", 1, 3.0),
        (JAVA, "org.apache.kafka.consumer.fetch.manager.records.lag", 1, 12.0),
    ]
    write_table(
        analytics,
        "capabilities",
        [
            {
                "client_software_name": software[0],
                "client_software_version": software[1],
                "metric_name": metric,
                "metric_type": "gauge",
                "instances": instances,
                "points_per_push": points,
                "first_seen": hour,
                "last_seen": end,
                "interval_start": hour,
            }
            for software, metric, instances, points in capabilities
        ],
    )
    slow = _who("SlOwSlOwSlOwSlOwSlOw01", "audit-consumer-slow", RDKAFKA)
    breach = end - timedelta(minutes=8)
    write_table(analytics, "rollups", _audit_group_rollups(slow, end, breach))
    write_table(
        analytics,
        "anomalies",
        [
            {
                **slow,
                "kind": "baseline",
                "baseline_kind": "peers",
                "peer_group": "group_id=audit",
                "rule_name": "peers:org.apache.kafka.consumer.poll.idle.ratio.avg",
                "severity": "critical",
                "metric_name": "org.apache.kafka.consumer.poll.idle.ratio.avg",
                "field": "peer_deviation",
                "attributes_key": "",
                "comparison": ">",
                "threshold": 3.0,
                "critical_threshold": 6.0,
                "peak_value": 17.6,
                "mean_value": 17.2,
                "excess": 14.6,
                "excess_ratio": 4.9,
                "breach_start": breach,
                "breach_end": breach + timedelta(minutes=6),
                "duration_seconds": 360,
                "breached_buckets": 36,
                "min_duration_seconds": 30,
                "description": "17.6 peer scales from the median of group_id=audit",
            }
        ],
    )
    return landed
