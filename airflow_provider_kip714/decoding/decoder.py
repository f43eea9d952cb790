"""Decode telemetry-topic records (OTLP ``MetricsData`` + ``kip714.*`` headers) into datapoint rows.

Output is columnar (an Arrow table in ``DATAPOINT_SCHEMA``) because landing decodes millions of points:
per-record and per-metric columns are gathered once and fanned out to points with index arrays, and
only the per-point columns are appended point by point. Records that cannot be decoded are reported
with a specific reason (``TelemetryDecodeError.reason``), never dropped silently.
"""

from __future__ import annotations

import base64
import gc
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final, Literal, NamedTuple

import numpy as np
import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, unknown_fields
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData
from opentelemetry.proto.resource.v1 import resource_pb2

from airflow_provider_kip714.contract.instance_id import to_hex_form
from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA, STRING_MAP
from airflow_provider_kip714.contract.topic import Header, RecordType
from airflow_provider_kip714.decoding import native as otlp_native
from airflow_provider_kip714.exceptions import TelemetryDecodeError

ValueFormat = Literal["otlp_proto", "otlp_json", "auto"]
VALUE_FORMATS: Final = ("otlp_proto", "otlp_json", "auto")

_TEMPORALITY: Final = {0: None, 1: "delta", 2: "cumulative"}
_MS_PER_HOUR: Final = 3_600_000


class TopicRecord(NamedTuple):
    """One telemetry-topic record as plain, picklable data (what decoding and landing need)."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    headers: Sequence[tuple[str, bytes | None]] | None
    value: bytes | None


@dataclass
class DecodedBatch:
    """Datapoints of the records that decoded, and ``(record index, reason)`` for those that did not."""

    datapoints: pa.Table
    failures: list[tuple[int, str]] = field(default_factory=list)
    points_per_record: list[int] = field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# headers


@dataclass(frozen=True)
class RecordLabels:
    """The broker-added labels of one record, parsed from its ``kip714.*`` headers."""

    record_type: str
    client_instance_id: str | None
    client_instance_id_hex: str | None
    client_id: str | None
    client_software_name: str | None
    client_software_version: str | None
    client_source_address: str | None
    client_source_port: int | None
    principal: str | None
    listener: str | None
    node_id: int | None
    cluster_id: str | None
    subscription_id: int | None
    push_interval_ms: int | None
    terminating: bool | None


def headers_to_dict(headers: Iterable[tuple[str, bytes | None]] | None) -> dict[str, str | None]:
    """Headers as text; a repeated header keeps its last value (as Kafka clients read them)."""
    if not headers:
        return {}
    return {name: (None if raw is None else raw.decode("utf-8", errors="replace")) for name, raw in headers}


def _int_header(headers: dict[str, str | None], name: str) -> int | None:
    text = headers.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise TelemetryDecodeError(f"header {name}: must be an integer (got {text!r})") from None


def _bool_header(headers: dict[str, str | None], name: str) -> bool | None:
    text = headers.get(name)
    if text is None or text == "":
        return None
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise TelemetryDecodeError(f"header {name}: must be 'true' or 'false' (got {text!r})")
    return lowered == "true"


@lru_cache(maxsize=4096)
def _hex_instance_id(instance_id: str) -> str:
    return to_hex_form(instance_id)


def parse_labels(headers: dict[str, str | None]) -> RecordLabels:
    """Validate and type the ``kip714.*`` headers; the type header and the record's identity are required."""
    if not headers:
        raise TelemetryDecodeError("missing headers: the record has no kip714.* headers")
    record_type = headers.get(Header.TYPE)
    if record_type is None:
        raise TelemetryDecodeError(f"missing header {Header.TYPE}")
    if record_type not in (RecordType.CLIENT, RecordType.BROKER):
        raise TelemetryDecodeError(
            f"header {Header.TYPE}: must be 'client' or 'broker' (got {record_type!r})"
        )
    instance_id = headers.get(Header.CLIENT_INSTANCE_ID) or None
    node_id = _int_header(headers, Header.NODE_ID)
    if record_type == RecordType.CLIENT and instance_id is None:
        raise TelemetryDecodeError(f"missing header {Header.CLIENT_INSTANCE_ID} on a client record")
    if record_type == RecordType.BROKER and node_id is None:
        raise TelemetryDecodeError(f"missing header {Header.NODE_ID} on a broker record")
    instance_hex = None
    if instance_id is not None:
        try:
            instance_hex = _hex_instance_id(instance_id)
        except ValueError:
            raise TelemetryDecodeError(
                f"header {Header.CLIENT_INSTANCE_ID}: not a Kafka Uuid or UUID (got {instance_id!r})"
            ) from None
    return RecordLabels(
        record_type=record_type,
        client_instance_id=instance_id,
        client_instance_id_hex=instance_hex,
        client_id=headers.get(Header.CLIENT_ID),
        client_software_name=headers.get(Header.CLIENT_SOFTWARE_NAME),
        client_software_version=headers.get(Header.CLIENT_SOFTWARE_VERSION),
        client_source_address=headers.get(Header.CLIENT_SOURCE_ADDRESS),
        client_source_port=_int_header(headers, Header.CLIENT_SOURCE_PORT),
        principal=headers.get(Header.PRINCIPAL),
        listener=headers.get(Header.LISTENER),
        node_id=node_id,
        cluster_id=headers.get(Header.CLUSTER_ID),
        subscription_id=_int_header(headers, Header.SUBSCRIPTION_ID),
        push_interval_ms=_int_header(headers, Header.PUSH_INTERVAL_MS),
        terminating=_bool_header(headers, Header.TERMINATING),
    )


