"""Record values to OTLP ``MetricsData`` messages (protobuf or OTLP/JSON), each failure with its reason."""

from __future__ import annotations

import json
from functools import lru_cache

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, unknown_fields
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData
from opentelemetry.proto.resource.v1 import resource_pb2

from airflow_provider_kip714.decoding.records import VALUE_FORMATS, ValueFormat
from airflow_provider_kip714.exceptions import TelemetryDecodeError


def not_protobuf_reason(value: bytes | None) -> str:
    return (
        f"not OTLP protobuf: the {len(value or b'')}-byte value is not valid protobuf wire format "
        "(random bytes or truncated)"
    )


def _has_unknown_fields(message: Message) -> bool:
    return len(unknown_fields.UnknownFieldSet(message)) > 0


def parse_metrics_data(
    value: bytes | None,
    value_format: ValueFormat = "otlp_proto",
    *,
    check_unknown_fields: bool = True,
    message_class: type[Message] = MetricsData,
) -> MetricsData:
    """Parse and sanity-check a record value; every way it can be wrong has its own reason.

    Protobuf parsing is lenient: bytes of another message type often parse as ``MetricsData`` with
    their fields kept as *unknown fields*. So a value is accepted only if it has a ResourceMetrics,
    no message on the path MetricsData > ResourceMetrics > ScopeMetrics carries unknown fields, and
    (checked while decoding) every metric has a name and one of the five data kinds. The unknown-field
    scan costs ~2 us per message; ``decode_batch`` runs it only for records that yield no points
    (another message type that yields points would have failed the metric rule).
    """
    if value is None or len(value) == 0:
        raise TelemetryDecodeError("empty value: the record has no OTLP payload")
    if value_format == "auto":
        value_format = "otlp_json" if value.lstrip()[:1] in (b"{", b"[") else "otlp_proto"
    if value_format == "otlp_json":
        data = _parse_json(value)
    elif value_format == "otlp_proto":
        try:
            data = message_class.FromString(value)
        except DecodeError:
            raise TelemetryDecodeError(not_protobuf_reason(value)) from None
    else:
        raise ValueError(f"value_format: must be one of {VALUE_FORMATS} (got {value_format!r})")
    if not data.resource_metrics:
        raise TelemetryDecodeError(
            "not an OTLP MetricsData: valid protobuf of another message type (no resource_metrics)"
        )
    if check_unknown_fields:
        check_structure(data)
    return data


def _parse_json(value: bytes) -> MetricsData:
    try:
        document = json.loads(value)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise TelemetryDecodeError(f"invalid JSON: {err}") from None
    if not isinstance(document, dict):
        raise TelemetryDecodeError(
            f"not OTLP/JSON MetricsData: top level is a JSON {type(document).__name__}, not an object"
        )
    data = MetricsData()
    try:
        # OTLP/JSON is the protobuf JSON mapping (camelCase, int64 as strings, enums as integers);
        # receivers must ignore unknown fields. Only exemplar ids are hex instead of base64; we drop
        # exemplars, so the standard mapping reads everything we keep.
        json_format.ParseDict(document, data, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError) as err:
        raise TelemetryDecodeError(f"not OTLP/JSON MetricsData: {err}") from None
    if not data.resource_metrics:
        raise TelemetryDecodeError("not OTLP/JSON MetricsData: no resourceMetrics in the JSON object")
    return data


def check_structure(data: MetricsData) -> None:
    """Refuse valid protobuf of another message type (unknown fields on the MetricsData path)."""
    if _has_unknown_fields(data) or not data.resource_metrics:
        raise TelemetryDecodeError(
            "not an OTLP MetricsData: valid protobuf of another message type (unknown top-level fields)"
        )
    for resource_metrics in data.resource_metrics:
        if _has_unknown_fields(resource_metrics):
            raise TelemetryDecodeError(
                "not an OTLP MetricsData: valid protobuf of another message type "
                "(unknown ResourceMetrics fields)"
            )
        for scope_metrics in resource_metrics.scope_metrics:
            if _has_unknown_fields(scope_metrics):
                raise TelemetryDecodeError(
                    "not an OTLP MetricsData: valid protobuf of another message type "
                    "(unknown ScopeMetrics fields)"
                )


@lru_cache(maxsize=1)
def raw_attribute_metrics_data() -> type[Message]:
    """``MetricsData`` whose ``NumberDataPoint.attributes`` are read as raw bytes, not KeyValue messages.

    Same field numbers and wire format (a message field and a bytes field are both length-delimited),
    built in a private descriptor pool. Reading an attribute through upb costs ~0.9 us (wrappers for
    the KeyValue and AnyValue, four lookups); its bytes are one lookup and a dict hit, since a
    client's points repeat the same few attributes. Gauges and sums are nearly all points.
    """
    pool = descriptor_pool.DescriptorPool()
    for module in (common_pb2, resource_pb2, metrics_pb2):
        file_proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(file_proto)
        for message_proto in file_proto.message_type:
            if message_proto.name != "NumberDataPoint":
                continue
            for field_proto in message_proto.field:
                if field_proto.name == "attributes":
                    field_proto.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
                    field_proto.ClearField("type_name")
        pool.Add(file_proto)
    descriptor = pool.FindMessageTypeByName(MetricsData.DESCRIPTOR.full_name)
    return message_factory.GetMessageClass(descriptor)


def count_points(value: bytes) -> int:
    """Number of data points in an OTLP protobuf value (for tests and checks)."""
    data = MetricsData.FromString(value)
    total = 0
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                if kind is not None:
                    total += len(getattr(metric, kind).data_points)
    return total


__all__ = [
    "check_structure",
    "count_points",
    "not_protobuf_reason",
    "parse_metrics_data",
    "raw_attribute_metrics_data",
]
