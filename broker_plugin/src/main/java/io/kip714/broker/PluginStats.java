package io.kip714.broker;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The plugin's own counters, shared by the request-thread intake, the sender and the broker
 * metrics task; reported in JMX and in the broker records.
 */
final class PluginStats {
    static final String DROP_BUFFER_FULL = "buffer_full";
    static final String DROP_NOT_RUNNING = "not_running";
    static final String DROP_SEND_FAILED = "send_failed";
    static final String DROP_DELIVERY_FAILED = "delivery_failed";
    static final String DROP_PLUGIN_ERROR = "plugin_error";
    /** Larger than the producer's max.request.size (or the topic's max.message.bytes). */
    static final String DROP_OVERSIZED = "oversized";
    static final List<String> DROP_REASONS = List.of(DROP_BUFFER_FULL, DROP_NOT_RUNNING, DROP_SEND_FAILED,
        DROP_DELIVERY_FAILED, DROP_PLUGIN_ERROR, DROP_OVERSIZED);

    private final Map<String, AtomicLong> dropped = new LinkedHashMap<>();
    private final AtomicLong exported = new AtomicLong();
    private final AtomicLong inFlight = new AtomicLong();
    private final AtomicLong producerBuildFailures = new AtomicLong();
    private volatile boolean producerUnavailable;
    private final long startTimeNanos = BrokerMetricsCollector.nowNanos();

    PluginStats() {
        for (String reason : DROP_REASONS) {
            dropped.put(reason, new AtomicLong());
        }
    }

    void countDrop(String reason) {
        dropped.get(reason).incrementAndGet();
    }

    long dropped(String reason) {
        return dropped.get(reason).get();
    }

    long droppedTotal() {
        long total = 0;
        for (AtomicLong count : dropped.values()) {
            total += count.get();
        }
        return total;
    }

    Map<String, Long> droppedByReason() {
        Map<String, Long> drops = new LinkedHashMap<>();
        dropped.forEach((reason, count) -> drops.put(reason, count.get()));
        return drops;
    }

    void countExported() {
        exported.incrementAndGet();
    }

    long exported() {
        return exported.get();
    }

    /** A record handed to the producer; {@link #sendFinished()} when its callback ran. */
    void sendStarted() {
        inFlight.incrementAndGet();
    }

    void sendFinished() {
        inFlight.decrementAndGet();
    }

    long inFlight() {
        return inFlight.get();
    }

    void countProducerBuildFailure() {
        producerBuildFailures.incrementAndGet();
    }

    /** Failed attempts to build the plugin's producer since start. */
    long producerBuildFailures() {
        return producerBuildFailures.get();
    }

    /** True while the sender runs without a producer (not built yet, or building failed). */
    void producerUnavailable(boolean unavailable) {
        producerUnavailable = unavailable;
    }

    boolean producerUnavailable() {
        return producerUnavailable;
    }

    long startTimeNanos() {
        return startTimeNanos;
    }
}
