"""The native fast path (``native/``, ``otlp_native``) against the Python reference decoder.

Every test decodes the same records twice, natively and with ``KIP714_OTLP_DECODER=python``, and
requires identical tables, failures and point counts: the fast path may hand records to the
reference, never decode them differently.
"""

from __future__ import annotations

import math
import random
import struct

import kip714_native
import numpy as np
import pyarrow as pa
import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from otlp_payloads import T0_NS, broker_headers, client_headers, every_kind_payload, producer_like_payload

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA
from airflow_provider_kip714.decoding import native as otlp_native
from airflow_provider_kip714.decoding.decoder import DecodedBatch, TopicRecord, decode_batch
from airflow_provider_kip714.native_switches import DECODER_ENV

RECORD_TS_MS = 1_763_800_000_000


def records_of(values: list[bytes | None], headers=None) -> list[TopicRecord]:
    headers = client_headers() if headers is None else headers
    return [
        TopicRecord(
            "_client_telemetry", 3, 100 + index, RECORD_TS_MS + index * 7_200_000, b"k", headers, value
        )
        for index, value in enumerate(values)
    ]


def both(records: list[TopicRecord], monkeypatch: pytest.MonkeyPatch) -> tuple[DecodedBatch, DecodedBatch]:
    monkeypatch.delenv(DECODER_ENV, raising=False)
    assert otlp_native.native_available()
    native = decode_batch(records)
    assert_same_as_landing_form(native, decode_batch(records, dictionary_strings=True))
    monkeypatch.setenv(DECODER_ENV, "python")
    assert not otlp_native.native_available()
    reference = decode_batch(records)
    monkeypatch.delenv(DECODER_ENV)
    return native, reference


def assert_same(native: DecodedBatch, reference: DecodedBatch, *, counts: bool = True) -> None:
    if counts:
        assert native.failures == reference.failures
        assert native.points_per_record == reference.points_per_record
    assert native.datapoints.schema == reference.datapoints.schema
    assert native.datapoints.num_rows == reference.datapoints.num_rows
    for name in reference.datapoints.schema.names:
        left = native.datapoints.column(name).to_pylist()
        right = reference.datapoints.column(name).to_pylist()
        assert _nan_safe(left) == _nan_safe(right), name


def assert_same_as_landing_form(native: DecodedBatch, landing: DecodedBatch) -> None:
    """What landing writes (string columns possibly dictionary-encoded) holds the same values."""
    assert landing.failures == native.failures
    assert landing.points_per_record == native.points_per_record
    assert landing.datapoints.schema.names == DATAPOINT_SCHEMA.names
    assert_same(native, DecodedBatch(landing.datapoints.cast(DATAPOINT_SCHEMA)), counts=False)


def _nan_safe(values: list) -> list:
    return ["NaN" if isinstance(value, float) and math.isnan(value) else value for value in values]


# --------------------------------------------------------------------------------------------------
# random well-formed payloads


def random_any_value(rng: random.Random, simple_only: bool) -> AnyValue:
    choice = rng.randrange(7 if simple_only else 9)
    if choice == 0:
        return AnyValue(string_value=rng.choice(["", "x", "node-1", "ünïcode ✓", 'a"b\\c']))
    if choice == 1:
        return AnyValue(
            int_value=rng.choice([0, 1, -1, 2**63 - 1, -(2**63), rng.randrange(-(10**12), 10**12)])
        )
    if choice == 2:
        return AnyValue(bool_value=rng.random() < 0.5)
    if choice in (3, 4):
        return AnyValue(double_value=random_double(rng))
    if choice == 5:
        return AnyValue()  # no value at all
    if choice == 6:
        return AnyValue(double_value=rng.choice([0.0, -0.0, 1e16, 1e-5, 123456789012345678.0]))
    if choice == 7:
        return AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue(string_value="y")]))
    return AnyValue(bytes_value=b"\x00\xff")


def random_double(rng: random.Random) -> float:
    kind = rng.randrange(4)
    if kind == 0:
        return struct.unpack("<d", rng.randbytes(8))[0]  # any bit pattern, nan and inf included
    if kind == 1:
        return rng.uniform(-1e6, 1e6)
    if kind == 2:
        return float(rng.randrange(-(10**6), 10**6))
    return rng.choice([0.5, 1e-4, 9.999e-5, 1e15, 9.999999999999998e15, 1e16, 2.5e-300, float("inf")])


def random_attributes(rng: random.Random, simple_only: bool) -> list[KeyValue]:
    return [
        KeyValue(
            key=rng.choice(["node.id", "node_id", "topic", "", "partition", "x"]),
            value=random_any_value(rng, simple_only),
        )
        for _ in range(rng.randrange(4))
    ]


