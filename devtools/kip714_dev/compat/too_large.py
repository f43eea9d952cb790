"""How a broker answers a push that is too large once decompressed (Kafka 4.3.1+ caps that size).

A wire-level probe (``TelemetryProbe``) pushes about 1.5 MiB of OTLP, gzip-compressed to a few KB, at a
broker with the default ``telemetry.max.bytes`` (1 MiB): small on the wire, too large decompressed. The
same payload uncompressed is the size check every version has. apache/kafka #23444 turns the first
answer from INVALID_RECORD (the client switches telemetry off) into the retryable TELEMETRY_TOO_LARGE.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from opentelemetry.proto.metrics.v1 import metrics_pb2 as m

from kip714_dev.telemetry_probe import TelemetryProbe

OVERSIZED_BYTES = 1_536 * 1024
"""Decompressed size of the probe's push: 1.5 x Kafka's default telemetry.max.bytes."""


def oversized_payload() -> bytes:
    """A valid OTLP MetricsData of about ``OVERSIZED_BYTES``: one gauge with a long description."""
    point = m.NumberDataPoint(time_unix_nano=1, as_double=1.0)
    metric = m.Metric(
        name="org.apache.kafka.probe.big",
        description="x" * OVERSIZED_BYTES,
        gauge=m.Gauge(data_points=[point]),
    )
    data = m.MetricsData(
        resource_metrics=[m.ResourceMetrics(scope_metrics=[m.ScopeMetrics(metrics=[metric])])]
    )
    return data.SerializeToString()


@dataclass(frozen=True)
class TooLargeAnswers:
    compressed: str  # small on the wire, too large decompressed
    uncompressed: str  # too large on the wire


def probe_answers(bootstrap: str, client_id: str) -> TooLargeAnswers:
    """The broker's error names for both pushes, each from a fresh probe client (a refusal may end one)."""
    payload = oversized_payload()
    answers = []
    for compress in (True, False):
        with TelemetryProbe(bootstrap, client_id=f"{client_id}-{'gz' if compress else 'raw'}") as probe:
            view = probe.get_subscription()
            time.sleep(view.push_interval_ms / 1000 * 1.2)
            answers.append(probe.push(view.subscription_id, payload, compress=compress).name.upper())
    return TooLargeAnswers(*answers)
