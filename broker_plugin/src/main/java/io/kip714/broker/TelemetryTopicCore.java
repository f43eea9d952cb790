package io.kip714.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * Shared core of both reporter shells. Request threads only copy the payload and offer it to a
 * bounded buffer; a single sender thread owns the producer (which may block on metadata or a
 * full buffer without ever touching a request thread). Nothing here throws into the broker on a
 * transient failure: records are dropped and counted instead.
 */
final class TelemetryTopicCore {
    private static final Logger log = LoggerFactory.getLogger(TelemetryTopicCore.class);

    static final String DROP_BUFFER_FULL = "buffer_full";
    static final String DROP_NOT_RUNNING = "not_running";
    static final String DROP_SEND_FAILED = "send_failed";
    static final String DROP_DELIVERY_FAILED = "delivery_failed";
    static final String DROP_PLUGIN_ERROR = "plugin_error";
    static final long TOPIC_CREATE_PATIENCE_MS = 60_000L;
    static final List<String> DROP_REASONS =
        List.of(DROP_BUFFER_FULL, DROP_NOT_RUNNING, DROP_SEND_FAILED, DROP_DELIVERY_FAILED, DROP_PLUGIN_ERROR);

    /** One record waiting for the sender thread. */
    record PendingRecord(byte[] key, byte[] value, List<Header> headers, long timestampMs)
        implements BoundedRecordBuffer.Sized {
        @Override
        public int sizeInBytes() {
            int size = key.length + value.length;
            for (Header header : headers) {
                size += header.key().length() + header.value().length;
            }
            return size;
        }
    }

    private final PluginConfig config;
    private final BoundedRecordBuffer buffer;
    private final BrokerMetricsCollector collector = new BrokerMetricsCollector();
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory;
    private final Map<String, AtomicLong> dropped = new LinkedHashMap<>();
    private final AtomicLong exported = new AtomicLong();
    private final AtomicLong inFlight = new AtomicLong();
    private final long startTimeNanos = BrokerMetricsCollector.nowNanos();
    private final PluginJmxMetrics jmxMetrics;

    private volatile String clusterId = "";
    private long droppedAtLastLog;
    private volatile boolean running;
    private Thread sender;
    private ScheduledExecutorService brokerMetricsTimer;

    TelemetryTopicCore(PluginConfig config, Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory,
                       boolean registerJmx) {
        this.config = config;
        this.buffer = new BoundedRecordBuffer(config.bufferMaxRecords, config.bufferMaxBytes);
        this.producerFactory = producerFactory;
        for (String reason : DROP_REASONS) {
            dropped.put(reason, new AtomicLong());
        }
        this.jmxMetrics = registerJmx ? new PluginJmxMetrics(config.nodeId, this) : null;
    }

