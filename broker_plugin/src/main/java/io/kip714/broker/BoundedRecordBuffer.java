package io.kip714.broker;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Hand-off between the broker's request threads and the plugin's sender thread. {@link #offer}
 * never blocks: when the buffer holds {@code maxRecords} records or {@code maxBytes} bytes, the
 * record is refused and the caller counts a drop.
 */
final class BoundedRecordBuffer {
    /** A record waiting to be sent: topic key, value and headers stay opaque here. */
    interface Sized {
        int sizeInBytes();
    }

    private final ArrayBlockingQueue<Sized> queue;
    private final long maxBytes;
    private final AtomicLong bytes = new AtomicLong();

    BoundedRecordBuffer(int maxRecords, long maxBytes) {
        if (maxRecords <= 0) {
            throw new IllegalArgumentException("maxRecords must be > 0, got " + maxRecords);
        }
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes must be > 0, got " + maxBytes);
        }
        this.queue = new ArrayBlockingQueue<>(maxRecords);
        this.maxBytes = maxBytes;
    }

    /** @return false (and keeps nothing) when the record does not fit. */
    boolean offer(Sized record) {
        int size = record.sizeInBytes();
        long after = bytes.addAndGet(size);
        if (after > maxBytes) {
            bytes.addAndGet(-size);
            return false;
        }
        if (!queue.offer(record)) {
            bytes.addAndGet(-size);
            return false;
        }
        return true;
    }

    /** Waits up to {@code timeoutMs} for a record; null when none came. */
    Sized poll(long timeoutMs) throws InterruptedException {
        Sized record = queue.poll(timeoutMs, TimeUnit.MILLISECONDS);
        if (record != null) {
            bytes.addAndGet(-record.sizeInBytes());
        }
        return record;
    }

    int records() {
        return queue.size();
    }

    long bytes() {
        return bytes.get();
    }
}
