"""Decoding OTLP MetricsData + kip714 headers into datapoint rows (no servers)."""

from __future__ import annotations

import json
import math

import pytest
from google.protobuf import json_format, timestamp_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from otlp_payloads import (
    INSTANCE_ID,
    T0_NS,
    broker_headers,
    client_headers,
    every_kind_payload,
    int_attr,
    metrics_payload,
    producer_like_payload,
    string_attr,
)

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA
from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.decoding.decoder import (
    TopicRecord,
    count_points,
    decode_batch,
    decode_record,
    parse_metrics_data,
)
from airflow_provider_kip714.exceptions import TelemetryDecodeError

RECORD_TS_MS = 1_763_800_000_000  # 2025-11-22T08:26:40Z


def rows_by_metric(value: bytes, **kwargs) -> dict[str, dict]:
    rows = decode_record(value, client_headers(), timestamp_ms=RECORD_TS_MS, **kwargs)
    return {row["metric_name"]: row for row in rows}


def test_every_point_kind_decodes_with_its_fields() -> None:
    rows = rows_by_metric(every_kind_payload())
    assert set(rows) == {"g", "s.cumulative", "h", "eh", "su"}
    assert rows["g"]["metric_type"] == "gauge" and rows["g"]["value"] == 1.25
    assert rows["g"]["value_int"] is None and rows["g"]["temporality"] is None
    assert rows["g"]["metric_unit"] == "ms"
    total = rows["s.cumulative"]
    assert (total["temporality"], total["is_monotonic"], total["value_int"]) == ("cumulative", False, 0)
    histogram = rows["h"]
    assert histogram["count"] == 6 and histogram["sum"] == 30.0 and histogram["value"] == 5.0
    assert histogram["bucket_counts"] == [1, 2, 3] and histogram["explicit_bounds"] == [5.0, 10.0]
    assert (histogram["min"], histogram["max"], histogram["temporality"]) == (1.0, 12.0, "delta")
    exponential = rows["eh"]
    assert exponential["exp_scale"] == 2 and exponential["exp_zero_count"] == 1
    assert exponential["exp_positive_offset"] == -1 and exponential["exp_positive_bucket_counts"] == [1, 2]
    assert exponential["exp_negative_bucket_counts"] == [0] and exponential["temporality"] == "cumulative"
    summary = rows["su"]
    assert summary["quantiles"] == [{"quantile": 0.5, "value": 1.0}, {"quantile": 0.99, "value": 2.0}]
    assert summary["count"] == 2 and summary["sum"] == 3.0 and summary["temporality"] is None


def test_attribute_values_of_every_type_render_as_text() -> None:
    row = rows_by_metric(every_kind_payload())["g"]
    assert dict(row["attributes"]) == {
        "s": "text",
        "i": "-3",
        "d": "2.5",
        "b": "true",
        "a": '[1,"x"]',
        "kv": '{"k":false}',
    }
    assert json.loads(dict(row["attributes"])["kv"]) == {"k": False}


def test_resource_scope_and_header_labels_are_columns() -> None:
    row = rows_by_metric(every_kind_payload())["h"]
    assert dict(row["resource_attributes"]) == {"group_id": "g1", "port": "9092"}
    assert (row["scope_name"], row["scope_version"]) == ("librdkafka", "2.16.0")
    assert dict(row["scope_attributes"]) == {"x": "1"}
    assert row["record_type"] == "client"
    assert row["client_instance_id"] == INSTANCE_ID
    assert row["client_instance_id_hex"] == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert row["client_id"] == "orders-1"
    assert row["client_software_name"] == "confluent-kafka-python"
    assert row["client_source_port"] == 50123 and row["node_id"] == 1
    assert row["subscription_id"] == -12345 and row["push_interval_ms"] == 1000
    assert row["terminating"] is False
    assert (row["date"], row["hour"]) == ("2025-11-22", 8)


def test_times_are_nanoseconds_and_unset_start_is_null() -> None:
    rows = rows_by_metric(every_kind_payload())
    assert rows["g"]["start_time"] is None
    assert rows["g"]["time"].value == T0_NS
    assert rows["s.cumulative"]["start_time"].value == T0_NS - 5


