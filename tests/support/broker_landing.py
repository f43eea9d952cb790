"""Broker records as the broker plugin lands them: one broker's KIP-714 metrics at one push.

The Spark scenarios and the turnaround benchmark both need brokers next to their clients; this is the
one generator of those rows. Counters and the export-time histogram are cumulative from ``start_ns``
(a broker restart resets them), as ``BrokerMetricsTask`` writes them (docs/topic-contract.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

EXPORT_TIME_BOUNDS = [1.0, 5.0, 10.0]


@dataclass(frozen=True)
class ExportTime:
    """What each push adds to a client's ``plugin_export.time`` histogram (milliseconds)."""

    sum_per_push: float
    min: float
    max: float
    buckets_per_push: Sequence[int]


def broker_push_rows(
    *,
    node_id: int,
    cluster_id: str,
    time_ns: int,
    start_ns: int,
    pushes: int,
    counters: Mapping[str, Mapping[str, int]],
    export_time: ExportTime,
) -> list[dict[str, object]]:
    """Instance count, unknown subscriptions, and per client (instance id → counter suffix → total)
    its counters and export-time histogram, after ``pushes`` pushes."""
    base = {
        "record_type": "broker",
        "node_id": node_id,
        "cluster_id": cluster_id,
        "resource_attributes": {"node_id": str(node_id), "cluster_id": cluster_id},
        "time": time_ns,
        "start_time": start_ns,
    }
    cumulative = {**base, "metric_type": "sum", "temporality": "cumulative", "is_monotonic": True}
    rows: list[dict[str, object]] = [
        {
            **base,
            "metric_name": "kafka.server.client_metrics.instance.count",
            "metric_type": "gauge",
            "value": float(len(counters)),
            "start_time": None,
        },
        {
            **cumulative,
            "metric_name": "kafka.server.client_metrics.unknown_subscription_request.count",
            "value": float(pushes),
        },
    ]
    for instance_id, totals in counters.items():
        labels = {"client_instance_id": instance_id}
        for suffix, total in totals.items():
            rows.append(
                {
                    **cumulative,
                    "metric_name": f"kafka.server.client_metrics.{suffix}",
                    "attributes": labels,
                    "value": float(total),
                }
            )
        rows.append(_export_time_row(base, labels, pushes, export_time))
    return rows


def _export_time_row(
    base: Mapping[str, object], labels: dict[str, str], pushes: int, export_time: ExportTime
) -> dict[str, object]:
    return {
        **base,
        "metric_name": "kafka.server.client_metrics.plugin_export.time",
        "metric_type": "histogram",
        "temporality": "cumulative",
        "attributes": labels,
        "count": pushes,
        "sum": export_time.sum_per_push * pushes,
        "min": export_time.min,
        "max": export_time.max,
        "bucket_counts": [count * pushes for count in export_time.buckets_per_push],
        "explicit_bounds": list(EXPORT_TIME_BOUNDS),
    }
