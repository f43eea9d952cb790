package io.kip714.broker;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.function.LongSupplier;

/**
 * The plugin's export-time histogram per client instance, with memory bounded the way the broker
 * bounds its own client state: at most {@link #MAX_INSTANCES} instances (the least recently pushed
 * is evicted first), each forgotten {@code max(60 s, 3 x push interval)} after its last push, or
 * right after its terminating push (or the broker's removal of its metrics) has been reported.
 * Request threads record; the broker metrics timer snapshots and expires.
 */
final class ExportTimes {
    /** The broker's own cap on client instances (ClientMetricsManager's cache size). */
    static final int MAX_INSTANCES = 16_384;
    /** The broker's minimum client state expiry. */
    static final long MIN_EXPIRY_MS = 60_000L;
    /** The broker's default push interval, assumed when the plugin API does not pass it (3.x). */
    static final long DEFAULT_PUSH_INTERVAL_MS = 300_000L;

    private static final class Entry {
        final ExportTimeHistogram histogram;
        long lastPushMs;
        long expiryMs;
        boolean done;

        Entry(ExportTimeHistogram histogram) {
            this.histogram = histogram;
        }
    }

    private final LongSupplier clockMs;
    private final int maxInstances;
    private long evicted;
    /** Access-ordered, so the eldest entry is the least recently pushed; guarded by {@code this}. */
    private final LinkedHashMap<String, Entry> entries = new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Entry> eldest) {
            if (size() > maxInstances) {
                evicted++;
                return true;
            }
            return false;
        }
    };

    ExportTimes(LongSupplier clockMs, int maxInstances) {
        this.clockMs = clockMs;
        this.maxInstances = maxInstances;
    }

    /** Records one push's export time; called on a broker request thread. */
    void record(String instanceId, double millis, OptionalInt pushIntervalMs, boolean terminating) {
        long now = clockMs.getAsLong();
        long interval = pushIntervalMs.isPresent() ? pushIntervalMs.getAsInt() : DEFAULT_PUSH_INTERVAL_MS;
        Entry entry;
        synchronized (this) {
            entry = entries.get(instanceId);
            if (entry == null) {
                entry = new Entry(new ExportTimeHistogram(now * 1_000_000L));
                entries.put(instanceId, entry);
            }
            entry.lastPushMs = now;
            entry.expiryMs = Math.max(MIN_EXPIRY_MS, 3 * interval);
            entry.done = entry.done || terminating;
        }
        entry.histogram.record(millis);
    }

    /** The broker removed this instance's metrics: report it once more, then forget it. */
    synchronized void retire(String instanceId) {
        Entry entry = entries.get(instanceId);
        if (entry != null) {
            entry.done = true;
        }
    }

    /**
     * Histogram points of every tracked instance, then forgets the instances that expired, ended
     * with a terminating push or were retired: their last state is in this snapshot.
     */
    synchronized List<OtlpMetrics.HistogramPoint> snapshotAndExpire(long nowNanos) {
        long now = clockMs.getAsLong();
        List<OtlpMetrics.HistogramPoint> points = new ArrayList<>(entries.size());
        Iterator<Map.Entry<String, Entry>> iterator = entries.entrySet().iterator();
        while (iterator.hasNext()) {
            Map.Entry<String, Entry> item = iterator.next();
            Entry entry = item.getValue();
            points.add(entry.histogram.snapshot(Map.of(BrokerMetricsCollector.INSTANCE_ID_TAG, item.getKey()), nowNanos));
            if (entry.done || now - entry.lastPushMs > entry.expiryMs) {
                iterator.remove();
            }
        }
        return points;
    }

    /** Pushes timed so far for one tracked instance (0 when not tracked). */
    long count(String instanceId) {
        Entry entry;
        synchronized (this) {
            // A plain lookup that does not count as a push (get() would reorder the map).
            entry = entries.containsKey(instanceId) ? peek(instanceId) : null;
        }
        return entry == null ? 0 : entry.histogram.count();
    }

    private Entry peek(String instanceId) {
        for (Map.Entry<String, Entry> item : entries.entrySet()) {
            if (item.getKey().equals(instanceId)) {
                return item.getValue();
            }
        }
        return null;
    }

    synchronized int size() {
        return entries.size();
    }

    synchronized long evicted() {
        return evicted;
    }
}
