package io.kip714.broker;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * Follows the broker's own KIP-714 metric group ({@code client-metrics}) through
 * metricChange/metricRemoval and turns its current values, plus the plugin's own export-time
 * histograms and counters, into OTLP {@code MetricsData} values per interval (one, or several for
 * a broker managing many clients).
 */
final class BrokerMetricsCollector {
    static final String GROUP = "client-metrics";
    static final String INSTANCE_ID_TAG = "client_instance_id";
    /** Cap on followed series, so a storm of short-lived clients cannot grow memory without bound. */
    static final int MAX_SERIES = 100_000;
    /**
     * Client instances per broker record: about 0.6 KB each, so a record stays near 300 KB, well
     * under the producer's default 1 MiB request size however many clients the broker manages.
     */
    static final int DEFAULT_INSTANCES_PER_RECORD = 500;

    /** A followed broker metric; a removed one is reported once more with its last value. */
    private static final class Series {
        final KafkaMetric metric;
        final long startTimeNanos;
        volatile boolean removed;
        volatile double lastValue = Double.NaN;

        Series(KafkaMetric metric, long startTimeNanos) {
            this.metric = metric;
            this.startTimeNanos = startTimeNanos;
        }

        double value() {
            if (removed) {
                return lastValue;
            }
            Object value = metric.metricValue();
            return value instanceof Number number ? number.doubleValue() : Double.NaN;
        }
    }

    private final Map<MetricName, Series> series = new ConcurrentHashMap<>();
    private final Map<String, ExportTimeHistogram> exportTimes = new ConcurrentHashMap<>();
    private final Map<String, Boolean> retiredInstances = new ConcurrentHashMap<>();

    static boolean isFollowed(MetricName name) {
        return GROUP.equals(name.group());
    }

    void metricChange(KafkaMetric metric) {
        MetricName name = metric.metricName();
        if (!isFollowed(name) || series.size() >= MAX_SERIES) {
            return;
        }
        series.put(name, new Series(metric, nowNanos()));
        String instance = name.tags().get(INSTANCE_ID_TAG);
        if (instance != null) {
            retiredInstances.remove(instance);
        }
    }

    void metricRemoval(KafkaMetric metric) {
        MetricName name = metric.metricName();
        Series followed = series.get(name);
        if (followed == null || followed.metric != metric) {
            return;
        }
        try {
            Object value = metric.metricValue();
            followed.lastValue = value instanceof Number number ? number.doubleValue() : Double.NaN;
        } catch (RuntimeException e) {
            followed.lastValue = Double.NaN;
        }
        followed.removed = true;
        String instance = name.tags().get(INSTANCE_ID_TAG);
        if (instance != null && name.name().equals("plugin-export-count")) {
            retiredInstances.put(instance, Boolean.TRUE);
        }
    }

    /** Records one push's export time (ms) under its client instance id. */
    void recordExportTime(String clientInstanceId, double millis) {
        ExportTimeHistogram histogram = exportTimes.get(clientInstanceId);
        if (histogram == null) {
            if (exportTimes.size() >= MAX_SERIES) {
                return;
            }
            histogram = exportTimes.computeIfAbsent(clientInstanceId, id -> new ExportTimeHistogram(nowNanos()));
        }
        histogram.record(millis);
    }

    /** Pushes timed so far for one client instance (0 when unknown). */
    long collectExportTimeCount(String clientInstanceId) {
        ExportTimeHistogram histogram = exportTimes.get(clientInstanceId);
        return histogram == null ? 0 : histogram.count();
    }

    int followedSeries() {
        return series.size();
    }

    /** Plugin-side counters reported next to the broker's metrics. */
    record PluginCounters(long startTimeNanos, Map<String, Long> droppedByReason, long exported, long buffered) {
    }

    /** {@link #collect(String, String, PluginCounters, int)} with the default record size. */
    List<byte[]> collect(String nodeId, String clusterId, PluginCounters counters) {
        return collect(nodeId, clusterId, counters, DEFAULT_INSTANCES_PER_RECORD);
    }

