package io.kip714.broker;

import org.apache.kafka.common.ClusterResource;
import org.apache.kafka.common.ClusterResourceListener;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsContext;
import org.apache.kafka.common.metrics.MetricsReporter;

import java.util.List;
import java.util.Map;

/**
 * MetricsReporter plumbing shared by both shells; references only interfaces that exist since
 * Kafka 3.7, so the 3.x shell that extends it loads on 3.x brokers.
 */
abstract class AbstractTelemetryTopicReporter implements MetricsReporter, ClusterResourceListener {
    static final String CLUSTER_ID_LABEL = "kafka.cluster.id";

    private volatile TelemetryTopicCore core;

    @Override
    public void configure(Map<String, ?> configs) {
        core = TelemetryTopicCore.forBroker(configs);
    }

    @Override
    public void contextChange(MetricsContext metricsContext) {
        TelemetryTopicCore current = core;
        String clusterId = metricsContext.contextLabels().get(CLUSTER_ID_LABEL);
        if (current != null && clusterId != null) {
            current.clusterId(clusterId);
        }
    }

    @Override
    public void onUpdate(ClusterResource clusterResource) {
        TelemetryTopicCore current = core;
        if (current != null && clusterResource != null && clusterResource.clusterId() != null) {
            current.clusterId(clusterResource.clusterId());
        }
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
        TelemetryTopicCore current = requireCore();
        for (KafkaMetric metric : metrics) {
            current.metricChange(metric);
        }
        current.start();
    }

    @Override
    public void metricChange(KafkaMetric metric) {
        TelemetryTopicCore current = core;
        if (current != null) {
            current.metricChange(metric);
        }
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
        TelemetryTopicCore current = core;
        if (current != null) {
            current.metricRemoval(metric);
        }
    }

    @Override
    public void close() {
        TelemetryTopicCore current = core;
        if (current != null) {
            current.close();
        }
    }

    TelemetryTopicCore requireCore() {
        TelemetryTopicCore current = core;
        if (current == null) {
            throw new IllegalStateException("configure() was not called");
        }
        return current;
    }

    /** Null before configure(): a push then is dropped by the caller's null check. */
    TelemetryTopicCore coreOrNull() {
        return core;
    }
}
