"""The landing zone ``bench_turnaround.py`` analyses: one troubleshooting window the size of the demo's.

The real points of ``tests/spark/data/demo_landing`` (2,628 points landed from real librdkafka and Java
clients, 08:17-08:22 UTC), plus a synthetic producer fleet and three brokers' KIP-714 metrics (cumulative
counters and export-time histograms) over the same minutes: about 11k points, like the demo's window.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.support.broker_landing import ExportTime, broker_push_rows
from tests.support.synthetic_landing import (
    NANOS,
    LandingWriter,
    generate_fleet,
    make_client,
    rows_table,
)

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "spark" / "data" / "demo_landing"
WINDOW_START = datetime(2026, 11, 22, 8, 17, tzinfo=UTC)
WINDOW_END = datetime(2026, 11, 22, 8, 22, 30, tzinfo=UTC)
HOUR = (datetime(2026, 11, 22, 8, tzinfo=UTC), datetime(2026, 11, 22, 9, tzinfo=UTC))
BROKERS = 3
CLIENTS_PER_BROKER = 3
PUSH_SECONDS = 10
EXPORT_TIME = ExportTime(sum_per_push=0.5, min=0.1, max=4.2, buckets_per_push=[1, 0, 0, 0])


def broker_rows(start: datetime, end: datetime) -> list[dict[str, object]]:
    """Per broker and push: instance count, unknown subscriptions, and per client its export counters."""
    rows: list[dict[str, object]] = []
    moments = range(int(start.timestamp()), int(end.timestamp()), PUSH_SECONDS)
    for broker in range(1, BROKERS + 1):
        clients = [make_client(100 + broker * 10 + i) for i in range(CLIENTS_PER_BROKER)]
        for step, second in enumerate(moments):
            pushes = step + 1
            counters = {
                client.instance_id: {
                    "plugin_export.count": pushes,
                    "throttle.count": index * pushes,
                    "plugin_error.count": 0,
                }
                for index, client in enumerate(clients)
            }
            rows += broker_push_rows(
                node_id=broker,
                cluster_id="bench-cluster",
                time_ns=second * NANOS + broker * 1000,
                start_ns=int(start.timestamp()) * NANOS,
                pushes=pushes,
                counters=counters,
                export_time=EXPORT_TIME,
            )
    return rows


def write_window(root: Path, fleet_points: int = 6_900) -> int:
    """Write the window's landing zone under ``root`` (replacing it); returns the number of points."""
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(FIXTURE, root)
    fixture_points = 2_628
    minutes = (WINDOW_END - WINDOW_START) / timedelta(hours=1)
    fleet = generate_fleet(root, WINDOW_START, minutes, fleet_points, push_interval_seconds=PUSH_SECONDS)
    writer = LandingWriter(root)
    writer.write(rows_table(broker_rows(WINDOW_START, WINDOW_END)))
    return fixture_points + fleet + writer.rows
