package io.kip714.broker;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

class BackoffAndLogRateLimiterTest {
    @Test
    void backoffDoublesToItsCapAndResets() {
        Backoff backoff = new Backoff(1_000, 60_000);
        List<Long> delays = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            delays.add(backoff.next());
        }
        assertEquals(List.of(1_000L, 2_000L, 4_000L, 8_000L, 16_000L, 32_000L, 60_000L, 60_000L, 60_000L), delays);
        backoff.reset();
        assertEquals(1_000L, backoff.next());
    }

    @Test
    void limiterLetsOneLineThroughPerIntervalAndCountsTheRest() {
        AtomicLong now = new AtomicLong(5_000);
        LogRateLimiter limiter = new LogRateLimiter(60_000, now::get);
        assertEquals(0L, limiter.acquire());
        now.addAndGet(1_000);
        assertEquals(LogRateLimiter.SUPPRESSED, limiter.acquire());
        now.addAndGet(58_000);
        assertEquals(LogRateLimiter.SUPPRESSED, limiter.acquire());
        now.addAndGet(1_000);
        assertEquals(2L, limiter.acquire(), "the next line reports the two it held back");
        assertEquals(LogRateLimiter.SUPPRESSED, limiter.acquire());
    }
}
