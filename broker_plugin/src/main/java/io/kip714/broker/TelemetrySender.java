package io.kip714.broker;

import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * The thread that owns the plugin's producer: it builds the producer (retrying with exponential
 * backoff while that fails), creates the topic if asked, then moves records from the buffer to the
 * producer. The producer may block here (metadata, a full {@code buffer.memory}) without ever
 * holding up a broker request thread. It never stops for good while the plugin runs.
 */
final class TelemetrySender {
    private static final Logger log = LoggerFactory.getLogger(TelemetrySender.class);
    static final long POLL_MS = 200L;
    static final long BACKOFF_INITIAL_MS = 1_000L;
    static final long BACKOFF_MAX_MS = 60_000L;
    static final long ERROR_LOG_INTERVAL_MS = 10_000L;
    static final long OVERSIZED_LOG_INTERVAL_MS = 60_000L;

    private final PluginConfig config;
    private final BoundedRecordBuffer buffer;
    private final PluginStats stats;
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory;
    private final Sleeper sleeper;
    private final LongSupplier clockMs;
    private final LogRateLimiter buildErrorLog;
    private final LogRateLimiter oversizedLog;
    private final AtomicLong oversizedWarnings = new AtomicLong();
    private final Object maxRequestSize;
    private final CountDownLatch stopping = new CountDownLatch(1);
    private volatile boolean running;
    private Thread thread;

    /**
     * @param sleeper waits between build attempts; null for the real wait, which {@link #stop()}
     *                cuts short
     */
    TelemetrySender(PluginConfig config, BoundedRecordBuffer buffer, PluginStats stats,
                    Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory,
                    LongSupplier clockMs, Sleeper sleeper) {
        this.config = config;
        this.buffer = buffer;
        this.stats = stats;
        this.producerFactory = producerFactory;
        this.sleeper = sleeper != null ? sleeper : this::waitUnlessStopping;
        this.clockMs = clockMs;
        this.buildErrorLog = new LogRateLimiter(ERROR_LOG_INTERVAL_MS, clockMs);
        this.oversizedLog = new LogRateLimiter(OVERSIZED_LOG_INTERVAL_MS, clockMs);
        this.maxRequestSize = ProducerSettings.producer(config).getOrDefault("max.request.size", 1_048_576);
    }

    synchronized void start() {
        if (thread != null || stopping.getCount() == 0) {
            return;
        }
        running = true;
        stats.producerUnavailable(true);
        thread = new Thread(this::run, "kip714-telemetry-sender-" + config.nodeId);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Stops the thread in whatever it is doing (backing off, creating the topic, blocked in send)
     * and waits for it, at most {@code close.timeout.ms} plus a second.
     */
    synchronized void stop() {
        running = false;
        stopping.countDown();
        if (thread == null) {
            return;
        }
        thread.interrupt();
        try {
            thread.join(config.closeTimeoutMs + 1_000L);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        stats.producerUnavailable(false);
    }

    private void waitUnlessStopping(long millis) throws InterruptedException {
        if (stopping.await(millis, TimeUnit.MILLISECONDS)) {
            throw new InterruptedException("kip714 telemetry sender stopping");
        }
    }

    private void run() {
        Producer<byte[], byte[]> producer = null;
        try {
            producer = buildWithBackoff();
            if (producer != null && config.topicCreate && running) {
                new TopicCreator(config, () -> TopicCreator.kafkaAdmin(ProducerSettings.admin(config)), () -> running,
                    sleeper, clockMs).ensureTopic();
            }
            if (producer != null) {
                sendLoop(producer);
            }
        } catch (Throwable unexpected) {
            log.error("kip714 telemetry sender stopped on an unexpected error; further pushes are dropped", unexpected);
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

    /**
     * Builds the producer, retrying after 1 s, 2 s, 4 s ... up to a minute between attempts while
     * building fails (a bad {@code kip714.producer.*} value, an unresolvable bootstrap address).
     * Pushes meanwhile wait in the bounded buffer, then are dropped as {@code buffer_full}.
     * Returns null when the plugin stops first.
     */
    private Producer<byte[], byte[]> buildWithBackoff() {
        Backoff backoff = new Backoff(BACKOFF_INITIAL_MS, BACKOFF_MAX_MS);
        long failures = 0;
        while (running) {
            try {
                Producer<byte[], byte[]> producer = producerFactory.apply(ProducerSettings.producer(config));
                stats.producerUnavailable(false);
                if (failures > 0) {
                    log.warn("kip714 telemetry plugin built its producer after {} failed attempts", failures);
                }
                return producer;
            } catch (Throwable e) {
                failures++;
                stats.countProducerBuildFailure();
                long delay = backoff.next();
                logBuildFailure(failures, delay, e);
                try {
                    sleeper.sleep(delay);
                } catch (InterruptedException stoppingNow) {
                    return null;
                }
            }
        }
        return null;
    }

    private void logBuildFailure(long failures, long delayMs, Throwable error) {
        long suppressed = buildErrorLog.acquire();
        if (suppressed == LogRateLimiter.SUPPRESSED) {
            return;
        }
        String message = "kip714 telemetry plugin cannot build its producer (attempt {}, {} similar lines suppressed); "
            + "every push is buffered, then dropped, until it can. Check kip714.bootstrap.servers and "
            + "kip714.producer.*. Retrying in {} ms";
        if (failures == 1) {
            log.error(message, failures, suppressed, delayMs, error);
        } else {
            log.error(message + ": {}", failures, suppressed, delayMs, error.toString());
        }
    }

    private void sendLoop(Producer<byte[], byte[]> producer) {
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
                    countFailure(record, exception, PluginStats.DROP_DELIVERY_FAILED);
                }
            });
        } catch (Throwable e) {
            stats.sendFinished();
            countFailure(record, e, PluginStats.DROP_SEND_FAILED);
        }
    }

    private void countFailure(PendingRecord record, Throwable error, String reason) {
        if (error instanceof RecordTooLargeException) {
            stats.countDrop(PluginStats.DROP_OVERSIZED);
            warnOversized(record, error);
            return;
        }
        stats.countDrop(reason);
        log.debug("kip714 telemetry record not written ({})", reason, error);
    }

    /** At most one WARN per minute, naming the record and how many were not logged since the last. */
    private void warnOversized(PendingRecord record, Throwable error) {
        long suppressed = oversizedLog.acquire();
        if (suppressed == LogRateLimiter.SUPPRESSED) {
            return;
        }
        oversizedWarnings.incrementAndGet();
        String key = record.keyText();
        String what = key.equals(TopicContract.brokerRecordKey(config.nodeId))
            ? "broker metrics record " + key : "push from client instance " + key;
        log.warn("kip714 telemetry plugin dropped an oversized record ({}), about {} bytes, over the producer's "
            + "max.request.size ({}, kip714.producer.max.request.size) or the topic's max.message.bytes; {} more "
            + "oversized records dropped without a log line since the last one: {}",
            what, record.sizeInBytes(), maxRequestSize, suppressed, error.getMessage());
    }

    /** WARN lines logged for oversized records (the rest were rate-limited). */
    long oversizedWarnings() {
        return oversizedWarnings.get();
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
