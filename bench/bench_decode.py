"""Decode benchmark: datapoints/s/core of ``decode_batch`` vs a bare opentelemetry-proto loop (same run).

The baseline parses each value with opentelemetry-proto and reads every point's value and every
attribute's key and typed value, keeping nothing. The product decodes the same values to an Arrow
table in DATAPOINT_SCHEMA (headers, lineage, attributes as maps). Ratio = product / baseline.
Also reports a two-thread run of the product over ``PartitionBatch`` chunks (how landing's staging
threads share a backlog's chunks; the native decoder releases the GIL), and the pure-Python
reference decoder (``KIP714_OTLP_DECODER=python``) for comparison.

Per-core figures use this process's CPU time (``time.process_time``, best of ``--runs``): on a shared
machine wall time mostly measures the other tenants. The two-thread figure is wall time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

from otlp_payloads import client_headers, producer_like_payload

from airflow_provider_kip714.decoding.decoder import TopicRecord, decode_batch
from airflow_provider_kip714.native_switches import DECODER_ENV
from airflow_provider_kip714.telemetry.landing_chunk import PartitionBatch
from airflow_provider_kip714.telemetry.landing_stage import record_columns


def baseline_loop(values: list[bytes]) -> int:
    points = 0
    for value in values:
        data = MetricsData.FromString(value)
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    for point in getattr(metric, kind).data_points:
                        points += 1
                        which = point.WhichOneof("value")
                        _ = getattr(point, which) if which else None
                        for kv in point.attributes:
                            _ = kv.key
                            any_value = kv.value
                            typed = any_value.WhichOneof("value")
                            _ = getattr(any_value, typed) if typed else None
    return points


def make_records(count: int, points_per_record: int) -> list[TopicRecord]:
    headers = client_headers()
    return [
        TopicRecord(
            "_client_telemetry",
            index % 8,
            index,
            1_763_800_000_000 + index,
            b"AAECAwQFBgcICQoLDA0ODw",
            headers,
            producer_like_payload(points_per_record, seed=index),
        )
        for index in range(count)
    ]


def _decode_chunk(records: list[TopicRecord]) -> int:
    return decode_batch(records).datapoints.num_rows


def _decode_partition_batch(batch: PartitionBatch) -> int:
    """As landing's staging threads decode: the batch's columns, strings left dictionary-encoded."""
    return decode_batch(record_columns(batch), dictionary_strings=True).datapoints.num_rows


def partition_batch(records: list[TopicRecord]) -> PartitionBatch:
    batch = PartitionBatch(records[0].topic, records[0].partition)
    for record in records:
        batch.append(record.offset, record.timestamp_ms, record.key, list(record.headers), record.value)
    return batch


def best_of(runs: int, func, *args, clock=time.perf_counter) -> tuple[float, int]:
    best = float("inf")
    result = 0
    for _ in range(runs):
        started = clock()
        result = func(*args)
        best = min(best, clock() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--points-per-record", type=int, default=15)
    parser.add_argument("--batch", type=int, default=1000, help="records per decode_batch call")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    records = make_records(args.records, args.points_per_record)
    values = [record.value for record in records]
    batches = [records[i : i + args.batch] for i in range(0, len(records), args.batch)]

    cpu = time.process_time
    baseline_s, baseline_points = best_of(args.runs, baseline_loop, values, clock=cpu)
    baseline_wall_s, _ = best_of(args.runs, baseline_loop, values)
    product_s, product_points = best_of(args.runs, lambda: sum(_decode_chunk(b) for b in batches), clock=cpu)
    assert product_points == baseline_points, (product_points, baseline_points)

    compact = [partition_batch(batch) for batch in batches]
    with ThreadPoolExecutor(max_workers=2) as pool:
        parallel_s, parallel_points = best_of(
            args.runs, lambda: sum(pool.map(_decode_partition_batch, compact))
        )
    os.environ[DECODER_ENV] = "python"
    reference_s, _ = best_of(args.runs, lambda: sum(_decode_chunk(b) for b in batches), clock=cpu)
    del os.environ[DECODER_ENV]

    baseline_rate = baseline_points / baseline_s
    product_rate = product_points / product_s
    parallel_rate = parallel_points / parallel_s
    reference_rate = baseline_points / reference_s
    print(f"records={args.records} points={baseline_points} points/record={args.points_per_record}")
    print(f"baseline  opentelemetry-proto loop : {baseline_rate:12,.0f} points/s per CPU second")
    print(f"product   decode_batch -> Arrow     : {product_rate:12,.0f} points/s per CPU second")
    print(f"product   2 threads                 : {parallel_rate:12,.0f} points/s (wall clock)")
    print(f"python reference decoder (no native): {reference_rate:12,.0f} points/s per CPU second")
    print(f"ratio per core (product/baseline)   : {product_rate / baseline_rate:.2f}  (target >= 0.80)")
    print(f"ratio 2 threads / baseline 1 thread, both wall clock : {baseline_wall_s / parallel_s:.2f}")


if __name__ == "__main__":
    main()