def random_number_point(rng: random.Random, simple_only: bool) -> m.NumberDataPoint:
    point = m.NumberDataPoint(
        start_time_unix_nano=rng.choice([0, T0_NS - 10**9]),
        time_unix_nano=rng.choice([0, T0_NS, T0_NS + rng.randrange(10**12)]),
        attributes=random_attributes(rng, simple_only),
        flags=rng.choice([0, 0, 1]),
    )
    value_kind = rng.randrange(4)
    if value_kind == 0:
        point.as_int = rng.choice([0, 7, -3, 2**62])
    elif value_kind == 1:
        point.as_double = random_double(rng)
    elif value_kind == 2:
        point.as_double = 0.0
    return point


def random_payload(rng: random.Random, simple_only: bool) -> bytes:
    metrics = []
    for index in range(rng.randrange(1, 6)):
        points = [random_number_point(rng, simple_only) for _ in range(rng.randrange(0, 4))]
        name = rng.choice(["org.apache.kafka.producer.record.queue.time.avg", f"m{index}", "ü.metric"])
        unit = rng.choice(["", "ms", "1"])
        if rng.random() < 0.5:
            metric = m.Metric(name=name, unit=unit, gauge=m.Gauge(data_points=points))
        else:
            metric = m.Metric(
                name=name,
                unit=unit,
                description=rng.choice(["", "desc"]),
                sum=m.Sum(
                    data_points=points,
                    aggregation_temporality=rng.choice([0, 1, 2, 7]),
                    is_monotonic=rng.random() < 0.5,
                ),
            )
        metrics.append(metric)
    scopes = [
        m.ScopeMetrics(
            scope=InstrumentationScope(
                name=rng.choice(["", "librdkafka"]),
                version=rng.choice(["", "2.16.0"]),
                attributes=random_attributes(rng, True),
            )
            if rng.random() < 0.7
            else None,
            metrics=metrics[index::2],
        )
        for index in range(rng.randrange(1, 3))
    ]
    resource = Resource(attributes=random_attributes(rng, True)) if rng.random() < 0.7 else None
    return m.MetricsData(
        resource_metrics=[m.ResourceMetrics(resource=resource, scope_metrics=scopes)]
    ).SerializeToString()


# --------------------------------------------------------------------------------------------------
# tests


def test_client_shaped_payloads_take_the_native_path_and_match_the_reference(monkeypatch):
    values = [producer_like_payload(12, seed=seed) for seed in range(50)]
    status = np.frombuffer(kip714_native.decode_metrics(values)["status"], dtype=np.uint8)
    assert status.tolist() == [0] * 50  # all decoded natively, none handed to the reference
    native, reference = both(records_of(values), monkeypatch)
    assert native.datapoints.num_rows == 600
    assert_same(native, reference)


@pytest.mark.parametrize("seed", range(40))
def test_random_well_formed_batches_decode_identically(monkeypatch, seed):
    rng = random.Random(seed)
    values = [random_payload(rng, simple_only=seed % 2 == 0) for _ in range(20)]
    native, reference = both(records_of(values), monkeypatch)
    assert_same(native, reference)


def test_distribution_kinds_and_complex_attributes_are_left_to_the_reference(monkeypatch):
    values = [producer_like_payload(3), every_kind_payload(), producer_like_payload(4, seed=1)]
    status = np.frombuffer(kip714_native.decode_metrics(values)["status"], dtype=np.uint8)
    assert status.tolist() == [0, otlp_native.FALLBACK, 0]
    native, reference = both(records_of(values), monkeypatch)
    assert_same(native, reference)
    offsets = native.datapoints.column("offset").to_pylist()
    assert offsets == sorted(offsets)  # merged back in record order
    assert set(native.datapoints.column("metric_type").to_pylist()) == {
        "gauge",
        "sum",
        "histogram",
        "exponential_histogram",
        "summary",
    }


