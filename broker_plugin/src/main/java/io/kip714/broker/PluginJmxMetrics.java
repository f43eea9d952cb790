package io.kip714.broker;

import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.utils.Time;

import java.util.List;
import java.util.Map;

/**
 * The plugin's own health in JMX, through a Kafka {@link Metrics} registry of its own (a metrics
 * reporter is never handed the broker's registry):
 * {@code kafka.server:type=kip714-telemetry-plugin,node_id=N} with {@code dropped-count},
 * {@code exported-count}, {@code buffered-records}, and {@code dropped-count} per {@code reason}.
 */
final class PluginJmxMetrics implements AutoCloseable {
    static final String GROUP = "kip714-telemetry-plugin";

    private final Metrics metrics;
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

    PluginJmxMetrics(String nodeId, TelemetryTopicCore core) {
        metrics = new Metrics(new MetricConfig(), List.of(new JmxReporter()), Time.SYSTEM,
            new KafkaMetricsContext("kafka.server"));
        Map<String, String> tags = Map.of("node_id", nodeId);
        metrics.addMetric(metrics.metricName("dropped-count", GROUP,
            "Records (client pushes or broker metrics) the plugin dropped instead of writing", tags),
            (Measurable) (config, now) -> core.droppedTotal());
        metrics.addMetric(metrics.metricName("exported-count", GROUP,
            "Records the telemetry topic acknowledged", tags),
            (Measurable) (config, now) -> core.exportedTotal());
        metrics.addMetric(metrics.metricName("buffered-records", GROUP,
            "Records waiting in the plugin's buffer or its producer", tags),
            (Measurable) (config, now) -> core.buffered());
        for (String reason : TelemetryTopicCore.DROP_REASONS) {
            metrics.addMetric(metrics.metricName("dropped-count", GROUP,
                "Records dropped for this reason", Map.of("node_id", nodeId, "reason", reason)),
                (Measurable) (config, now) -> core.counters().droppedByReason().get(reason));
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            metrics.close();
        }
    }
}
