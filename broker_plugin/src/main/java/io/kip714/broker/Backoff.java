package io.kip714.broker;

/** Exponential backoff between retries: {@code initialMs}, doubling, capped at {@code maxMs}. */
final class Backoff {
    private final long initialMs;
    private final long maxMs;
    private long nextMs;

    Backoff(long initialMs, long maxMs) {
        this.initialMs = initialMs;
        this.maxMs = maxMs;
        this.nextMs = initialMs;
    }

    /** The wait before the next attempt; each call doubles the following one, up to the cap. */
    long next() {
        long delay = nextMs;
        nextMs = Math.min(maxMs, nextMs * 2);
        return delay;
    }

    void reset() {
        nextMs = initialMs;
    }
}
