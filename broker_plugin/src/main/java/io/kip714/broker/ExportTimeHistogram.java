package io.kip714.broker;

/**
 * Cumulative explicit-bucket histogram of the plugin's own export time per push, in
 * milliseconds. The broker only keeps avg/max of the same call, which cannot be turned into a
 * distribution honestly, so the plugin measures each call itself (System.nanoTime around the
 * receiver body) and buckets it.
 */
final class ExportTimeHistogram {
    /**
     * Upper bounds in ms; the receiver should take microseconds, so the low end is fine-grained, and
     * 0.75/0.9 sit below 1 ms so a "p99 under 1 ms" target can be shown, not only "at most 1 ms".
     */
    static final double[] BOUNDS_MS = {
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000};

    private final long startTimeNanos;
    private final long[] bucketCounts = new long[BOUNDS_MS.length + 1];
    private long count;
    private double sumMs;
    private double minMs = Double.POSITIVE_INFINITY;
    private double maxMs = Double.NEGATIVE_INFINITY;

    ExportTimeHistogram(long startTimeNanos) {
        this.startTimeNanos = startTimeNanos;
    }

    synchronized void record(double valueMs) {
        int bucket = 0;
        while (bucket < BOUNDS_MS.length && valueMs > BOUNDS_MS[bucket]) {
            bucket++;
        }
        bucketCounts[bucket]++;
        count++;
        sumMs += valueMs;
        minMs = Math.min(minMs, valueMs);
        maxMs = Math.max(maxMs, valueMs);
    }

    synchronized OtlpMetrics.HistogramPoint snapshot(java.util.Map<String, String> attributes, long nowNanos) {
        return new OtlpMetrics.HistogramPoint(attributes, startTimeNanos, nowNanos, count, sumMs,
            bucketCounts.clone(), BOUNDS_MS.clone(), count == 0 ? 0 : minMs, count == 0 ? 0 : maxMs);
    }

    synchronized long count() {
        return count;
    }
}