    /**
     * Builds the broker records' values and forgets series whose metric the broker removed (they
     * were just reported one last time). The per-client series are split across records of at most
     * {@code instancesPerRecord} client instances each; the first record also carries the
     * broker-wide series. Every series appears in exactly one record per interval, so readers that
     * follow series (the Spark apps) need not know about the split.
     */
    List<byte[]> collect(String nodeId, String clusterId, PluginCounters counters, int instancesPerRecord) {
        long now = nowNanos();
        Map<String, String> resource = new LinkedHashMap<>();
        resource.put("node_id", nodeId);
        resource.put("cluster_id", clusterId);

        List<OtlpMetrics.NumberPoint> instanceCount = new ArrayList<>();
        List<OtlpMetrics.NumberPoint> unknownSubscriptions = new ArrayList<>();
        List<OtlpMetrics.NumberPoint> throttles = new ArrayList<>();
        List<OtlpMetrics.NumberPoint> exports = new ArrayList<>();
        List<OtlpMetrics.NumberPoint> errors = new ArrayList<>();
        List<OtlpMetrics.NumberPoint> exportTimeAvg = new ArrayList<>();
        List<OtlpMetrics.NumberPoint> exportTimeMax = new ArrayList<>();

        for (Map.Entry<MetricName, Series> entry : series.entrySet()) {
            MetricName name = entry.getKey();
            Series followed = entry.getValue();
            double value;
            try {
                value = followed.value();
            } catch (RuntimeException e) {
                continue;
            }
            if (Double.isNaN(value) || Double.isInfinite(value)) {
                continue;
            }
            Map<String, String> attributes = new LinkedHashMap<>();
            String instance = name.tags().get(INSTANCE_ID_TAG);
            if (instance != null) {
                attributes.put(INSTANCE_ID_TAG, instance);
            }
            long start = followed.startTimeNanos;
            switch (name.name()) {
                case "instance-count" -> instanceCount.add(OtlpMetrics.NumberPoint.ofLong(attributes, 0, now, Math.round(value)));
                case "unknown-subscription-request-count" ->
                    unknownSubscriptions.add(OtlpMetrics.NumberPoint.ofLong(attributes, start, now, Math.round(value)));
                case "throttle-count" -> throttles.add(OtlpMetrics.NumberPoint.ofLong(attributes, start, now, Math.round(value)));
                case "plugin-export-count" -> exports.add(OtlpMetrics.NumberPoint.ofLong(attributes, start, now, Math.round(value)));
                case "plugin-error-count" -> errors.add(OtlpMetrics.NumberPoint.ofLong(attributes, start, now, Math.round(value)));
                case "plugin-export-time-avg" -> exportTimeAvg.add(OtlpMetrics.NumberPoint.ofDouble(attributes, 0, now, value));
                case "plugin-export-time-max" -> exportTimeMax.add(OtlpMetrics.NumberPoint.ofDouble(attributes, 0, now, value));
                default -> { }
            }
        }

        List<OtlpMetrics.HistogramPoint> exportTime = new ArrayList<>();
        for (Map.Entry<String, ExportTimeHistogram> entry : exportTimes.entrySet()) {
            exportTime.add(entry.getValue().snapshot(Map.of(INSTANCE_ID_TAG, entry.getKey()), now));
        }

        List<OtlpMetrics.NumberPoint> dropped = new ArrayList<>();
        for (Map.Entry<String, Long> entry : counters.droppedByReason().entrySet()) {
            dropped.add(OtlpMetrics.NumberPoint.ofLong(Map.of("reason", entry.getKey()),
                counters.startTimeNanos(), now, entry.getValue()));
        }

        List<OtlpMetrics.NumberPoint> exported = List.of(
            OtlpMetrics.NumberPoint.ofLong(Map.of(), counters.startTimeNanos(), now, counters.exported()));
        List<OtlpMetrics.NumberPoint> buffered = List.of(
            OtlpMetrics.NumberPoint.ofLong(Map.of(), 0, now, counters.buffered()));

        // Group client instances in a stable order; broker-wide points (no instance) go to group 0.
        TreeSet<String> instances = new TreeSet<>(exportTimes.keySet());
        for (MetricName name : series.keySet()) {
            String instance = name.tags().get(INSTANCE_ID_TAG);
            if (instance != null) {
                instances.add(instance);
            }
        }
        int perRecord = Math.max(1, instancesPerRecord);
        Map<String, Integer> groupOf = new HashMap<>();
        for (String instance : instances) {
            groupOf.put(instance, groupOf.size() / perRecord);
        }
        int groups = Math.max(1, (instances.size() + perRecord - 1) / perRecord);

        List<byte[]> records = new ArrayList<>(groups);
        for (int group = 0; group < groups; group++) {
            int current = group;
            Predicate<Map<String, String>> inGroup = attributes -> {
                String instance = attributes.get(INSTANCE_ID_TAG);
                return instance == null ? current == 0 : groupOf.getOrDefault(instance, 0) == current;
            };
            OtlpMetrics otlp = new OtlpMetrics(resource, "io.kip714.broker", PluginVersion.VERSION);
            otlp.gauge(TopicContract.INSTANCE_COUNT, "Client metrics instances the broker manages", "{instance}",
                    numbers(instanceCount, inGroup))
                .cumulativeMonotonicSum(TopicContract.UNKNOWN_SUBSCRIPTION_REQUESTS,
                    "Pushes with an unknown or stale subscription id", "{request}", numbers(unknownSubscriptions, inGroup))
                .cumulativeMonotonicSum(TopicContract.THROTTLES, "Pushes throttled for coming too early", "{request}",
                    numbers(throttles, inGroup))
                .cumulativeMonotonicSum(TopicContract.PLUGIN_EXPORTS, "Pushes handed to the plugin", "{request}",
                    numbers(exports, inGroup))
                .cumulativeMonotonicSum(TopicContract.PLUGIN_ERRORS, "Pushes whose plugin export raised", "{request}",
                    numbers(errors, inGroup))
                .cumulativeHistogram(TopicContract.PLUGIN_EXPORT_TIME,
                    "Time spent in this plugin's export per push, measured by the plugin", "ms",
                    exportTime.stream().filter(point -> inGroup.test(point.attributes())).toList())
                .gauge(TopicContract.PLUGIN_EXPORT_TIME_AVG, "Broker's own windowed average export time", "ms",
                    numbers(exportTimeAvg, inGroup))
                .gauge(TopicContract.PLUGIN_EXPORT_TIME_MAX, "Broker's own windowed maximum export time", "ms",
                    numbers(exportTimeMax, inGroup))
                .cumulativeMonotonicSum(TopicContract.PLUGIN_DROPS, "Records the plugin dropped instead of writing",
                    "{record}", numbers(dropped, inGroup))
                .cumulativeMonotonicSum(TopicContract.PLUGIN_EXPORTED, "Records the topic acknowledged", "{record}",
                    numbers(exported, inGroup))
                .gauge(TopicContract.PLUGIN_BUFFERED, "Records waiting in the plugin or its producer", "{record}",
                    numbers(buffered, inGroup));
            records.add(otlp.toMetricsData());
        }

        forgetRetired();
        return records;
    }

    private static List<OtlpMetrics.NumberPoint> numbers(
            List<OtlpMetrics.NumberPoint> points, Predicate<Map<String, String>> inGroup) {
        return points.stream().filter(point -> inGroup.test(point.attributes())).toList();
    }

    private void forgetRetired() {
        Iterator<Map.Entry<MetricName, Series>> iterator = series.entrySet().iterator();
        while (iterator.hasNext()) {
            if (iterator.next().getValue().removed) {
                iterator.remove();
            }
        }
        for (String instance : retiredInstances.keySet()) {
            exportTimes.remove(instance);
            retiredInstances.remove(instance);
        }
    }

    static long nowNanos() {
        return System.currentTimeMillis() * 1_000_000L;
    }
}
