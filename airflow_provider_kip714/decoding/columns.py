"""The column builder of the Python decoder: one batch's rows per level, cheap to append and roll back.

Records, metrics and points go into one flat list per level (``extend`` with a row tuple): far
cheaper than one list per column, and ``arrow.columns_table`` cuts each column out with a C-level
slice instead of transposing tuples. Record, scope and metric values are stored once per level and
fanned out to points with index arrays. Each level can be rolled back when a record turns out to be
malformed (or to hold a value the landing schema cannot) half-way.
"""

from __future__ import annotations

from typing import Any, Final

from airflow_provider_kip714.decoding import limits
from airflow_provider_kip714.decoding.attributes import (
    RENDERED_ATTRIBUTES,
    render_any_value,
    render_attribute,
    render_attributes,
)
from airflow_provider_kip714.decoding.records import TopicRecord
from airflow_provider_kip714.exceptions import TelemetryDecodeError

TEMPORALITY: Final = {0: None, 1: "delta", 2: "cumulative"}
SCOPE_COLUMNS: Final = ("resource_attributes", "scope_name", "scope_version", "scope_attributes")
METRIC_COLUMNS: Final = ("metric_name", "metric_unit", "metric_type", "temporality", "is_monotonic")
EXTRA_COLUMNS: Final = (
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
# Widths of the flat row lists (one ``extend`` per row, columns cut out by slicing).
RECORD_WIDTH: Final = 5  # topic, partition, offset, timestamp_ms, label row
METRIC_WIDTH: Final = 7  # scope index, name, unit, kind, temporality, is_monotonic, point count
POINT_WIDTH: Final = 5  # start, time, value, value_int, flags


class Columns:
    """Rows per level (record, scope, metric, point, distribution extras) for one batch."""

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.scopes: list[tuple[Any, ...]] = []
        self.metrics: list[Any] = []
        self.points: list[Any] = []
        self.attr_offsets: list[int] = [0]  # per point, in attribute pairs
        self.attr_pairs: list[str | None] = []  # key, value, key, value, ...
        self.extras: list[tuple[Any, ...]] = []

    @property
    def point_count(self) -> int:
        return len(self.points) // POINT_WIDTH

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
        del self.attr_offsets[points // POINT_WIDTH + 1 :]
        del self.attr_pairs[attrs:]
        del self.extras[extras:]

    def add_record(self, record: TopicRecord, label_row: int) -> int:
        """Add a record's lineage (its labels are row ``label_row`` of the batch's label rows)."""
        self.records.extend((record.topic, record.partition, record.offset, record.timestamp_ms, label_row))
        return len(self.records) // RECORD_WIDTH - 1

    def check_fit(self, mark: tuple[int, ...]) -> None:
        """Raise if a point added since ``mark`` holds a time or flags the landing schema cannot.

        One ``max`` over a slice per column and record: cheaper than a test per point, and it keeps
        the batch-wide conversions in ``arrow`` from ever raising. Wire values are unsigned, so only
        the largest can overflow.
        """
        start, points = mark[3], self.points
        if len(points) > start:
            limits.check_max("start_time", points[start::POINT_WIDTH])
            limits.check_max("time", points[start + 1 :: POINT_WIDTH])
            limits.check_max("flags", points[start + 4 :: POINT_WIDTH])

    def add_metrics(self, record_index: int, data: Any) -> None:
        """Add a record's metrics; ``data`` is a ``MetricsData`` or its raw-attribute twin (usual).

        The number-point loop (nearly every point) is inline with its methods bound once per record:
        a call per metric or point costs a measurable share of the Python decoder's time.
        """
        points_extend = self.points.extend
        pairs_extend = self.attr_pairs.extend
        offsets_append = self.attr_offsets.append
        attr_pairs = self.attr_pairs
        rendered = RENDERED_ATTRIBUTES
        for resource_metrics in data.resource_metrics:
            resource_attributes = render_attributes(resource_metrics.resource.attributes)
            for scope_metrics in resource_metrics.scope_metrics:
                scope_index = self._add_scope(record_index, resource_attributes, scope_metrics.scope)
                for metric in scope_metrics.metrics:
                    kind, points = self._add_metric(scope_index, metric)
                    if kind != "gauge" and kind != "sum":
                        self._add_distribution_points(kind, points)
                        continue
                    for point in points:
                        start, time, flags = point.start_time_unix_nano, point.time_unix_nano, point.flags
                        integer = point.as_int
                        if integer:
                            points_extend((start, time, float(integer), integer, flags))
                        elif point.as_double or point.WhichOneof("value") != "as_int":
                            points_extend((start, time, point.as_double, None, flags))
                        else:
                            points_extend((start, time, 0.0, 0, flags))
                        attributes = point.attributes
                        if attributes:
                            for kv in attributes:
                                # raw KeyValue bytes (see parsing.raw_attribute_metrics_data); one
                                # client's points repeat a few attributes, so each is rendered once
                                pair = rendered.get(kv) if kv.__class__ is bytes else None
                                pairs_extend(pair or render_attribute(kv))
                        offsets_append(len(attr_pairs) >> 1)

    def _add_scope(self, record_index: int, resource_attributes: list[Any], scope: Any) -> int:
        self.scopes.append(
            (
                record_index,
                resource_attributes,
                scope.name or None,
                scope.version or None,
                render_attributes(scope.attributes),
            )
        )
        return len(self.scopes) - 1

    def _add_metric(self, scope_index: int, metric: Any) -> tuple[str, Any]:
        """Add a metric's row; return its kind and its data points."""
        kind = metric.WhichOneof("data")
        temporality = is_monotonic = None
        if kind == "gauge":
            points = metric.gauge.data_points
        elif kind == "sum":
            total = metric.sum
            points = total.data_points
            temporality = TEMPORALITY.get(total.aggregation_temporality)
            is_monotonic = total.is_monotonic
        elif kind is None or not metric.name:
            raise TelemetryDecodeError(
                "not an OTLP MetricsData: a metric has no name or no data "
                "(valid protobuf of another message type?)"
            )
        else:
            data_message = getattr(metric, kind)
            points = data_message.data_points
            if kind != "summary":
                temporality = TEMPORALITY.get(data_message.aggregation_temporality)
        # An empty unit is "no unit" for every kind (null, as the native path writes it).
        self.metrics.extend(
            (scope_index, metric.name, metric.unit or None, kind, temporality, is_monotonic, len(points))
        )
        return kind, points

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
            limits.check("count", count)
            # value = the mean, so every row has a comparable number; sum/count stay exact alongside it
            mean = point_sum / count if point_sum is not None and count else None
            self.points.extend((point.start_time_unix_nano, point.time_unix_nano, mean, None, point.flags))
            self._add_attributes(point.attributes)
            self.extras.append((point_index, count, point_sum, *_distribution_fields(kind, point)))


def _distribution_fields(kind: str, point: Any) -> tuple[Any, ...]:
    """min, max, buckets, bounds, the six exponential fields and quantiles of one point, checked."""
    if kind == "summary":
        minimum = maximum = None
        quantiles = [{"quantile": q.quantile, "value": q.value} for q in point.quantile_values]
    else:
        minimum = point.min if point.HasField("min") else None
        maximum = point.max if point.HasField("max") else None
        quantiles = None
    buckets = bounds = None
    if kind == "histogram":
        buckets = list(point.bucket_counts)
        limits.check_max("bucket_counts", buckets)
        bounds = list(point.explicit_bounds)
    exponential: tuple[Any, ...] = (None,) * 6
    if kind == "exponential_histogram":
        positive = list(point.positive.bucket_counts)
        negative = list(point.negative.bucket_counts)
        limits.check("exp_zero_count", point.zero_count)
        limits.check_max("exp_positive_bucket_counts", positive)
        limits.check_max("exp_negative_bucket_counts", negative)
        exponential = (
            point.scale,
            point.zero_count,
            point.positive.offset,
            positive,
            point.negative.offset,
            negative,
        )
    return (minimum, maximum, buckets, bounds, *exponential, quantiles)


__all__ = ["EXTRA_COLUMNS", "METRIC_COLUMNS", "POINT_WIDTH", "RECORD_WIDTH", "SCOPE_COLUMNS", "Columns"]
