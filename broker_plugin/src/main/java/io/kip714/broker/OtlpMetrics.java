package io.kip714.broker;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The few OTLP metric shapes the plugin writes (opentelemetry/proto/metrics/v1), encoded with
 * {@link ProtoWriter}. Field numbers follow metrics.proto, common.proto and resource.proto.
 */
final class OtlpMetrics {
    static final int TEMPORALITY_CUMULATIVE = 2;

    private final Map<String, String> resourceAttributes;
    private final String scopeName;
    private final String scopeVersion;
    private final List<ProtoWriter> metrics = new ArrayList<>();

    OtlpMetrics(Map<String, String> resourceAttributes, String scopeName, String scopeVersion) {
        this.resourceAttributes = resourceAttributes;
        this.scopeName = scopeName;
        this.scopeVersion = scopeVersion;
    }

    /** One data point of a number metric (gauge or sum). */
    record NumberPoint(Map<String, String> attributes, long startTimeNanos, long timeNanos,
                       boolean isDouble, long intValue, double doubleValue) {
        static NumberPoint ofLong(Map<String, String> attributes, long startNanos, long timeNanos, long value) {
            return new NumberPoint(attributes, startNanos, timeNanos, false, value, 0.0);
        }

        static NumberPoint ofDouble(Map<String, String> attributes, long startNanos, long timeNanos, double value) {
            return new NumberPoint(attributes, startNanos, timeNanos, true, 0L, value);
        }
    }

    /** One explicit-bucket histogram data point; {@code bucketCounts.length == bounds.length + 1}. */
    record HistogramPoint(Map<String, String> attributes, long startTimeNanos, long timeNanos,
                          long count, double sum, long[] bucketCounts, double[] explicitBounds,
                          double min, double max) {
    }

    OtlpMetrics gauge(String name, String description, String unit, List<NumberPoint> points) {
        if (points.isEmpty()) {
            return this;
        }
        ProtoWriter gauge = new ProtoWriter();
        for (NumberPoint point : points) {
            gauge.message(1, numberPoint(point));
        }
        metrics.add(metricHeader(name, description, unit).message(5, gauge));
        return this;
    }

    OtlpMetrics cumulativeMonotonicSum(String name, String description, String unit, List<NumberPoint> points) {
        if (points.isEmpty()) {
            return this;
        }
        ProtoWriter sum = new ProtoWriter();
        for (NumberPoint point : points) {
            sum.message(1, numberPoint(point));
        }
        sum.uint64(2, TEMPORALITY_CUMULATIVE).bool(3, true);
        metrics.add(metricHeader(name, description, unit).message(7, sum));
        return this;
    }

    OtlpMetrics cumulativeHistogram(String name, String description, String unit, List<HistogramPoint> points) {
        if (points.isEmpty()) {
            return this;
        }
        ProtoWriter histogram = new ProtoWriter();
        for (HistogramPoint point : points) {
            ProtoWriter dataPoint = new ProtoWriter()
                .fixed64(2, point.startTimeNanos())
                .fixed64(3, point.timeNanos())
                .fixed64(4, point.count())
                .doubleAlways(5, point.sum())
                .packedFixed64(6, point.bucketCounts())
                .packedDouble(7, point.explicitBounds());
            attributes(dataPoint, 9, point.attributes());
            if (point.count() > 0) {
                dataPoint.doubleAlways(11, point.min()).doubleAlways(12, point.max());
            }
            histogram.message(1, dataPoint);
        }
        histogram.uint64(2, TEMPORALITY_CUMULATIVE);
        metrics.add(metricHeader(name, description, unit).message(9, histogram));
        return this;
    }

    /** Serialized {@code MetricsData} (same bytes as an {@code ExportMetricsServiceRequest}). */
    byte[] toMetricsData() {
        ProtoWriter resource = new ProtoWriter();
        attributes(resource, 1, resourceAttributes);
        ProtoWriter scope = new ProtoWriter().string(1, scopeName).string(2, scopeVersion);
        ProtoWriter scopeMetrics = new ProtoWriter().message(1, scope);
        for (ProtoWriter metric : metrics) {
            scopeMetrics.message(2, metric);
        }
        ProtoWriter resourceMetrics = new ProtoWriter().message(1, resource).message(2, scopeMetrics);
        return new ProtoWriter().message(1, resourceMetrics).toByteArray();
    }

    private static ProtoWriter metricHeader(String name, String description, String unit) {
        return new ProtoWriter().string(1, name).string(2, description).string(3, unit);
    }

    private static ProtoWriter numberPoint(NumberPoint point) {
        ProtoWriter writer = new ProtoWriter()
            .fixed64(2, point.startTimeNanos())
            .fixed64(3, point.timeNanos());
        if (point.isDouble()) {
            writer.doubleAlways(4, point.doubleValue());
        } else {
            writer.fixed64Always(6, point.intValue()); // sfixed64 as_int
        }
        attributes(writer, 7, point.attributes());
        return writer;
    }

    private static void attributes(ProtoWriter writer, int field, Map<String, String> attributes) {
        for (Map.Entry<String, String> attribute : attributes.entrySet()) {
            ProtoWriter anyValue = new ProtoWriter();
            // string_value is a oneof member: write it even when empty so the type is explicit.
            anyValue.bytes(1, attribute.getValue().getBytes(java.nio.charset.StandardCharsets.UTF_8));
            ProtoWriter keyValue = new ProtoWriter().string(1, attribute.getKey()).message(2, anyValue);
            writer.message(field, keyValue);
        }
    }
}