    static TelemetryTopicCore forBroker(Map<String, ?> brokerConfigs) {
        PluginConfig config = new PluginConfig(brokerConfigs);
        return new TelemetryTopicCore(config, KafkaProducer::new, true);
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
        if (running) {
            return;
        }
        running = true;
        sender = new Thread(this::sendLoop, "kip714-telemetry-sender-" + config.nodeId);
        sender.setDaemon(true);
        sender.start();
        brokerMetricsTimer = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "kip714-broker-metrics-" + config.nodeId);
            thread.setDaemon(true);
            return thread;
        });
        brokerMetricsTimer.scheduleAtFixedRate(this::enqueueBrokerRecordSafely,
            config.brokerMetricsIntervalMs, config.brokerMetricsIntervalMs, TimeUnit.MILLISECONDS);
        log.info("kip714 telemetry plugin started: topic={} bootstrap={} brokerMetricsIntervalMs={}",
            config.topic, config.bootstrapServers, config.brokerMetricsIntervalMs);
    }

    synchronized void close() {
        if (!running) {
            if (jmxMetrics != null) {
                jmxMetrics.close();
            }
            return;
        }
        running = false;
        if (brokerMetricsTimer != null) {
            brokerMetricsTimer.shutdownNow();
        }
        if (sender != null) {
            sender.interrupt();
            try {
                sender.join(config.closeTimeoutMs + 1_000L);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (jmxMetrics != null) {
            jmxMetrics.close();
        }
        log.info("kip714 telemetry plugin closed: exported={} dropped={}", exported.get(), droppedTotal());
    }

    // ---- request path ----------------------------------------------------------------------

    /** Called on a broker request thread for every accepted push. Never throws, never blocks. */
    void export(AuthorizableRequestContext context, ClientTelemetryPayload payload, OptionalInt pushIntervalMs) {
        long startNanos = System.nanoTime();
        long acceptedAtMs = System.currentTimeMillis();
        String instanceId = "";
        try {
            PushLabels labels = PushLabels.from(context, payload, pushIntervalMs, config.nodeId, clusterId);
            instanceId = labels.clientInstanceId();
            byte[] value = copy(payload.data());
            PendingRecord record = new PendingRecord(instanceId.getBytes(StandardCharsets.UTF_8), value,
                labels.headers(), acceptedAtMs);
            offer(record);
        } catch (Throwable unexpected) {
            // A bug or an API mismatch must not turn into INVALID_RECORD for the client.
            countDrop(DROP_PLUGIN_ERROR);
            log.warn("kip714 telemetry plugin could not export a push; dropped", unexpected);
        } finally {
            collector.recordExportTime(instanceId, (System.nanoTime() - startNanos) / 1_000_000.0);
        }
    }

    boolean offer(PendingRecord record) {
        if (!running) {
            countDrop(DROP_NOT_RUNNING);
            return false;
        }
        if (!buffer.offer(record)) {
            countDrop(DROP_BUFFER_FULL);
            return false;
        }
        return true;
    }

    private static byte[] copy(ByteBuffer data) {
        if (data == null) {
            return new byte[0];
        }
        ByteBuffer view = data.duplicate();
        byte[] bytes = new byte[view.remaining()];
        view.get(bytes);
        return bytes;
    }

    // ---- broker metrics --------------------------------------------------------------------

    void metricChange(KafkaMetric metric) {
        collector.metricChange(metric);
    }

    void metricRemoval(KafkaMetric metric) {
        collector.metricRemoval(metric);
    }

    BrokerMetricsCollector collector() {
        return collector;
    }

    private void enqueueBrokerRecordSafely() {
        try {
            long droppedNow = droppedTotal();
            if (droppedNow != droppedAtLastLog) {
                // One line per interval at most, so a broken target cannot flood the broker log.
                log.warn("kip714 telemetry plugin dropped {} records so far (by reason {}); exported {}",
                    droppedNow, counters().droppedByReason(), exported.get());
                droppedAtLastLog = droppedNow;
            }
            enqueueBrokerRecord();
        } catch (Throwable unexpected) {
            countDrop(DROP_PLUGIN_ERROR);
            log.warn("kip714 telemetry plugin could not build the broker metrics record", unexpected);
        }
    }

    void enqueueBrokerRecord() {
        byte[] key = TopicContract.brokerRecordKey(config.nodeId).getBytes(StandardCharsets.UTF_8);
        long now = System.currentTimeMillis();
        for (byte[] value : collector.collect(config.nodeId, clusterId, counters(),
                config.brokerMetricsInstancesPerRecord)) {
            offer(new PendingRecord(key, value, PushLabels.brokerHeaders(config.nodeId, clusterId), now));
        }
    }

    BrokerMetricsCollector.PluginCounters counters() {
        Map<String, Long> drops = new LinkedHashMap<>();
        dropped.forEach((reason, count) -> drops.put(reason, count.get()));
        return new BrokerMetricsCollector.PluginCounters(startTimeNanos, drops, exported.get(), buffered());
    }

    void countDrop(String reason) {
        dropped.get(reason).incrementAndGet();
    }

    long droppedTotal() {
        long total = 0;
        for (AtomicLong count : dropped.values()) {
            total += count.get();
        }
        return total;
    }

    long exportedTotal() {
        return exported.get();
    }

    long buffered() {
        return buffer.records() + inFlight.get();
    }

    // ---- sender thread ---------------------------------------------------------------------

    Map<String, Object> producerConfigs() {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers);
        if (config.derivedSecurityProtocol != null) {
            props.put("security.protocol", config.derivedSecurityProtocol);
        }
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "kip714-telemetry-plugin-" + config.nodeId);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        // Only the sender thread calls send(), so blocking there is harmless; bounded anyway.
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        // The plugin's own producer must not push its telemetry back into the topic.
        props.put("enable.metrics.push", false);
        props.putAll(config.producerOverrides);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return props;
    }

    private void sendLoop() {
        Producer<byte[], byte[]> producer = null;
        try {
            Map<String, Object> props = producerConfigs();
            if (config.topicCreate) {
                ensureTopic(props);
            }
            producer = producerFactory.apply(props);
            while (running) {
                BoundedRecordBuffer.Sized next;
                try {
                    next = buffer.poll(200);
                } catch (InterruptedException e) {
                    continue; // close() interrupts us; the loop condition decides
                }
                if (next != null) {
                    send(producer, (PendingRecord) next);
                }
            }
        } catch (Throwable fatal) {
            log.error("kip714 telemetry sender stopped; further pushes are dropped", fatal);
            running = false;
        } finally {
            // Records not yet handed to the producer are dropped on close (sending them could block
            // shutdown for max.block.ms while the broker's listeners are already gone); records
            // already in the producer get close.timeout.ms to be delivered.
            Thread.interrupted();
            drainAsDropped();
            if (producer != null) {
                try {
                    producer.close(Duration.ofMillis(config.closeTimeoutMs));
                } catch (Throwable e) {
                    log.warn("kip714 telemetry producer did not close cleanly", e);
                }
            }
        }
    }

    private void send(Producer<byte[], byte[]> producer, PendingRecord record) {
        ProducerRecord<byte[], byte[]> producerRecord = new ProducerRecord<>(config.topic, null,
            record.timestampMs(), record.key(), record.value(), record.headers());
        inFlight.incrementAndGet();
        try {
            producer.send(producerRecord, (metadata, exception) -> {
                inFlight.decrementAndGet();
                if (exception == null) {
                    exported.incrementAndGet();
                } else {
                    countDrop(DROP_DELIVERY_FAILED);
                    log.debug("kip714 telemetry record not delivered", exception);
                }
            });
        } catch (Throwable e) {
            inFlight.decrementAndGet();
            countDrop(DROP_SEND_FAILED);
            log.debug("kip714 telemetry record not sent", e);
        }
    }

    private void drainAsDropped() {
        try {
            while (buffer.poll(0) != null) {
                countDrop(DROP_NOT_RUNNING);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Creates the topic when missing, with the broker's default partitions and replication unless
     * configured. Retries while the cluster is still starting, for at most
     * {@link #TOPIC_CREATE_PATIENCE_MS}; gives up (and sends anyway) sooner on a non-retriable error
     * such as missing CREATE permission. Pushes meanwhile wait in the bounded buffer.
     */
    private void ensureTopic(Map<String, Object> producerProps) {
        Map<String, Object> adminProps = new HashMap<>();
        for (Map.Entry<String, Object> entry : producerProps.entrySet()) {
            if (AdminClientConfig.configNames().contains(entry.getKey())) {
                adminProps.put(entry.getKey(), entry.getValue());
            }
        }
        adminProps.put(AdminClientConfig.CLIENT_ID_CONFIG, "kip714-telemetry-plugin-admin-" + config.nodeId);
        adminProps.put("enable.metrics.push", false);
        adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        adminProps.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        Optional<Integer> partitions = config.topicPartitions > 0 ? Optional.of(config.topicPartitions) : Optional.empty();
        Optional<Short> replication = config.topicReplicationFactor > 0
            ? Optional.of((short) config.topicReplicationFactor) : Optional.empty();
        long giveUpAt = System.currentTimeMillis() + TOPIC_CREATE_PATIENCE_MS;
        try (Admin admin = Admin.create(adminProps)) {
            while (running) {
                if (System.currentTimeMillis() > giveUpAt) {
                    log.warn("kip714 telemetry plugin gave up creating topic {} after {} ms; sending anyway",
                        config.topic, TOPIC_CREATE_PATIENCE_MS);
                    return;
                }
                try {
                    admin.createTopics(List.of(new NewTopic(config.topic, partitions, replication))).all().get();
                    log.info("kip714 telemetry plugin created topic {}", config.topic);
                    return;
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (cause instanceof TopicExistsException) {
                        return;
                    }
                    if (!(cause instanceof org.apache.kafka.common.errors.RetriableException)) {
                        log.warn("kip714 telemetry plugin could not create topic {}; sending anyway", config.topic, cause);
                        return;
                    }
                    log.info("kip714 telemetry plugin waiting for the cluster to create topic {}: {}",
                        config.topic, cause.toString());
                }
                try {
                    Thread.sleep(1_000L);
                } catch (InterruptedException e) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            log.warn("kip714 telemetry plugin could not check topic {}; sending anyway", config.topic, e);
        }
    }
}
