"""Rebuild ``demo_landing/``: a trimmed copy of the datapoints a real ``kip714 demo`` run landed.

The source is a troubleshooting window's landing zone (``<run>/landing``), landed from real librdkafka
2.16 and Java 4.4 clients by the real landing code. Kept: four clients (a healthy and a slow consumer of
one group, the healthy Java producer, the throttled producer) and the metrics the tests look at, every
column as landed, so the fixture stays small (< 300 KB) and keeps the clients' real quirks (Java's
``node-1`` labels and NaN maxima, librdkafka's ``node.id``).

    .venv/bin/python tests/spark/data/trim_demo_landing.py /tmp/demo-data-1/troubleshoot/<run>/landing
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

FIXTURE = Path(__file__).resolve().parent / "demo_landing"
CLIENTS = (
    "demo-audit-consumer-1",
    "demo-audit-consumer-slow",
    "demo-java-producer",
    "demo-payments-producer",
)
METRICS = tuple(
    f"org.apache.kafka.{name}"
    for name in (
        "consumer.poll.idle.ratio.avg",
        "consumer.fetch.manager.fetch.latency.avg",
        "consumer.node.request.latency.max",
        "consumer.connection.creation.total",
        "producer.node.request.rate",
        "producer.node.request.total",
        "producer.node.incoming.byte.rate",
        "producer.node.request.latency.max",
        "producer.metadata.age",
        "producer.record.queue.time.max",
        "producer.produce.throttle.time.max",
        "producer.request.rate",
    )
)


def trim(landing_root: Path) -> Path:
    """Write the fixture's one Parquet file from ``landing_root/datapoints`` and return its path."""
    source = ds.dataset(landing_root / "datapoints", format="parquet")
    wanted = pc.field("client_id").isin(list(CLIENTS)) & pc.field("metric_name").isin(list(METRICS))
    table = source.to_table(filter=wanted).sort_by([("time", "ascending")])
    day, hour = table["date"][0].as_py(), table["hour"][0].as_py()
    target = FIXTURE / "datapoints" / f"date={day}" / f"hour={hour:02d}" / "demo-window.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, target, compression="zstd", compression_level=19)
    return target


if __name__ == "__main__":
    written = trim(Path(sys.argv[1]))
    print(f"{written}: {pq.read_metadata(written).num_rows} rows, {written.stat().st_size} bytes")
