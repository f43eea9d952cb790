package io.kip714.broker;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

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
    /** The broker's client-metrics series the contract reports, by their name in the broker. */
    static final Map<String, String> CONTRACT_NAMES = Map.of(
        "instance-count", TopicContract.INSTANCE_COUNT,
        "unknown-subscription-request-count", TopicContract.UNKNOWN_SUBSCRIPTION_REQUESTS,
        "throttle-count", TopicContract.THROTTLES,
        "plugin-export-count", TopicContract.PLUGIN_EXPORTS,
        "plugin-error-count", TopicContract.PLUGIN_ERRORS,
        "plugin-export-time-avg", TopicContract.PLUGIN_EXPORT_TIME_AVG,
        "plugin-export-time-max", TopicContract.PLUGIN_EXPORT_TIME_MAX);

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
    private final LongSupplier clockMs;
    private final ExportTimes exportTimes;

    BrokerMetricsCollector() {
        this(System::currentTimeMillis);
    }

    /** @param clockMs wall clock in ms (timestamps, and expiry of client instances); injectable for tests */
    BrokerMetricsCollector(LongSupplier clockMs) {
        this.clockMs = clockMs;
        this.exportTimes = new ExportTimes(clockMs, ExportTimes.MAX_INSTANCES);
    }

    /** The broker's client-metrics series that the contract reports (not the -rate ones). */
    static boolean isFollowed(MetricName name) {
        return GROUP.equals(name.group()) && CONTRACT_NAMES.containsKey(name.name());
    }

    void metricChange(KafkaMetric metric) {
        MetricName name = metric.metricName();
        if (!isFollowed(name) || series.size() >= MAX_SERIES) {
            return;
        }
        series.put(name, new Series(metric, clockMs.getAsLong() * 1_000_000L));
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
            exportTimes.retire(instance);
        }
    }

    /** Records one push's export time (ms) under its client instance id. */
    void recordExportTime(String clientInstanceId, double millis) {
        recordExportTime(clientInstanceId, millis, OptionalInt.empty(), false);
    }

    /**
     * Records one push's export time (ms); the push interval (when the plugin API passes it) and
     * the terminating flag decide when the instance's state is forgotten, as in the broker.
     */
    void recordExportTime(String clientInstanceId, double millis, OptionalInt pushIntervalMs, boolean terminating) {
        exportTimes.record(clientInstanceId, millis, pushIntervalMs, terminating);
    }

    /** Pushes timed so far for one client instance (0 when unknown or forgotten). */
    long collectExportTimeCount(String clientInstanceId) {
        return exportTimes.count(clientInstanceId);
    }

    /** Client instances whose export-time histogram is kept. */
    int trackedInstances() {
        return exportTimes.size();
    }

    /** Client instances forgotten because more than the cap pushed within their expiry. */
    long evictedInstances() {
        return exportTimes.evicted();
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
        long now = clockMs.getAsLong() * 1_000_000L;
        BrokerRecordEncoder.Points points = new BrokerRecordEncoder.Points();
        addSeriesPoints(points, now);
        points.exportTime().addAll(exportTimes.snapshotAndExpire(now));
        addPluginPoints(points, counters, now);
        List<byte[]> records = BrokerRecordEncoder.encode(nodeId, clusterId, points, instancesPerRecord);
        forgetRemovedSeries();
        return records;
    }

    private void addSeriesPoints(BrokerRecordEncoder.Points points, long now) {
        for (Map.Entry<MetricName, Series> entry : series.entrySet()) {
            MetricName name = entry.getKey();
            String metric = CONTRACT_NAMES.get(name.name());
            double value;
            try {
                value = entry.getValue().value();
            } catch (RuntimeException e) {
                continue;
            }
            if (metric == null || Double.isNaN(value) || Double.isInfinite(value)) {
                continue;
            }
            Map<String, String> attributes = new LinkedHashMap<>();
            String instance = name.tags().get(INSTANCE_ID_TAG);
            if (instance != null) {
                attributes.put(INSTANCE_ID_TAG, instance);
            }
            long start = entry.getValue().startTimeNanos;
            points.add(metric, switch (name.name()) {
                case "instance-count" -> OtlpMetrics.NumberPoint.ofLong(attributes, 0, now, Math.round(value));
                case "plugin-export-time-avg", "plugin-export-time-max" ->
                    OtlpMetrics.NumberPoint.ofDouble(attributes, 0, now, value);
                default -> OtlpMetrics.NumberPoint.ofLong(attributes, start, now, Math.round(value));
            });
        }
    }

    private static void addPluginPoints(BrokerRecordEncoder.Points points, PluginCounters counters, long now) {
        for (Map.Entry<String, Long> entry : counters.droppedByReason().entrySet()) {
            points.add(TopicContract.PLUGIN_DROPS, OtlpMetrics.NumberPoint.ofLong(Map.of("reason", entry.getKey()),
                counters.startTimeNanos(), now, entry.getValue()));
        }
        points.add(TopicContract.PLUGIN_EXPORTED,
            OtlpMetrics.NumberPoint.ofLong(Map.of(), counters.startTimeNanos(), now, counters.exported()));
        points.add(TopicContract.PLUGIN_BUFFERED, OtlpMetrics.NumberPoint.ofLong(Map.of(), 0, now, counters.buffered()));
    }

    private void forgetRemovedSeries() {
        Iterator<Map.Entry<MetricName, Series>> iterator = series.entrySet().iterator();
        while (iterator.hasNext()) {
            if (iterator.next().getValue().removed) {
                iterator.remove();
            }
        }
    }

    static long nowNanos() {
        return System.currentTimeMillis() * 1_000_000L;
    }
}
