package io.kip714.broker;

import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.utils.Time;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * The plugin's own health in JMX, through a Kafka {@link Metrics} registry of its own (a metrics
 * reporter is never handed the broker's registry):
 * {@code kafka.server:type=kip714-telemetry-plugin,node_id=N} with {@code dropped-count},
 * {@code exported-count}, {@code buffered-records}, {@code producer-unavailable},
 * {@code producer-build-failure-count}, {@code tracked-client-instances}, and {@code dropped-count} per
 * {@code reason}.
 */
final class PluginJmxMetrics implements AutoCloseable {
    static final String GROUP = "kip714-telemetry-plugin";

    private final Metrics metrics;
    private final AtomicBoolean closed = new AtomicBoolean();

    PluginJmxMetrics(String nodeId, PluginStats stats, LongSupplier buffered, LongSupplier trackedInstances) {
        metrics = new Metrics(new MetricConfig(), List.of(new JmxReporter()), Time.SYSTEM,
            new KafkaMetricsContext("kafka.server"));
        Map<String, String> tags = Map.of("node_id", nodeId);
        add("dropped-count", "Records (client pushes or broker metrics) the plugin dropped instead of writing", tags,
            stats::droppedTotal);
        add("exported-count", "Records the telemetry topic acknowledged", tags, stats::exported);
        add("buffered-records", "Records waiting in the plugin's buffer or its producer", tags, buffered);
        add("producer-unavailable", "1 while the plugin runs without a producer (building it failed), else 0", tags,
            () -> stats.producerUnavailable() ? 1 : 0);
        add("producer-build-failure-count", "Failed attempts to build the plugin's producer", tags,
            stats::producerBuildFailures);
        add("tracked-client-instances", "Client instances whose export-time histogram the plugin keeps", tags,
            trackedInstances);
        for (String reason : PluginStats.DROP_REASONS) {
            add("dropped-count", "Records dropped for this reason", Map.of("node_id", nodeId, "reason", reason),
                () -> stats.dropped(reason));
        }
    }

    private void add(String name, String description, Map<String, String> tags, LongSupplier value) {
        metrics.addMetric(metrics.metricName(name, GROUP, description, tags),
            (Measurable) (config, now) -> value.getAsLong());
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            metrics.close();
        }
    }
}
