package io.kip714.broker;

import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;
import java.util.function.Function;

/**
 * The thread that owns the plugin's producer: it creates the topic if asked, then moves records
 * from the buffer to the producer. The producer may block here (metadata, a full
 * {@code buffer.memory}) without ever holding up a broker request thread.
 */
final class TelemetrySender {
    private static final Logger log = LoggerFactory.getLogger(TelemetrySender.class);
    static final long POLL_MS = 200L;

    private final PluginConfig config;
    private final BoundedRecordBuffer buffer;
    private final PluginStats stats;
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory;
    private final Runnable onFatal;
    private volatile boolean running;
    private Thread thread;

    TelemetrySender(PluginConfig config, BoundedRecordBuffer buffer, PluginStats stats,
                    Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory, Runnable onFatal) {
        this.config = config;
        this.buffer = buffer;
        this.stats = stats;
        this.producerFactory = producerFactory;
        this.onFatal = onFatal;
    }

    synchronized void start() {
        running = true;
        thread = new Thread(this::run, "kip714-telemetry-sender-" + config.nodeId);
        thread.setDaemon(true);
        thread.start();
    }

    /** Stops the thread and waits for it, at most {@code close.timeout.ms} plus a second. */
    synchronized void stop() {
        running = false;
        if (thread == null) {
            return;
        }
        thread.interrupt();
        try {
            thread.join(config.closeTimeoutMs + 1_000L);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        Producer<byte[], byte[]> producer = null;
        try {
            if (config.topicCreate) {
                new TopicCreator(config, ProducerSettings.admin(config), () -> running, Thread::sleep).ensureTopic();
            }
            producer = producerFactory.apply(ProducerSettings.producer(config));
            while (running) {
                BoundedRecordBuffer.Sized next;
                try {
                    next = buffer.poll(POLL_MS);
                } catch (InterruptedException e) {
                    continue; // stop() interrupts us; the loop condition decides
                }
                if (next != null) {
                    send(producer, (PendingRecord) next);
                }
            }
        } catch (Throwable fatal) {
            log.error("kip714 telemetry sender stopped; further pushes are dropped", fatal);
            running = false;
            onFatal.run();
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
        stats.sendStarted();
        try {
            producer.send(producerRecord, (metadata, exception) -> {
                stats.sendFinished();
                if (exception == null) {
                    stats.countExported();
                } else {
                    stats.countDrop(PluginStats.DROP_DELIVERY_FAILED);
                    log.debug("kip714 telemetry record not delivered", exception);
                }
            });
        } catch (Throwable e) {
            stats.sendFinished();
            stats.countDrop(PluginStats.DROP_SEND_FAILED);
            log.debug("kip714 telemetry record not sent", e);
        }
    }

    private void drainAsDropped() {
        try {
            while (buffer.poll(0) != null) {
                stats.countDrop(PluginStats.DROP_NOT_RUNNING);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
