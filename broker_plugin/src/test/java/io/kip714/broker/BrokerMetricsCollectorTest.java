package io.kip714.broker;

import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.CumulativeSum;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Feeds the collector from a real Kafka {@link Metrics} registry, the way the broker registers its
 * client-metrics group, and walks the encoded OTLP.
 */
class BrokerMetricsCollectorTest {
    private static final String INSTANCE = "WqvcjYoHRpK09ZNcRFk23Q";

    /** Forwards registry events to the collector, as a broker metrics reporter would. */
    static final class Forwarder implements MetricsReporter {
        final BrokerMetricsCollector collector;

        Forwarder(BrokerMetricsCollector collector) {
            this.collector = collector;
        }

        @Override public void init(List<KafkaMetric> metrics) { metrics.forEach(collector::metricChange); }
        @Override public void metricChange(KafkaMetric metric) { collector.metricChange(metric); }
        @Override public void metricRemoval(KafkaMetric metric) { collector.metricRemoval(metric); }
        @Override public void close() { }
        @Override public void configure(Map<String, ?> configs) { }
    }

    private static Map<String, ProtoReader> metricsByName(byte[] metricsData) {
        Map<String, ProtoReader> byName = new HashMap<>();
        for (ProtoReader metric : new ProtoReader(metricsData).message(1).message(2).messages(2)) {
            byName.put(metric.string(1), metric);
        }
        return byName;
    }

    @Test
    void brokerClientMetricsBecomeContractMetrics() {
        BrokerMetricsCollector collector = new BrokerMetricsCollector();
        try (Metrics metrics = new Metrics()) {
            metrics.addReporter(new Forwarder(collector));
            metrics.addMetric(metrics.metricName("instance-count", "client-metrics"), (Measurable) (c, now) -> 3);
            metrics.addMetric(metrics.metricName("request-rate", "other-group"), (Measurable) (c, now) -> 1);
            Map<String, String> tags = Map.of("client_instance_id", INSTANCE);
            Sensor throttles = metrics.sensor("throttle-" + INSTANCE);
            throttles.add(metrics.metricName("throttle-count", "client-metrics", tags), new CumulativeSum());
            throttles.record(1);
            throttles.record(1);
            collector.recordExportTime(INSTANCE, 0.03);
            collector.recordExportTime(INSTANCE, 2.0);

            List<byte[]> values = collector.collect("1", "cluster-x", new BrokerMetricsCollector.PluginCounters(
                1L, Map.of("buffer_full", 4L), 9L, 2L));
            assertEquals(1, values.size());
            byte[] value = values.get(0);
            ProtoReader resourceMetrics = new ProtoReader(value).message(1);
            assertEquals(Map.of("node_id", "1", "cluster_id", "cluster-x"), resourceMetrics.message(1).stringAttributes(1));

            Map<String, ProtoReader> byName = metricsByName(value);
            assertEquals(3L, byName.get(TopicContract.INSTANCE_COUNT).message(5).message(1).number(6));
            ProtoReader throttleSum = byName.get(TopicContract.THROTTLES).message(7);
            assertEquals(2L, throttleSum.message(1).number(6));
            assertEquals(Map.of("client_instance_id", INSTANCE), throttleSum.message(1).stringAttributes(7));
            assertEquals(OtlpMetrics.TEMPORALITY_CUMULATIVE, throttleSum.number(2));
            assertEquals(1L, throttleSum.number(3));

            ProtoReader histogramPoint = byName.get(TopicContract.PLUGIN_EXPORT_TIME).message(9).message(1);
            assertEquals(2L, histogramPoint.number(4));
            assertEquals(2.03, Double.longBitsToDouble(histogramPoint.number(5)), 1e-9);

            ProtoReader drops = byName.get(TopicContract.PLUGIN_DROPS).message(7).message(1);
            assertEquals(4L, drops.number(6));
            assertEquals(Map.of("reason", "buffer_full"), drops.stringAttributes(7));
            assertEquals(9L, byName.get(TopicContract.PLUGIN_EXPORTED).message(7).message(1).number(6));
            assertFalse(byName.containsKey("request-rate"));

            // The broker drops a departed client's sensors: its last value is reported once more.
            metrics.removeSensor("throttle-" + INSTANCE);
            Map<String, ProtoReader> afterRemoval = metricsByName(collector.collect("1", "c",
                new BrokerMetricsCollector.PluginCounters(1L, Map.of(), 0L, 0L)).get(0));
            assertEquals(2L, afterRemoval.get(TopicContract.THROTTLES).message(7).message(1).number(6));
            Map<String, ProtoReader> later = metricsByName(collector.collect("1", "c",
                new BrokerMetricsCollector.PluginCounters(1L, Map.of(), 0L, 0L)).get(0));
            assertFalse(later.containsKey(TopicContract.THROTTLES));
            assertTrue(later.containsKey(TopicContract.INSTANCE_COUNT));
        }
    }

    @Test
    void manyClientsAreSplitAcrossRecordsWithEachSeriesOnce() {
        BrokerMetricsCollector collector = new BrokerMetricsCollector();
        try (Metrics metrics = new Metrics()) {
            metrics.addReporter(new Forwarder(collector));
            metrics.addMetric(metrics.metricName("instance-count", "client-metrics"), (Measurable) (c, now) -> 5);
            List<String> instances = List.of("i-a", "i-b", "i-c", "i-d", "i-e");
            for (String instance : instances) {
                Sensor throttles = metrics.sensor("throttle-" + instance);
                throttles.add(metrics.metricName("throttle-count", "client-metrics",
                    Map.of("client_instance_id", instance)), new CumulativeSum());
                throttles.record(1);
                collector.recordExportTime(instance, 0.5);
            }

            List<byte[]> values = collector.collect("1", "c",
                new BrokerMetricsCollector.PluginCounters(1L, Map.of("buffer_full", 1L), 7L, 0L), 2);

            assertEquals(3, values.size());
            Map<String, Integer> throttleSeen = new HashMap<>();
            Map<String, Integer> histogramSeen = new HashMap<>();
            for (int index = 0; index < values.size(); index++) {
                Map<String, ProtoReader> byName = metricsByName(values.get(index));
                boolean first = index == 0;
                assertEquals(first, byName.containsKey(TopicContract.INSTANCE_COUNT));
                assertEquals(first, byName.containsKey(TopicContract.PLUGIN_DROPS));
                assertEquals(first, byName.containsKey(TopicContract.PLUGIN_EXPORTED));
                List<ProtoReader> throttlePoints = byName.get(TopicContract.THROTTLES).message(7).messages(1);
                assertTrue(throttlePoints.size() <= 2);
                for (ProtoReader point : throttlePoints) {
                    throttleSeen.merge(point.stringAttributes(7).get("client_instance_id"), 1, Integer::sum);
                }
                for (ProtoReader point : byName.get(TopicContract.PLUGIN_EXPORT_TIME).message(9).messages(1)) {
                    histogramSeen.merge(point.stringAttributes(9).get("client_instance_id"), 1, Integer::sum);
                }
            }
            Map<String, Integer> once = new HashMap<>();
            instances.forEach(instance -> once.put(instance, 1));
            assertEquals(once, throttleSeen);
            assertEquals(once, histogramSeen);
        }
    }

    @Test
    void followsOnlyTheClientMetricsGroup() {
        assertTrue(BrokerMetricsCollector.isFollowed(new MetricName("instance-count", "client-metrics", "", Map.of())));
        assertFalse(BrokerMetricsCollector.isFollowed(new MetricName("instance-count", "other", "", Map.of())));
    }
}