def test_delta_and_cumulative_sums() -> None:
    def sum_metric(temporality: int, value: int) -> m.Metric:
        return m.Metric(
            name=f"total.{temporality}",
            sum=m.Sum(
                aggregation_temporality=temporality,
                is_monotonic=True,
                data_points=[m.NumberDataPoint(time_unix_nano=T0_NS, as_int=value)],
            ),
        )

    data = metrics_payload(
        sum_metric(m.AGGREGATION_TEMPORALITY_DELTA, 3),
        sum_metric(m.AGGREGATION_TEMPORALITY_CUMULATIVE, 2**62),
    )
    rows = rows_by_metric(data)
    assert rows["total.1"]["temporality"] == "delta" and rows["total.1"]["value_int"] == 3
    assert rows["total.2"]["temporality"] == "cumulative" and rows["total.2"]["value_int"] == 2**62
    assert all(row["is_monotonic"] for row in rows.values())


def test_broker_records_decode_with_the_same_code() -> None:
    throttles = m.Metric(
        name="kafka.server.client_metrics.throttle.count",
        sum=m.Sum(
            aggregation_temporality=m.AGGREGATION_TEMPORALITY_CUMULATIVE,
            is_monotonic=True,
            data_points=[
                m.NumberDataPoint(
                    time_unix_nano=T0_NS,
                    as_int=4,
                    attributes=[string_attr("client_instance_id", INSTANCE_ID)],
                )
            ],
        ),
    )
    data = metrics_payload(
        throttles, resource=Resource(attributes=[string_attr("node_id", "1"), string_attr("cluster_id", "c")])
    )
    rows = decode_record(data, broker_headers(3), timestamp_ms=RECORD_TS_MS)
    assert len(rows) == 1
    row = rows[0]
    assert row["record_type"] == "broker" and row["node_id"] == 3 and row["client_instance_id"] is None
    assert dict(row["attributes"]) == {"client_instance_id": INSTANCE_ID}
    assert row["value_int"] == 4


def test_otlp_json_values_decode_like_protobuf() -> None:
    proto_value = every_kind_payload()
    json_value = json_format.MessageToJson(
        m.MetricsData.FromString(proto_value), use_integers_for_enums=True
    ).encode()
    assert b'"timeUnixNano": "' in json_value  # camelCase keys, int64 as strings
    from_proto = rows_by_metric(proto_value)
    from_json = rows_by_metric(json_value, value_format="otlp_json")
    assert from_json == from_proto
    assert rows_by_metric(json_value, value_format="auto") == from_proto


def test_handwritten_otlp_json_from_the_spec_shape() -> None:
    document = {
        "resourceMetrics": [
            {
                "resource": {"attributes": [{"key": "group_id", "value": {"stringValue": "g"}}]},
                "scopeMetrics": [
                    {
                        "metrics": [
                            {
                                "name": "org.apache.kafka.consumer.fetch.latency.max",
                                "sum": {
                                    "aggregationTemporality": 1,
                                    "isMonotonic": True,
                                    "dataPoints": [
                                        {
                                            "timeUnixNano": str(T0_NS),
                                            "asInt": "9007199254740993",
                                            "attributes": [{"key": "n", "value": {"intValue": "7"}}],
                                        }
                                    ],
                                },
                            }
                        ]
                    }
                ],
            }
        ]
    }
    rows = decode_record(json.dumps(document).encode(), client_headers(), value_format="otlp_json")
    assert rows[0]["value_int"] == 9007199254740993 and rows[0]["temporality"] == "delta"
    assert dict(rows[0]["attributes"]) == {"n": "7"}


@pytest.mark.parametrize(
    ("value", "value_format", "reason_start"),
    [
        (bytes(range(256)) * 3, "otlp_proto", "not OTLP protobuf"),
        (every_kind_payload()[:-7], "otlp_proto", "not OTLP protobuf"),
        (
            timestamp_pb2.Timestamp(seconds=5, nanos=1).SerializeToString(),
            "otlp_proto",
            "not an OTLP MetricsData",
        ),
        (b"{not json", "otlp_json", "invalid JSON"),
        (b"[1, 2]", "otlp_json", "not OTLP/JSON MetricsData"),
        (b"", "otlp_proto", "empty value"),
        (None, "otlp_proto", "empty value"),
    ],
    ids=["random-bytes", "truncated", "other-message", "invalid-json", "json-array", "empty", "null"],
)
def test_malformed_values_fail_with_a_specific_reason(value, value_format, reason_start) -> None:
    with pytest.raises(TelemetryDecodeError) as caught:
        parse_metrics_data(value, value_format)
    assert caught.value.reason.startswith(reason_start), caught.value.reason