def _labels_of(headers: Sequence[tuple[str, bytes | None]] | None) -> RecordLabels:
    """``parse_labels`` memoised on the raw headers: one client's pushes repeat the same labels."""
    if not headers:
        return parse_labels({})
    try:
        return _cached_labels(tuple(headers))
    except TypeError:  # unhashable header container: parse without the cache
        return parse_labels(headers_to_dict(headers))


@lru_cache(maxsize=8192)
def _cached_labels(headers: tuple[tuple[str, bytes | None], ...]) -> RecordLabels:
    return parse_labels(headers_to_dict(headers))


# --------------------------------------------------------------------------------------------------
# values


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
            raise TelemetryDecodeError(
                f"not OTLP protobuf: the {len(value)}-byte value is not valid protobuf wire format "
                "(random bytes or truncated)"
            ) from None
    else:
        raise ValueError(f"value_format: must be one of {VALUE_FORMATS} (got {value_format!r})")
    if not data.resource_metrics:
        raise TelemetryDecodeError(
            "not an OTLP MetricsData: valid protobuf of another message type (no resource_metrics)"
        )
    if check_unknown_fields:
        _check_structure(data)
    return data


def _parse_json(value: bytes) -> MetricsData:
    try:
        document = json.loads(value)
    except (UnicodeDecodeError, ValueError) as err:
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
    except json_format.ParseError as err:
        raise TelemetryDecodeError(f"not OTLP/JSON MetricsData: {err}") from None
    if not data.resource_metrics:
        raise TelemetryDecodeError("not OTLP/JSON MetricsData: no resourceMetrics in the JSON object")
    return data


def _check_structure(data: MetricsData) -> None:
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


