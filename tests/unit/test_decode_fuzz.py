"""Property test: mutated real payloads never make decoding raise, and both decode paths agree.

Payloads are the test builders' client-shaped pushes (``otlp_payloads``), every point kind, and
broker records; each is mutated by truncation, byte flips, insertion and extension (what a broken
client, a bit flip or a short read does), or has its unsigned wire numbers (flags, times, counts) set
anywhere in their wire range, past what the landing columns hold. For every batch the native and
the Python decoder must give the same rows, the same quarantine reasons and the same point counts,
and neither may raise: one bad record must never stop the others. OTLP/JSON values are mutated too
(Python decoder only).
Longer, coverage-guided runs: ``bench/fuzz_decoder.py`` (atheris, cargo-fuzz), not in CI.
"""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from otlp_payloads import broker_headers, client_headers, every_kind_payload, producer_like_payload

from airflow_provider_kip714.decoding.decoder import DecodedBatch, TopicRecord, decode_batch
from airflow_provider_kip714.native_switches import DECODER_ENV

RECORD_TS_MS = 1_763_800_000_000
SEEDS = [
    producer_like_payload(12, seed=1),
    producer_like_payload(3, seed=2),
    every_kind_payload(),
    producer_like_payload(1, seed=3),
]
JSON_SEEDS = [
    json.dumps(json_format.MessageToDict(m.MetricsData.FromString(value))).encode() for value in SEEDS[1:3]
]
FUZZ = settings(
    max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed payload after one to four truncations, byte flips, insertions or extensions."""
    value = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        operation = draw(st.sampled_from(["truncate", "flip", "set", "insert", "extend"]))
        position = draw(st.integers(0, max(len(value) - 1, 0)))
        if operation == "truncate":
            del value[position:]
        elif operation == "flip" and value:
            value[position] ^= 1 << draw(st.integers(0, 7))
        elif operation == "set" and value:
            value[position] = draw(st.integers(0, 255))
        elif operation == "insert":
            value[position:position] = draw(st.binary(min_size=1, max_size=8))
        else:
            value += draw(st.binary(min_size=1, max_size=32))
    return bytes(value)


def _wire(bits: int) -> st.SearchStrategy[int]:
    """An unsigned wire value, often at the edges the landing columns care about."""
    edges = [0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**63, 2**64 - 1]
    return st.one_of(st.integers(0, 2**bits - 1), st.sampled_from([e for e in edges if e < 2**bits]))


@st.composite
def renumbered(draw: st.DrawFn) -> bytes:
    """Every point kind with its unsigned wire numbers (flags, times, counts) set anywhere in range."""
    data = m.MetricsData.FromString(every_kind_payload())
    for metric in data.resource_metrics[0].scope_metrics[0].metrics:
        kind = metric.WhichOneof("data")
        for point in getattr(metric, kind).data_points:
            point.flags = draw(_wire(32))
            point.time_unix_nano = draw(_wire(64))
            point.start_time_unix_nano = draw(_wire(64))
            if kind == "histogram":
                point.count = draw(_wire(64))
                point.bucket_counts[0] = draw(_wire(64))
            elif kind == "exponential_histogram":
                point.zero_count = draw(_wire(64))
                point.positive.bucket_counts[0] = draw(_wire(64))
            elif kind == "summary":
                point.count = draw(_wire(64))
    return data.SerializeToString()


def _records(values: list[bytes]) -> list[TopicRecord]:
    records = []
    for index, value in enumerate(values):
        headers = broker_headers(2) if index % 5 == 4 else client_headers()
        records.append(TopicRecord("_client_telemetry", 0, index, RECORD_TS_MS + index, None, headers, value))
    return records


def _decode(records: list[TopicRecord], monkeypatch: pytest.MonkeyPatch, decoder: str) -> DecodedBatch:
    monkeypatch.setenv(DECODER_ENV, decoder)
    try:
        return decode_batch(records)
    finally:
        monkeypatch.delenv(DECODER_ENV)


def _rows(batch: DecodedBatch) -> list[dict]:
    # NaN != NaN: compare the rows' text form
    return [repr(sorted(row.items())) for row in batch.datapoints.to_pylist()]


@FUZZ
@given(
    values=st.lists(st.one_of(mutated(SEEDS), renumbered()), min_size=1, max_size=6),
    keep_valid=st.booleans(),
)
def test_mutated_payloads_never_raise_and_both_paths_agree(values, keep_valid) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        if keep_valid:
            values = [SEEDS[0], *values]
        records = _records(values)
        native = _decode(records, monkeypatch, "native")
        reference = _decode(records, monkeypatch, "python")
    assert native.failures == reference.failures
    assert native.points_per_record == reference.points_per_record
    assert _rows(native) == _rows(reference)
    assert len(native.points_per_record) == len(records)
    failed = {index for index, _ in native.failures}
    assert all(native.points_per_record[index] == 0 for index in failed)
    if keep_valid:
        assert 0 not in failed and native.points_per_record[0] == 12


@settings(FUZZ, max_examples=150)
@given(values=st.lists(mutated(JSON_SEEDS), min_size=1, max_size=4))
def test_mutated_otlp_json_never_raises(values) -> None:
    for value_format in ("otlp_json", "auto"):
        batch = decode_batch(_records(values), value_format)
        assert len(batch.points_per_record) == len(values)
        assert batch.datapoints.num_rows == sum(batch.points_per_record)