def test_logs_data_is_recognised_as_another_message_type() -> None:
    logs = logs_pb2.LogsData(
        resource_logs=[
            logs_pb2.ResourceLogs(
                scope_logs=[
                    logs_pb2.ScopeLogs(
                        log_records=[logs_pb2.LogRecord(time_unix_nano=T0_NS, severity_number=9)]
                    )
                ]
            )
        ]
    )
    with pytest.raises(TelemetryDecodeError, match="another message type"):
        decode_record(logs.SerializeToString(), client_headers())


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        (None, "missing headers"),
        ([(str(Header.CLIENT_ID), b"x")], f"missing header {Header.TYPE}"),
        ([(str(Header.TYPE), b"client")], f"missing header {Header.CLIENT_INSTANCE_ID}"),
        ([(str(Header.TYPE), b"broker")], f"missing header {Header.NODE_ID}"),
        ([(str(Header.TYPE), b"robot")], f"header {Header.TYPE}: must be"),
        (client_headers(**{Header.CLIENT_SOURCE_PORT: "http"}), f"header {Header.CLIENT_SOURCE_PORT}"),
        (client_headers(**{Header.TERMINATING: "yes"}), f"header {Header.TERMINATING}"),
    ],
)
def test_bad_headers_name_the_header_and_rule(headers, reason) -> None:
    with pytest.raises(TelemetryDecodeError) as caught:
        decode_record(producer_like_payload(), headers)
    assert caught.value.reason.startswith(reason), caught.value.reason


def test_batch_keeps_good_records_and_lists_failures() -> None:
    good = producer_like_payload(10, seed=1)
    records = [
        TopicRecord("t", 0, 0, RECORD_TS_MS, None, client_headers(), good),
        TopicRecord("t", 0, 1, RECORD_TS_MS, None, client_headers(), b"\xff\x00garbage"),
        TopicRecord("t", 0, 2, RECORD_TS_MS, None, None, good),
        TopicRecord("t", 1, 3, RECORD_TS_MS + 3_600_000, None, client_headers(), every_kind_payload()),
    ]
    batch = decode_batch(records)
    assert batch.datapoints.schema == DATAPOINT_SCHEMA
    assert [index for index, _ in batch.failures] == [1, 2]
    assert batch.points_per_record == [10, 0, 0, 5]
    assert batch.datapoints.num_rows == count_points(good) + count_points(every_kind_payload())
    table = batch.datapoints.to_pydict()
    assert sorted(set(table["offset"])) == [0, 3]
    assert table["hour"].count(9) == 5
    gauge_values = [v for v, name in zip(table["value"], table["metric_name"], strict=True) if ".avg" in name]
    assert gauge_values == [float(i + 1) + 0.5 for i in range(9)]


def test_a_record_failing_half_way_leaves_no_partial_rows() -> None:
    bad_metric = m.Metric(name="no.data")  # no data kind: invalid
    good_metric = m.Metric(
        name="ok",
        gauge=m.Gauge(data_points=[m.NumberDataPoint(as_double=1.0, attributes=[int_attr("a", 1)])]),
    )
    half_bad = metrics_payload(good_metric, bad_metric)
    records = [
        TopicRecord("t", 0, 0, RECORD_TS_MS, None, client_headers(), half_bad),
        TopicRecord("t", 0, 1, RECORD_TS_MS, None, client_headers(), producer_like_payload(3)),
    ]
    batch = decode_batch(records)
    assert batch.failures == [(0, batch.failures[0][1])] and "no name or no data" in batch.failures[0][1]
    assert batch.datapoints.num_rows == 3 and set(batch.datapoints["offset"].to_pylist()) == {1}
    assert [len(a) for a in batch.datapoints["attributes"].to_pylist()] == [1, 1, 0]


def test_special_doubles_survive() -> None:
    nan = m.Metric(name="nan", gauge=m.Gauge(data_points=[m.NumberDataPoint(as_double=math.nan)]))
    assert math.isnan(decode_record(metrics_payload(nan), client_headers())[0]["value"])


def test_unknown_value_format_is_refused() -> None:
    with pytest.raises(ValueError, match="value_format"):
        decode_batch([], "avro")  # type: ignore[arg-type]


def test_unknown_fields_reject_only_records_without_points() -> None:
    only_unknown = b"\x0a\x02\x48\x01"  # one ResourceMetrics holding only an unknown varint field 9
    batch = decode_batch([TopicRecord("t", 0, 0, RECORD_TS_MS, None, client_headers(), only_unknown)])
    assert batch.failures and "unknown ResourceMetrics fields" in batch.failures[0][1]
    empty_resource = b"\x0a\x00"  # a ResourceMetrics with nothing in it: valid, no points
    assert decode_record(empty_resource, client_headers()) == []
    # a newer OTLP version may add fields: a payload with points and an unknown field still decodes
    newer = producer_like_payload(2) + b"\xa0\x06\x01"  # + unknown top-level field 100 (varint)
    assert len(decode_record(newer, client_headers())) == 2
