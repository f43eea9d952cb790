"""A value the landing schema cannot hold quarantines its own record, in both decode paths; the rest land.

Before the fix each of these made the whole batch's decode raise (the Arrow conversions ran once per
batch), so every rerun of landing stopped at the same offset.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from otlp_payloads import T0_NS, client_headers, every_kind_payload, metrics_payload, producer_like_payload

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA
from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.decoding import limits
from airflow_provider_kip714.decoding.decoder import DecodedBatch, TopicRecord, decode_batch
from airflow_provider_kip714.native_switches import DECODER_ENV

RECORD_TS_MS = 1_763_800_000_000
GOOD = producer_like_payload(3)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def gauge(**point: int) -> bytes:
    point.setdefault("time_unix_nano", T0_NS)
    number = m.NumberDataPoint(as_int=point.pop("as_int", 1), **point)
    return metrics_payload(m.Metric(name="g", gauge=m.Gauge(data_points=[number])))


def histogram(count: int = 2, buckets: tuple[int, ...] = (1, 1)) -> bytes:
    point = m.HistogramDataPoint(
        time_unix_nano=T0_NS, count=count, sum=3.0, bucket_counts=list(buckets), explicit_bounds=[1.0]
    )
    return metrics_payload(m.Metric(name="h", histogram=m.Histogram(data_points=[point])))


def exponential(
    zero_count: int = 0, positive: int = 1, negative: int = 1, scale: int = 0, offset: int = 0
) -> bytes:
    point = m.ExponentialHistogramDataPoint(
        time_unix_nano=T0_NS,
        count=2,
        sum=1.0,
        scale=scale,
        zero_count=zero_count,
        positive=m.ExponentialHistogramDataPoint.Buckets(offset=offset, bucket_counts=[positive]),
        negative=m.ExponentialHistogramDataPoint.Buckets(offset=offset, bucket_counts=[negative]),
    )
    metric = m.Metric(name="eh", exponential_histogram=m.ExponentialHistogram(data_points=[point]))
    return metrics_payload(metric)


def record(value: bytes = GOOD, headers=None, *, partition: int = 0, offset: int = 1, ts: int = RECORD_TS_MS):
    headers = client_headers() if headers is None else headers
    return TopicRecord("_client_telemetry", partition, offset, ts, None, headers, value)


def header(name: str) -> Callable[[int], TopicRecord]:
    return lambda number: record(headers=client_headers(**{name: str(number)}))


# How to put a number into each integer or timestamp column, and the range the wire format allows
# (a column whose wire type is narrower than the column can never overflow: only its edges are tried).
INJECT: dict[str, tuple[Callable[[int], TopicRecord], tuple[int, int]]] = {
    "partition": (lambda n: record(partition=n), INT64),
    "offset": (lambda n: record(offset=n), (-(2**64), 2**64)),
    "record_timestamp": (lambda n: record(ts=n), (-(2**63), 2**62)),
    "client_source_port": (header(Header.CLIENT_SOURCE_PORT), (-(2**70), 2**70)),
    "node_id": (header(Header.NODE_ID), (-(2**70), 2**70)),
    "subscription_id": (header(Header.SUBSCRIPTION_ID), (-(2**70), 2**70)),
    "push_interval_ms": (header(Header.PUSH_INTERVAL_MS), (-(2**70), 2**70)),
    "start_time": (lambda n: record(gauge(start_time_unix_nano=n)), (0, 2**64 - 1)),
    "time": (lambda n: record(gauge(time_unix_nano=n)), (0, 2**64 - 1)),
    "value_int": (lambda n: record(gauge(as_int=n)), INT64),
    "flags": (lambda n: record(gauge(flags=n)), (0, 2**32 - 1)),
    "count": (lambda n: record(histogram(count=n)), (0, 2**64 - 1)),
    "bucket_counts": (lambda n: record(histogram(buckets=(1, n))), (0, 2**64 - 1)),
    "exp_scale": (lambda n: record(exponential(scale=n)), INT32),
    "exp_zero_count": (lambda n: record(exponential(zero_count=n)), (0, 2**64 - 1)),
    "exp_positive_offset": (lambda n: record(exponential(offset=n)), INT32),
    "exp_negative_offset": (lambda n: record(exponential(offset=n)), INT32),
    "exp_positive_bucket_counts": (lambda n: record(exponential(positive=n)), (0, 2**64 - 1)),
    "exp_negative_bucket_counts": (lambda n: record(exponential(negative=n)), (0, 2**64 - 1)),
    "hour": (lambda n: record(ts=n * 3_600_000), (0, 23)),  # derived from the record timestamp
}


def decode_both(records: list[TopicRecord], monkeypatch: pytest.MonkeyPatch) -> DecodedBatch:
    """Decode natively and with the Python decoder; both must give the same result (returned)."""
    monkeypatch.delenv(DECODER_ENV, raising=False)
    native = decode_batch(records)
    monkeypatch.setenv(DECODER_ENV, "python")
    reference = decode_batch(records)
    monkeypatch.delenv(DECODER_ENV)
    assert native.failures == reference.failures
    assert native.points_per_record == reference.points_per_record
    assert native.datapoints.to_pylist() == reference.datapoints.to_pylist()
    return reference


def assert_only_quarantined(batch: DecodedBatch, column: str) -> None:
    """Record 1 (the odd one) is quarantined with a reason naming the column; records 0 and 2 land."""
    assert [index for index, _ in batch.failures] == [1], batch.failures
    reason = batch.failures[0][1]
    assert limits.REASON_PREFIX in reason and f"{column} = " in reason, reason
    assert batch.points_per_record == [3, 0, 3]
    assert set(batch.datapoints.column("offset").to_pylist()) == {0, 2}


def between(odd: TopicRecord) -> list[TopicRecord]:
    return [record(offset=0), odd, record(offset=2)]


@pytest.mark.parametrize(
    ("column", "odd"),
    [
        ("flags", record(gauge(flags=2**31))),
        ("count", record(histogram(count=2**63))),
        ("record_timestamp", record(ts=2**62)),
        ("node_id", record(headers=client_headers(**{Header.NODE_ID: "99999999999"}))),
        ("time", record(gauge(time_unix_nano=2**63 + 5))),
    ],
    ids=["flags-2**31", "histogram-count-2**63", "timestamp-2**62-ms", "node-id-99999999999", "time-2**63"],
)
def test_the_reported_examples_quarantine_one_record(column, odd, monkeypatch) -> None:
    assert_only_quarantined(decode_both(between(odd), monkeypatch), column)


def test_every_integer_and_timestamp_column_is_covered() -> None:
    numeric = {
        field.name
        for field in DATAPOINT_SCHEMA
        if pa.types.is_integer(field.type)
        or pa.types.is_timestamp(field.type)
        or (pa.types.is_list(field.type) and pa.types.is_integer(field.type.value_type))
    }
    assert numeric == set(INJECT)


def _boundaries(column: str) -> list[int]:
    if column == "hour":
        return [0, 23]
    low, high = limits.column_range(column)
    wire_low, wire_high = INJECT[column][1]
    candidates = {low - 1, low, low + 1, -1, 0, 1, high - 1, high, high + 1, wire_low, wire_high}
    return sorted(n for n in candidates if wire_low <= n <= wire_high)


@pytest.mark.parametrize("column", sorted(INJECT))
def test_boundary_values_of_every_column_land_or_quarantine(column, monkeypatch) -> None:
    """Every value the wire can carry either lands unchanged or quarantines only its record."""
    inject = INJECT[column][0]
    values = _boundaries(column)
    for number in values:
        odd = inject(number)
        batch = decode_both(between(odd), monkeypatch)
        fits = column == "hour" or limits.misfit(column, number) is None
        if column in ("start_time", "time") and number == 0:
            fits = True  # OTLP's "unset": lands as null
        if not fits:
            assert_only_quarantined(batch, column)
            continue
        assert batch.failures == [], (column, number, batch.failures)
        landed = batch.datapoints.filter(pa.compute.equal(batch.datapoints["offset"], odd.offset))
        assert landed.num_rows >= 1, (column, number)
        if column in (
            "partition",
            "offset",
            "node_id",
            "subscription_id",
            "push_interval_ms",
            "value_int",
            "flags",
        ):
            assert landed.column(column).to_pylist()[0] == number
        if column == "hour":
            assert landed.column("hour").to_pylist()[0] == number


def test_empty_units_are_null_for_every_metric_kind(monkeypatch) -> None:
    data = m.MetricsData.FromString(every_kind_payload())
    for metric in data.resource_metrics[0].scope_metrics[0].metrics:
        metric.unit = ""
    batch = decode_both([record(data.SerializeToString(), offset=0)], monkeypatch)
    units = dict(
        zip(
            batch.datapoints["metric_type"].to_pylist(),
            batch.datapoints["metric_unit"].to_pylist(),
            strict=True,
        )
    )
    assert set(units) == {"gauge", "sum", "histogram", "exponential_histogram", "summary"}
    assert set(units.values()) == {None}


@pytest.mark.parametrize(
    "name", [Header.CLIENT_ID, Header.CLIENT_SOFTWARE_NAME, Header.PRINCIPAL, Header.TYPE]
)
def test_a_contract_header_that_is_not_utf8_quarantines_its_record(name: str, monkeypatch) -> None:
    """Before: a non-UTF-8 client id landed as U+FFFD replacement characters (a label nobody sent),
    while a non-UTF-8 instance id was quarantined; both readers now quarantine either, naming the header."""
    headers = [(key, b"\xff\xfe orders" if key == name else value) for key, value in client_headers()]
    batch = decode_both(between(record(headers=headers)), monkeypatch)
    assert [index for index, _ in batch.failures] == [1], batch.failures
    assert batch.failures[0][1] == f"header {name}: must be UTF-8 text (got b'\\xff\\xfe orders')"
    assert batch.points_per_record == [3, 0, 3]


def test_headers_outside_the_contract_stay_lenient(monkeypatch) -> None:
    headers = [*client_headers(), ("kip714.future_label", b"\xff"), ("trace-id", b"\xfe")]
    batch = decode_both([record(headers=headers)], monkeypatch)
    assert batch.failures == [] and batch.points_per_record == [3]