def test_malformed_values_get_the_reference_reasons(monkeypatch):
    valid = producer_like_payload(5)
    rng = random.Random(7)
    values: list[bytes | None] = [None, b"", rng.randbytes(200), valid[:-3], valid[: len(valid) // 2]]
    values += [valid[:cut] for cut in range(1, len(valid), 7)]  # truncated at many places
    values += [bytes([byte ^ 0xFF]) + valid[1:] for byte in valid[:1]]  # corrupted first tag
    values.append(b"\x0a\x03\xff\xfe\xfd")  # a string field that is not UTF-8
    values.append(valid)
    native, reference = both(records_of(values), monkeypatch)
    assert_same(native, reference)
    assert len(native.failures) >= 5
    assert native.points_per_record[-1] == 5


def test_random_byte_flips_never_diverge(monkeypatch):
    rng = random.Random(11)
    base = [random_payload(rng, simple_only=True) for _ in range(10)]
    values = []
    for value in base:
        for _ in range(20):
            mutated = bytearray(value)
            for _ in range(rng.randrange(1, 4)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            values.append(bytes(mutated))
    native, reference = both(records_of(values), monkeypatch)
    assert_same(native, reference)


def test_header_failures_and_broker_records(monkeypatch):
    good = producer_like_payload(4)
    records = records_of([good, good])
    records.append(TopicRecord("_client_telemetry", 3, 200, RECORD_TS_MS, None, None, good))  # no headers
    records.append(TopicRecord("_client_telemetry", 3, 201, RECORD_TS_MS, None, broker_headers(2), good))
    native, reference = both(records, monkeypatch)
    assert_same(native, reference)
    assert [index for index, _ in native.failures] == [2]
    assert native.points_per_record == [4, 4, 0, 4]


def test_float_rendering_matches_python_repr():
    rng = random.Random(3)
    specials = [0.0, -0.0, 1.0, -1.5, 1e16, 1e15, 9999999999999998.0, 1e-4, 1e-5, 0.0001234, 1e22, 1e-7]
    specials += [5e-324, 1.7976931348623157e308, float("inf"), float("-inf"), 123456.789, 0.1 + 0.2]
    doubles = specials + [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(20_000)]
    doubles += [rng.uniform(-1e20, 1e20) for _ in range(5_000)] + [rng.uniform(-1, 1) for _ in range(5_000)]
    for number in doubles:
        expected = "nan" if math.isnan(number) else repr(number)
        assert kip714_native.python_float_repr(number) == expected, number


def test_landing_form_keeps_dictionaries_with_null_labels(monkeypatch):
    """Broker records have no client labels: null codes in the dictionary columns, same values."""
    good = producer_like_payload(4)
    records = records_of([good, good])
    records += [
        TopicRecord("_client_telemetry", 3, 300 + node, RECORD_TS_MS, None, broker_headers(node), good)
        for node in (1, 2)
    ]
    native, reference = both(records, monkeypatch)
    assert_same(native, reference)
    landing = decode_batch(records, dictionary_strings=True).datapoints
    client_ids = landing.column("client_id")
    assert pa.types.is_dictionary(client_ids.type)
    assert client_ids.null_count == 8 and client_ids.to_pylist()[:4] == ["orders-1"] * 4


def _buffers_equal(left: dict[str, object], right: dict[str, object]) -> None:
    assert left.keys() == right.keys()
    for name in left:
        assert bytes(memoryview(left[name])) == bytes(memoryview(right[name])), name


@pytest.mark.parametrize("seed", range(6))
def test_an_arrow_column_decodes_as_the_same_list(seed):
    """``decode_binary`` (landing's native reader chunks) reads an Arrow column in place, slices and
    nulls included, and gives the very buffers ``decode_metrics`` gives for the same values."""
    rng = random.Random(seed)
    values: list[bytes | None] = [random_payload(rng, simple_only=False) for _ in range(30)]
    values[3] = None
    values[7] = b""
    values[11] = b"\x01\x02 not protobuf"
    column = pa.array([b"x", *values, b"y"], type=pa.binary()).slice(1, len(values))
    skip = [0, 5]
    expected = [None if index in skip else value for index, value in enumerate(values)]

    _buffers_equal(
        kip714_native.decode_binary(*_binary_buffers(column), column.offset, len(column), skip),
        kip714_native.decode_metrics(expected),
    )
    decoded = otlp_native.decode_array(column, skip=skip)
    assert decoded.status.tolist() == otlp_native.decode_values(expected).status.tolist()


def _binary_buffers(column: pa.Array) -> tuple[memoryview, memoryview, memoryview | None]:
    validity, offsets, data = (None if b is None else memoryview(b).cast("B") for b in column.buffers())
    return offsets, data, validity


def test_decode_binary_refuses_offsets_outside_the_data():
    column = pa.array([b"abc", b"de"], type=pa.binary())
    offsets, data, validity = _binary_buffers(column)
    with pytest.raises(ValueError, match="offsets"):
        kip714_native.decode_binary(offsets, memoryview(b"ab"), validity, 0, 2, [])
    with pytest.raises(ValueError, match="shorter than the column"):
        kip714_native.decode_binary(offsets, data, validity, 0, 3, [])


def test_column_buffers_are_read_only_views_that_keep_their_memory():
    """Columns come back as ``kip714_native.Buffer`` (moved from Rust, not copied): readable through the
    buffer protocol by Arrow and numpy, refused for writing, alive as long as an array uses them."""
    import ctypes
    import gc

    buffers = kip714_native.decode_metrics([producer_like_payload(3, seed=1)])
    times = buffers.pop("time")
    assert isinstance(times, kip714_native.Buffer) and len(times) == 3 * 8
    expected = bytes(memoryview(times))
    array = pa.Array.from_buffers(pa.int64(), 3, [None, pa.py_buffer(times)])
    del times, buffers
    gc.collect()
    assert np.frombuffer(array.buffers()[1], dtype=np.int64).tobytes() == expected
    status = kip714_native.decode_metrics([b""])["status"]
    assert memoryview(status).readonly
    with pytest.raises(TypeError, match="not writable"):
        (ctypes.c_char * len(status)).from_buffer(status)
