package io.kip714.broker;

import java.util.function.LongSupplier;

/**
 * Lets a repeated log line through at most once per interval, and counts what it held back, so
 * a persistent failure is loud without flooding the broker log.
 */
final class LogRateLimiter {
    /** Returned by {@link #acquire()} when this occurrence must not be logged. */
    static final long SUPPRESSED = -1L;

    private final long intervalMs;
    private final LongSupplier clockMs;
    private long lastLoggedMs;
    private boolean loggedOnce;
    private long suppressed;

    LogRateLimiter(long intervalMs, LongSupplier clockMs) {
        this.intervalMs = intervalMs;
        this.clockMs = clockMs;
    }

    /**
     * Records one occurrence. Returns {@link #SUPPRESSED} when it must not be logged, else the number
     * of occurrences suppressed since the last one that was logged (for the log line to mention).
     */
    synchronized long acquire() {
        long now = clockMs.getAsLong();
        if (loggedOnce && now - lastLoggedMs < intervalMs) {
            suppressed++;
            return SUPPRESSED;
        }
        long heldBack = suppressed;
        suppressed = 0;
        lastLoggedMs = now;
        loggedOnce = true;
        return heldBack;
    }
}