def _any_to_python(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_to_python(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_to_python(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, kind)


def render_any_value(value: AnyValue, kind: str | None = None) -> str | None:
    """Text of an attribute value: strings as-is, everything else as JSON text (bytes as base64)."""
    if kind is None:
        kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return str(value.int_value)
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    if kind == "double_value":
        number = value.double_value
        return json.dumps(number) if math.isfinite(number) else str(number)
    if kind is None:
        return None
    return json.dumps(_any_to_python(value), separators=(",", ":"), allow_nan=True)


def _render_attributes(attributes: Iterable[Any]) -> list[tuple[str, str | None]]:
    return [(kv.key, render_any_value(kv.value)) for kv in attributes]


# --------------------------------------------------------------------------------------------------
# columnar builder


_LABEL_COLUMNS: Final = (
    "record_type",
    "client_instance_id",
    "client_instance_id_hex",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
    "principal",
    "listener",
    "node_id",
    "cluster_id",
    "subscription_id",
    "push_interval_ms",
    "terminating",
)
_SCOPE_COLUMNS: Final = ("resource_attributes", "scope_name", "scope_version", "scope_attributes")
_METRIC_COLUMNS: Final = (
    "metric_name",
    "metric_unit",
    "metric_type",
    "temporality",
    "is_monotonic",
)
_EXTRA_COLUMNS: Final = (
    "count",
    "sum",
    "min",
    "max",
    "bucket_counts",
    "explicit_bounds",
    "exp_scale",
    "exp_zero_count",
    "exp_positive_offset",
    "exp_positive_bucket_counts",
    "exp_negative_offset",
    "exp_negative_bucket_counts",
    "quantiles",
)
# Widths of the flat row lists in ``_Columns`` (one ``extend`` per row, columns cut out by slicing).
_RECORD_WIDTH: Final = 5  # topic, partition, offset, timestamp_ms, label slot
_METRIC_WIDTH: Final = 7  # scope index, name, unit, kind, temporality, is_monotonic, point count
_POINT_WIDTH: Final = 5  # start, time, value, value_int, flags


_RENDERED_ATTRIBUTES: dict[bytes, tuple[str, str | None]] = {}
_RENDERED_ATTRIBUTES_MAX: Final = 100_000


class _NestedDecodeError(Exception):
    """A data point attribute's bytes (parsed lazily) are not valid protobuf."""


def _render_attribute(kv: Any) -> tuple[str, str | None]:
    """(key, rendered value) of a KeyValue message or of its raw bytes (then cached)."""
    if kv.__class__ is not bytes:
        return kv.key, render_any_value(kv.value)
    try:
        message = KeyValue.FromString(kv)
    except DecodeError:
        raise _NestedDecodeError from None
    pair = (message.key, render_any_value(message.value))
    if len(_RENDERED_ATTRIBUTES) >= _RENDERED_ATTRIBUTES_MAX:
        _RENDERED_ATTRIBUTES.clear()
    _RENDERED_ATTRIBUTES[kv] = pair
    return pair


@lru_cache(maxsize=1)
def _raw_attribute_metrics_data() -> type[Message]:
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


@lru_cache(maxsize=256)
def _date_hour(hour_index: int) -> tuple[str, int]:
    moment = datetime.fromtimestamp(hour_index * 3600, tz=UTC)
    return moment.strftime("%Y-%m-%d"), moment.hour


class _Columns:
    """Rows per level (record, scope, metric, point, distribution extras) for one batch.

    Records, metrics and points go into one flat list per level (``extend`` with a row tuple): far
    cheaper than one list per column, and ``to_table`` cuts each column out with a C-level slice
    instead of transposing tuples. Each record's labels are interned (one client's records share one
    ``RecordLabels``), so label columns are built once per distinct label set and fanned out with
    ``take``, like record, scope and metric columns. Each level can be rolled back when a record turns
    out to be malformed half-way.
    """

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.labels: list[RecordLabels] = []
        self._label_slots: dict[int, int] = {}
        self.scopes: list[tuple[Any, ...]] = []
        self.metrics: list[Any] = []
        self.points: list[Any] = []
        self.attr_offsets: list[int] = [0]  # per point, in attribute pairs
        self.attr_pairs: list[str | None] = []  # key, value, key, value, ...
        self.extras: list[tuple[Any, ...]] = []

    @property
    def point_count(self) -> int:
        return len(self.points) // _POINT_WIDTH

    def mark(self) -> tuple[int, ...]:
        return (
            len(self.records),
            len(self.scopes),
            len(self.metrics),
            len(self.points),
            len(self.attr_pairs),
            len(self.extras),
        )

    def rollback(self, mark: tuple[int, ...]) -> None:
        records, scopes, metrics, points, attrs, extras = mark
        del self.records[records:]
        del self.scopes[scopes:]
        del self.metrics[metrics:]
        del self.points[points:]
        del self.attr_offsets[points // _POINT_WIDTH + 1 :]
        del self.attr_pairs[attrs:]
        del self.extras[extras:]

    def add_record(self, record: TopicRecord, labels: RecordLabels) -> int:
        slot = self._label_slots.get(id(labels))
        if slot is None:  # ``labels`` stays referenced by self.labels, so its id() is not reused
            slot = self._label_slots[id(labels)] = len(self.labels)
            self.labels.append(labels)
        self.records.extend((record.topic, record.partition, record.offset, record.timestamp_ms, slot))
        return len(self.records) // _RECORD_WIDTH - 1

    def add_metrics(self, record_index: int, data: Any) -> None:
        """Add a record's metrics; ``data`` is a ``MetricsData`` or its raw-attribute twin (usual)."""
        metrics_extend = self.metrics.extend
        points_extend = self.points.extend
        pairs_extend = self.attr_pairs.extend
        offsets_append = self.attr_offsets.append
        attr_pairs = self.attr_pairs
        rendered = _RENDERED_ATTRIBUTES
        temporality_names = _TEMPORALITY
        for resource_metrics in data.resource_metrics:
            resource_attributes = _render_attributes(resource_metrics.resource.attributes)
            for scope_metrics in resource_metrics.scope_metrics:
                scope = scope_metrics.scope
                self.scopes.append(
                    (
                        record_index,
                        resource_attributes,
                        scope.name or None,
                        scope.version or None,
                        _render_attributes(scope.attributes),
                    )
                )
                scope_index = len(self.scopes) - 1
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    if kind == "gauge":
                        points = metric.gauge.data_points
                        temporality = None
                        is_monotonic = None
                    elif kind == "sum":
                        total = metric.sum
                        points = total.data_points
                        temporality = temporality_names.get(total.aggregation_temporality)
                        is_monotonic = total.is_monotonic
                    elif kind is None or not metric.name:
                        raise TelemetryDecodeError(
                            "not an OTLP MetricsData: a metric has no name or no data "
                            "(valid protobuf of another message type?)"
                        )
                    else:
                        data_message = getattr(metric, kind)
                        points = data_message.data_points
                        temporality = (
                            None
                            if kind == "summary"
                            else temporality_names.get(data_message.aggregation_temporality)
                        )
                        metrics_extend(
                            (scope_index, metric.name, metric.unit, kind, temporality, None, len(points))
                        )
                        self._add_distribution_points(kind, points)
                        continue
                    metrics_extend(
                        (
                            scope_index,
                            metric.name,
                            metric.unit or None,
                            kind,
                            temporality,
                            is_monotonic,
                            len(points),
                        )
                    )
                    for point in points:
                        integer = point.as_int
                        if integer:
                            points_extend(
                                (
                                    point.start_time_unix_nano,
                                    point.time_unix_nano,
                                    float(integer),
                                    integer,
                                    point.flags,
                                )
                            )
                        else:
                            double = point.as_double
                            if double or point.WhichOneof("value") != "as_int":
                                points_extend(
                                    (
                                        point.start_time_unix_nano,
                                        point.time_unix_nano,
                                        double,
                                        None,
                                        point.flags,
                                    )
                                )
                            else:
                                points_extend(
                                    (point.start_time_unix_nano, point.time_unix_nano, 0.0, 0, point.flags)
                                )
                        attributes = point.attributes
                        if attributes:
                            for kv in attributes:
                                # raw KeyValue bytes (see _raw_attribute_metrics_data); one client's
                                # points repeat a few attributes, so each is rendered once
                                pair = rendered.get(kv) if kv.__class__ is bytes else None
                                pairs_extend(pair or _render_attribute(kv))
                        offsets_append(len(attr_pairs) >> 1)

    def _add_attributes(self, attributes: Any) -> None:
        for kv in attributes:
            self.attr_pairs.extend((kv.key, render_any_value(kv.value)))
        self.attr_offsets.append(len(self.attr_pairs) >> 1)

    def _add_distribution_points(self, kind: str, points: Any) -> None:
        for point in points:
            point_index = self.point_count
            has_sum = kind == "summary" or point.HasField("sum")
            point_sum = point.sum if has_sum else None
            count = point.count
            # value = the mean, so every row has a comparable number; sum/count stay exact alongside it
            mean = point_sum / count if point_sum is not None and count else None
            self.points.extend((point.start_time_unix_nano, point.time_unix_nano, mean, None, point.flags))
            self._add_attributes(point.attributes)
            if kind == "summary":
                minimum = maximum = None
                quantiles = [{"quantile": q.quantile, "value": q.value} for q in point.quantile_values]
            else:
                minimum = point.min if point.HasField("min") else None
                maximum = point.max if point.HasField("max") else None
                quantiles = None
            if kind == "histogram":
                buckets = list(point.bucket_counts)
                bounds = list(point.explicit_bounds)
            else:
                buckets = bounds = None
            if kind == "exponential_histogram":
                exponential = (
                    point.scale,
                    point.zero_count,
                    point.positive.offset,
                    list(point.positive.bucket_counts),
                    point.negative.offset,
                    list(point.negative.bucket_counts),
                )
            else:
                exponential = (None,) * 6
            self.extras.append(
                (point_index, count, point_sum, minimum, maximum, buckets, bounds, *exponential, quantiles)
            )

    def to_table(self) -> pa.Table:
        schema = DATAPOINT_SCHEMA
        point_count = self.point_count
        records, metrics, points = self.records, self.metrics, self.points
        scope_columns = _transpose(self.scopes, 5)
        metric_index = np.repeat(
            np.arange(len(metrics) // _METRIC_WIDTH, dtype=np.int64),
            np.asarray(metrics[6::_METRIC_WIDTH], dtype=np.int64),
        )
        scope_index = np.asarray(metrics[0::_METRIC_WIDTH], dtype=np.int64)[metric_index]
        record_index = np.asarray(scope_columns[0], dtype=np.int64)[scope_index]
        arrays = _record_arrays(
            records[0::_RECORD_WIDTH],
            records[1::_RECORD_WIDTH],
            records[2::_RECORD_WIDTH],
            np.asarray(records[3::_RECORD_WIDTH], dtype=np.int64),
            np.asarray(records[4::_RECORD_WIDTH], dtype=np.int64),
            self.labels,
            record_index,
        )
        for name, values in zip(_SCOPE_COLUMNS, scope_columns[1:], strict=True):
            arrays[name] = _typed_array(values, schema.field(name).type).take(scope_index)
        for position, name in enumerate(_METRIC_COLUMNS, start=1):
            values = metrics[position::_METRIC_WIDTH]
            arrays[name] = _typed_array(values, schema.field(name).type).take(metric_index)
        arrays["start_time"] = _nanos_or_null(points[0::_POINT_WIDTH], schema.field("start_time").type)
        arrays["time"] = _nanos_or_null(points[1::_POINT_WIDTH], schema.field("time").type)
        arrays["value"] = pa.array(points[2::_POINT_WIDTH], type=pa.float64())
        arrays["value_int"] = pa.array(points[3::_POINT_WIDTH], type=pa.int64())
        arrays["flags"] = pa.array(points[4::_POINT_WIDTH], type=pa.int32())
        arrays["attributes"] = pa.MapArray.from_arrays(
            pa.array(self.attr_offsets, type=pa.int32()),
            pa.array(self.attr_pairs[0::2], type=pa.string()),
            pa.array(self.attr_pairs[1::2], type=pa.string()),
            type=STRING_MAP,
        )
        if not self.extras:
            for name in _EXTRA_COLUMNS:
                arrays[name] = pa.nulls(point_count, type=schema.field(name).type)
            return pa.Table.from_arrays([arrays[name] for name in schema.names], schema=schema)
        extra_columns = _transpose(self.extras, len(_EXTRA_COLUMNS) + 1)
        extra_index = np.full(point_count, -1, dtype=np.int64)
        extra_index[np.asarray(extra_columns[0], dtype=np.int64)] = np.arange(
            len(self.extras), dtype=np.int64
        )
        extra_take = pa.array(extra_index, mask=extra_index < 0)
        for name, values in zip(_EXTRA_COLUMNS, extra_columns[1:], strict=True):
            arrays[name] = _typed_array(values, schema.field(name).type).take(extra_take)
        return pa.Table.from_arrays([arrays[name] for name in schema.names], schema=schema)


def _record_arrays(
    topics: Sequence[str],
    partitions: Sequence[int],
    offsets: Sequence[int],
    timestamps_ms: np.ndarray,
    label_slots: np.ndarray,
    labels: Sequence[RecordLabels],
    point_record: np.ndarray,
) -> dict[str, pa.Array]:
    """Record-level columns (lineage, labels, date/hour), built once per record and fanned out to points.

    ``label_slots[i]`` is record i's row in ``labels`` (the distinct label sets of the batch);
    ``point_record`` gives each point's record.
    """
    # One ``take`` per level, not per column: each pyarrow compute call releases and re-takes the GIL,
    # and on a staging thread every re-take can wait a whole switch interval behind the consumer.
    schema = DATAPOINT_SCHEMA
    hours, hour_slot = np.unique(timestamps_ms // _MS_PER_HOUR, return_inverse=True)
    dates_hours = [_date_hour(int(hour)) for hour in hours]
    record_hour = hour_slot.reshape(-1)
    lineage = pa.table(
        {
            "topic": pa.array(topics, type=pa.string()),
            "partition": pa.array(partitions, type=pa.int32()),
            "offset": pa.array(offsets, type=pa.int64()),
            "record_timestamp": _timestamps(timestamps_ms, schema.field("record_timestamp").type),
            "date": pa.array([dates_hours[slot][0] for slot in record_hour], type=pa.string()),
            "hour": pa.array([dates_hours[slot][1] for slot in record_hour], type=pa.int32()),
        }
    ).take(pa.array(point_record, type=pa.int64()))
    label_columns = _transpose([_label_row(row) for row in labels], len(_LABEL_COLUMNS))
    label_table = pa.table(
        {
            name: pa.array(values, type=schema.field(name).type)
            for name, values in zip(_LABEL_COLUMNS, label_columns, strict=True)
        }
    ).take(pa.array(label_slots[point_record], type=pa.int64()))
    return {
        **dict(zip(lineage.column_names, lineage.columns, strict=True)),
        **dict(zip(label_table.column_names, label_table.columns, strict=True)),
    }


def _timestamps(values: np.ndarray, arrow_type: pa.DataType, *, zero_is_null: bool = False) -> pa.Array:
    """Integer epoch values as a timestamp array, without a compute call (see ``_record_arrays``)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    validity = None
    if zero_is_null and not values.all():
        validity = pa.py_buffer(np.packbits(values != 0, bitorder="little"))
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(values)])


def _label_row(labels: RecordLabels) -> tuple[Any, ...]:
    """The label columns' values of one record, in ``_LABEL_COLUMNS`` order."""
    return tuple(getattr(labels, name) for name in _LABEL_COLUMNS)


def _transpose(rows: list[tuple[Any, ...]], width: int) -> list[Sequence[Any]]:
    if not rows:
        return [() for _ in range(width)]
    return list(zip(*rows, strict=True))


def _typed_array(values: list[Any], arrow_type: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(arrow_type):
        return pa.array(values, type=pa.int64()).cast(arrow_type)
    return pa.array(values, type=arrow_type)


def _nanos_or_null(values: Sequence[int], arrow_type: pa.DataType) -> pa.Array:
    """OTLP's fixed64 times (Python ints, up to 2**64 - 1) as timestamps; 0 means "unset": null."""
    return _timestamps(np.asarray(values, dtype=np.uint64).astype(np.int64), arrow_type, zero_is_null=True)


# --------------------------------------------------------------------------------------------------
# public API


def decode_batch(records: Sequence[TopicRecord], value_format: ValueFormat = "otlp_proto") -> DecodedBatch:
    """Decode records into one datapoints table; failing records are listed with their reason."""
    if value_format not in VALUE_FORMATS:
        raise ValueError(f"value_format: must be one of {VALUE_FORMATS} (got {value_format!r})")
    # The batch allocates many small tuples that cannot form cycles; pausing the cyclic GC avoids
    # repeated full scans of them (a measured 20-40% of decode time).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        if value_format == "otlp_proto" and otlp_native.native_available():
            return _decode_batch_native(records)
        return _decode_batch(records, value_format)
    finally:
        if gc_was_enabled:
            gc.enable()


def _decode_batch(records: Sequence[TopicRecord], value_format: ValueFormat) -> DecodedBatch:
    columns = _Columns()
    message_class = _raw_attribute_metrics_data()
    failures: list[tuple[int, str]] = []
    points_per_record: list[int] = []
    for index, record in enumerate(records):
        mark = columns.mark()
        try:
            labels = _labels_of(record.headers)
            data = parse_metrics_data(
                record.value, value_format, check_unknown_fields=False, message_class=message_class
            )
            record_index = columns.add_record(record, labels)
            columns.add_metrics(record_index, data)
            if len(columns.points) == mark[3]:
                _check_structure(data)  # no points: make sure it is not another message type
        except TelemetryDecodeError as err:
            reason = err.reason
        except _NestedDecodeError:
            reason = (
                f"not OTLP protobuf: the {len(record.value or b'')}-byte value is not valid protobuf wire "
                "format (random bytes or truncated)"
            )
        except (DecodeError, ValueError, OverflowError, TypeError) as err:
            reason = f"undecodable OTLP content: {type(err).__name__}: {err}"
        else:
            points_per_record.append((len(columns.points) - mark[3]) // _POINT_WIDTH)
            continue
        columns.rollback(mark)
        failures.append((index, reason))
        points_per_record.append(0)
    return DecodedBatch(columns.to_table(), failures, points_per_record)


def _decode_batch_native(records: Sequence[TopicRecord]) -> DecodedBatch:
    """The fast path: values decoded natively; the records it leaves go through ``_decode_batch``."""
    failures: list[tuple[int, str]] = []
    values: list[bytes | None] = []
    label_rows: list[RecordLabels] = []
    label_slot_of: dict[int, int] = {}
    label_slots = np.zeros(len(records), dtype=np.int64)
    # Landing hands over one interned header set per client connection: parse each set once.
    labels_of_headers: dict[int, RecordLabels | TelemetryDecodeError] = {}
    for index, record in enumerate(records):
        labels = labels_of_headers.get(id(record.headers))  # ``records`` keeps every set alive
        if labels is None:
            try:
                labels = _labels_of(record.headers)
            except TelemetryDecodeError as err:
                labels = err
            labels_of_headers[id(record.headers)] = labels
        if isinstance(labels, TelemetryDecodeError):
            failures.append((index, labels.reason))
            values.append(None)  # not decoded at all: the header problem is its reason
            continue
        slot = label_slot_of.get(id(labels))
        if slot is None:  # ``labels`` stays referenced by label_rows, so its id() is not reused
            slot = label_slot_of[id(labels)] = len(label_rows)
            label_rows.append(labels)
        label_slots[index] = slot
        values.append(record.value)
    native = otlp_native.decode_values(values)
    table = _native_table(records, label_slots, label_rows, native)
    points_per_record = native.points_per_record.tolist()
    failed = {index for index, _ in failures}
    fallback = [int(index) for index in np.flatnonzero(native.status) if index not in failed]
    if fallback:
        reference = _decode_batch([records[index] for index in fallback], "otlp_proto")
        failures.extend((fallback[position], reason) for position, reason in reference.failures)
        for position, index in enumerate(fallback):
            points_per_record[index] = reference.points_per_record[position]
        table = _merge_by_record(
            table,
            native.point_record,
            reference.datapoints,
            np.repeat(np.asarray(fallback, dtype=np.int64), reference.points_per_record),
        )
    failures.sort()
    return DecodedBatch(table, failures, points_per_record)


def _native_table(
    records: Sequence[TopicRecord],
    label_slots: np.ndarray,
    label_rows: Sequence[RecordLabels],
    native: otlp_native.NativeColumns,
) -> pa.Table:
    schema = DATAPOINT_SCHEMA
    arrays = _record_arrays(
        [record.topic for record in records],
        [record.partition for record in records],
        [record.offset for record in records],
        np.fromiter((record.timestamp_ms for record in records), dtype=np.int64, count=len(records)),
        label_slots,
        label_rows,
        native.point_record,
    )
    for level, index in ((native.scopes, native.point_scope), (native.metrics, native.point_metric)):
        fanned_out = pa.table(level).take(index)  # one take per level (see ``_record_arrays``)
        arrays.update(zip(fanned_out.column_names, fanned_out.columns, strict=True))
    points = native.points
    for name in ("start_time", "time"):
        arrays[name] = _timestamps(points[name], schema.field(name).type, zero_is_null=True)
    for name in ("value", "value_int", "flags", "attributes"):
        arrays[name] = points[name]
    point_count = len(native.point_record)
    for name in _EXTRA_COLUMNS:  # distribution points always take the reference path
        arrays[name] = pa.nulls(point_count, type=schema.field(name).type)
    return pa.Table.from_arrays([arrays[name] for name in schema.names], schema=schema)


def _merge_by_record(
    first: pa.Table, first_records: np.ndarray, second: pa.Table, second_records: np.ndarray
) -> pa.Table:
    """Both tables' rows in record order (a stable sort keeps each record's points in order)."""
    if second.num_rows == 0:
        return first
    if first.num_rows == 0:
        return second
    order = np.argsort(np.concatenate([first_records, second_records]), kind="stable")
    return pa.concat_tables([first, second]).take(pa.array(order))


def decode_record(
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] | None,
    *,
    topic: str = "",
    partition: int = -1,
    offset: int = -1,
    timestamp_ms: int = 0,
    key: bytes | None = None,
    value_format: ValueFormat = "otlp_proto",
) -> list[dict[str, Any]]:
    """Decode one record to datapoint rows (dicts); raise ``TelemetryDecodeError`` if it is malformed."""
    batch = decode_batch(
        [TopicRecord(topic, partition, offset, timestamp_ms, key, headers, value)], value_format
    )
    if batch.failures:
        raise TelemetryDecodeError(batch.failures[0][1])
    return batch.datapoints.to_pylist()


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
    "VALUE_FORMATS",
    "DecodedBatch",
    "RecordLabels",
    "TopicRecord",
    "ValueFormat",
    "count_points",
    "decode_batch",
    "decode_record",
    "headers_to_dict",
    "parse_labels",
    "parse_metrics_data",
    "render_any_value",
]
