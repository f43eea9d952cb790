"""The native datapoints writer on generated gauge and sum payloads: the same rows as pyarrow's file.

``test_native_datapoints_writer.py`` covers chosen shapes; here hypothesis draws them: any number of
resources, scopes, metrics and points, empty and non-ASCII texts, attributes of every scalar type
(and without a value), ints at the int64 edges, doubles at the float edges (infinities, -0.0, NaN),
times unset or at their edges, flags anywhere in their range, records across hours. Every chunk the
native decoder takes whole must be written by the native writer and read back as the table the
reference path writes; rows are compared in their text form (NaN is not equal to itself).
"""

from __future__ import annotations

import io
import math

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from otlp_payloads import broker_headers, client_headers

from airflow_provider_kip714.decoding.decoder import decode_batch
from airflow_provider_kip714.decoding.native_writer import write_natively, write_raw_natively
from airflow_provider_kip714.telemetry.landing_chunk import PartitionBatch
from airflow_provider_kip714.telemetry.landing_stage import raw_table, record_columns
from airflow_provider_kip714.telemetry.landing_zone import _split_by_hour, parquet_options

PROPERTIES = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
HOUR_MS = 3_600_000
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
NAME = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)
INT64 = st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, -1, 2**63 - 1, -(2**63)]))
DOUBLE = st.one_of(st.floats(allow_nan=True), st.sampled_from([0.0, -0.0, math.inf, -math.inf, 5e-324]))
NANOS = st.one_of(st.just(0), st.integers(1, 2**63 - 1), st.sampled_from([1, 1_763_800_000_000_000_000]))


@st.composite
def attribute(draw: st.DrawFn) -> KeyValue:
    kind = draw(st.sampled_from(["string", "int", "double", "bool", "none"]))
    value = {
        "string": lambda: AnyValue(string_value=draw(TEXT)),
        "int": lambda: AnyValue(int_value=draw(INT64)),
        "double": lambda: AnyValue(double_value=draw(DOUBLE)),
        "bool": lambda: AnyValue(bool_value=draw(st.booleans())),
        "none": lambda: None,
    }[kind]()
    return KeyValue(key=draw(TEXT), value=value) if value is not None else KeyValue(key=draw(TEXT))


ATTRIBUTES = st.lists(attribute(), max_size=3)


@st.composite
def point(draw: st.DrawFn) -> m.NumberDataPoint:
    number = m.NumberDataPoint(
        start_time_unix_nano=draw(NANOS),
        time_unix_nano=draw(NANOS),
        attributes=draw(ATTRIBUTES),
        flags=draw(st.integers(0, 2**31 - 1)),
    )
    if draw(st.booleans()):
        number.as_int = draw(INT64)
    else:
        number.as_double = draw(DOUBLE)
    return number


@st.composite
def metric(draw: st.DrawFn) -> m.Metric:
    points = draw(st.lists(point(), min_size=1, max_size=4))
    made = m.Metric(name=draw(NAME), unit=draw(TEXT))  # no name: the reference's case
    if draw(st.booleans()):
        made.gauge.data_points.extend(points)
    else:
        made.sum.data_points.extend(points)
        made.sum.aggregation_temporality = draw(st.integers(0, 2))
        made.sum.is_monotonic = draw(st.booleans())
    return made


@st.composite
def payload(draw: st.DrawFn) -> bytes:
    resources = []
    for _ in range(draw(st.integers(1, 2))):
        scopes = [
            m.ScopeMetrics(
                scope=InstrumentationScope(name=draw(TEXT), version=draw(TEXT), attributes=draw(ATTRIBUTES)),
                metrics=draw(st.lists(metric(), min_size=1, max_size=3)),
            )
            for _ in range(draw(st.integers(1, 2)))
        ]
        resources.append(
            m.ResourceMetrics(resource=Resource(attributes=draw(ATTRIBUTES)), scope_metrics=scopes)
        )
    return m.MetricsData(resource_metrics=resources).SerializeToString()


def rows(table: pa.Table) -> list[str]:
    return [repr(sorted(row.items())) for row in table.to_pylist()]


@PROPERTIES
@given(
    values=st.lists(payload(), min_size=1, max_size=8),
    hours=st.lists(st.integers(0, 2), min_size=8, max_size=8),
)
def test_generated_chunks_read_back_as_the_reference_writes_them(
    values: list[bytes], hours: list[int]
) -> None:
    batch = PartitionBatch("_client_telemetry", 0)
    for index, value in enumerate(values):
        headers = broker_headers(1) if index % 3 == 2 else client_headers()
        batch.append(index, 1_763_800_000_000 + hours[index] * HOUR_MS + index, None, headers, value)
    written = write_natively(record_columns(batch))
    reference = decode_batch(record_columns(batch), "otlp_proto", dictionary_strings=True)
    assert written is not None  # every drawn record is a gauge or sum the native decoder takes
    assert written.points == reference.datapoints.num_rows and written.failures == reference.failures
    parts = _split_by_hour(reference.datapoints) if reference.datapoints.num_rows else []
    assert [(file.date, file.hour) for file in written.files] == [key for key, _ in parts]
    for file, (_, part) in zip(written.files, parts, strict=True):
        expected = io.BytesIO()
        pq.write_table(part, expected, **parquet_options(part.schema))
        ours, theirs = pq.read_table(io.BytesIO(file.data)), pq.read_table(io.BytesIO(expected.getvalue()))
        assert ours.schema.equals(theirs.schema)
        assert rows(ours) == rows(theirs)


HEADER_SET = st.one_of(
    st.none(), st.lists(st.tuples(TEXT, st.one_of(st.none(), st.binary(max_size=8))), max_size=4)
)


@PROPERTIES
@given(
    records=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.one_of(st.none(), st.binary(max_size=6)),
            st.one_of(st.none(), st.binary(max_size=20)),
        ),
        min_size=1,
        max_size=30,
    ),
    header_sets=st.lists(HEADER_SET, min_size=4, max_size=4),
    offset=st.integers(0, 2**63 - 100),
)
def test_generated_raw_files_read_back_as_pyarrow_writes_them(records, header_sets, offset) -> None:  # type: ignore[no-untyped-def]
    """Headers of any text and bytes (undecodable ones replaced, as the raw table keeps them)."""
    batch = PartitionBatch("_client_telemetry", 2**31 - 1)
    for index, (header_set, key, value) in enumerate(records):
        batch.append(offset + index, -(2**40) + index, key, header_sets[header_set], value)
    written = write_raw_natively(record_columns(batch))
    assert written is not None and written.records == len(records)
    table = raw_table(record_columns(batch))
    expected = io.BytesIO()
    pq.write_table(table, expected, **parquet_options(table.schema))
    ours, theirs = pq.read_table(io.BytesIO(written.data)), pq.read_table(io.BytesIO(expected.getvalue()))
    assert ours.schema.equals(theirs.schema)
    assert ours.to_pylist() == theirs.to_pylist()
