package io.kip714.broker;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * Shared core of both reporter shells: wires the request-thread intake ({@link PushIntake}), the
 * sender thread that owns the producer ({@link TelemetrySender}) and the broker metrics
 * ({@link BrokerMetricsTask}, {@link BrokerMetricsCollector}) over one bounded buffer, and runs
 * their lifecycle. Nothing here throws into the broker on a transient failure: records are
 * dropped and counted instead.
 */
final class TelemetryTopicCore {
    private static final Logger log = LoggerFactory.getLogger(TelemetryTopicCore.class);

    static final String DROP_BUFFER_FULL = PluginStats.DROP_BUFFER_FULL;
    static final String DROP_NOT_RUNNING = PluginStats.DROP_NOT_RUNNING;
    static final String DROP_SEND_FAILED = PluginStats.DROP_SEND_FAILED;
    static final String DROP_DELIVERY_FAILED = PluginStats.DROP_DELIVERY_FAILED;
    static final String DROP_PLUGIN_ERROR = PluginStats.DROP_PLUGIN_ERROR;
    static final List<String> DROP_REASONS = PluginStats.DROP_REASONS;

    private final PluginConfig config;
    private final BoundedRecordBuffer buffer;
    private final PluginStats stats = new PluginStats();
    private final BrokerMetricsCollector collector = new BrokerMetricsCollector();
    private final PushIntake intake;
    private final TelemetrySender sender;
    private final BrokerMetricsTask brokerMetrics;
    private final PluginJmxMetrics jmxMetrics;

    private volatile String clusterId = "";
    private boolean started;
    private boolean closed;

    TelemetryTopicCore(PluginConfig config, Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory,
                       boolean registerJmx) {
        this(config, producerFactory, registerJmx, System::currentTimeMillis, null);
    }

    /**
     * @param clockMs wall clock (ms) for rate-limited logs; injectable for tests
     * @param sleeper the sender's wait between producer build attempts; null for the real one
     */
    TelemetryTopicCore(PluginConfig config, Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory,
                       boolean registerJmx, LongSupplier clockMs, Sleeper sleeper) {
        this.config = config;
        this.buffer = new BoundedRecordBuffer(config.bufferMaxRecords, config.bufferMaxBytes);
        this.intake = new PushIntake(config, buffer, stats, collector, this::clusterId);
        this.sender = new TelemetrySender(config, buffer, stats, producerFactory, clockMs, sleeper);
        this.brokerMetrics = new BrokerMetricsTask(config, collector, stats, intake, this::clusterId, this::buffered);
        this.jmxMetrics = registerJmx ? new PluginJmxMetrics(config.nodeId, stats, this::buffered,
            collector::trackedInstances) : null;
    }

    static TelemetryTopicCore forBroker(Map<String, ?> brokerConfigs) {
        return new TelemetryTopicCore(new PluginConfig(brokerConfigs), KafkaProducer::new, true);
    }

    PluginConfig config() {
        return config;
    }

    void clusterId(String clusterId) {
        if (clusterId != null) {
            this.clusterId = clusterId;
        }
    }

    String clusterId() {
        return clusterId;
    }

    // ---- lifecycle -------------------------------------------------------------------------

    synchronized void start() {
        if (started || closed) {
            return;
        }
        started = true;
        intake.accepting(true);
        sender.start();
        brokerMetrics.start();
        log.info("kip714 telemetry plugin started: topic={} bootstrap={} brokerMetricsIntervalMs={}",
            config.topic, config.bootstrapServers, config.brokerMetricsIntervalMs);
    }

    synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        intake.accepting(false);
        brokerMetrics.stop();
        sender.stop();
        if (jmxMetrics != null) {
            jmxMetrics.close();
        }
        if (started) {
            log.info("kip714 telemetry plugin closed: exported={} dropped={}", stats.exported(), stats.droppedTotal());
        }
    }

    // ---- delegates -------------------------------------------------------------------------

    /** Called on a broker request thread for every accepted push. Never throws, never blocks. */
    void export(AuthorizableRequestContext context, ClientTelemetryPayload payload, OptionalInt pushIntervalMs) {
        intake.export(context, payload, pushIntervalMs);
    }

    boolean offer(PendingRecord record) {
        return intake.offer(record);
    }

    void metricChange(KafkaMetric metric) {
        collector.metricChange(metric);
    }

    void metricRemoval(KafkaMetric metric) {
        collector.metricRemoval(metric);
    }

    BrokerMetricsCollector collector() {
        return collector;
    }

    void enqueueBrokerRecord() {
        brokerMetrics.enqueueBrokerRecords();
    }

    BrokerMetricsCollector.PluginCounters counters() {
        return brokerMetrics.counters();
    }

    PluginStats stats() {
        return stats;
    }

    void countDrop(String reason) {
        stats.countDrop(reason);
    }

    long droppedTotal() {
        return stats.droppedTotal();
    }

    long exportedTotal() {
        return stats.exported();
    }

    long buffered() {
        return buffer.records() + stats.inFlight();
    }

    long oversizedWarnings() {
        return sender.oversizedWarnings();
    }

    Map<String, Object> producerConfigs() {
        return ProducerSettings.producer(config);
    }
}
