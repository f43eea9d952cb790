package io.kip714.broker;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Per-instance export-time histograms stay bounded however many client instances come and go:
 * at most {@link ExportTimes#MAX_INSTANCES} are kept (least recently pushed evicted first), and
 * an instance's state expires like the broker's (max(60 s, 3 x push interval) after its last push)
 * or right after its terminating push has been reported.
 */
class ExportTimesMemoryTest {
    private static final BrokerMetricsCollector.PluginCounters COUNTERS =
        new BrokerMetricsCollector.PluginCounters(1L, Map.of(), 0L, 0L);

    /** Moves the clock on by {@code millis}, then collects once (which expires what is due by then). */
    private static List<byte[]> collectAfter(AtomicLong now, long millis, BrokerMetricsCollector collector) {
        now.addAndGet(millis);
        return collector.collect("1", "c", COUNTERS, 500);
    }

    @Test
    void fiftyThousandInstancesStayUnderTheCapAndExpire() {
        AtomicLong now = new AtomicLong(1_700_000_000_000L);
        BrokerMetricsCollector collector = new BrokerMetricsCollector(now::get);
        int cap = ExportTimes.MAX_INSTANCES;
        int maxSeen = 0;
        for (int i = 0; i < 50_000; i++) {
            collector.recordExportTime("instance-" + i, 0.02, OptionalInt.of(10_000), false);
            now.addAndGet(2); // 50,000 distinct clients within 100 s
            maxSeen = Math.max(maxSeen, collector.trackedInstances());
            if (i % 25_000 == 24_999) {
                List<byte[]> records = collector.collect("1", "c", COUNTERS, 500);
                assertTrue(records.size() <= cap / 500 + 1, records.size() + " records");
                assertTrue(collector.trackedInstances() <= cap);
            }
        }
        assertTrue(maxSeen <= cap, "held " + maxSeen + " instances, cap " + cap);
        assertEquals(cap, collector.trackedInstances());
        assertEquals(1L, collector.collectExportTimeCount("instance-49999"), "the most recent are kept");
        assertEquals(0L, collector.collectExportTimeCount("instance-0"), "the least recent were evicted");
        assertTrue(collector.evictedInstances() >= 50_000 - cap, "evicted " + collector.evictedInstances());

        collectAfter(now, 60_001, collector); // every one of them is now past max(60 s, 3 x 10 s)
        assertEquals(0, collector.trackedInstances());
    }

    @Test
    void stateExpiresAfterThreeIntervalsAndNeverBefore60Seconds() {
        AtomicLong now = new AtomicLong(1_000_000L);
        BrokerMetricsCollector collector = new BrokerMetricsCollector(now::get);
        collector.recordExportTime("slow", 0.1, OptionalInt.of(100_000), false);  // expires after 300 s
        collector.recordExportTime("fast", 0.1, OptionalInt.of(1_000), false);    // expires after 60 s
        collector.recordExportTime("unknown", 0.1, OptionalInt.empty(), false);   // 3.x: 3 x 5 min default

        collectAfter(now, 60_000, collector);
        assertEquals(3, collector.trackedInstances(), "nothing expires at exactly 60 s");
        collectAfter(now, 1, collector);
        assertEquals(0L, collector.collectExportTimeCount("fast"));
        assertEquals(2, collector.trackedInstances());

        collectAfter(now, 240_000, collector);
        assertEquals(0L, collector.collectExportTimeCount("slow"));
        assertEquals(1L, collector.collectExportTimeCount("unknown"));
        collectAfter(now, 600_000, collector);
        assertEquals(0, collector.trackedInstances());
    }

    @Test
    void aTerminatingPushIsReportedOnceThenForgotten() {
        AtomicLong now = new AtomicLong(1_000_000L);
        BrokerMetricsCollector collector = new BrokerMetricsCollector(now::get);
        collector.recordExportTime("leaving", 0.1, OptionalInt.of(10_000), false);
        collector.recordExportTime("leaving", 0.2, OptionalInt.of(10_000), true);
        List<byte[]> records = collector.collect("1", "c", COUNTERS, 500);
        ProtoReader histogram = metric(records.get(0), TopicContract.PLUGIN_EXPORT_TIME).message(9).message(1);
        assertEquals(2L, histogram.number(4), "the terminating push is in the last report");
        assertEquals(0, collector.trackedInstances());
        assertEquals(null, metric(collector.collect("1", "c", COUNTERS, 500).get(0), TopicContract.PLUGIN_EXPORT_TIME));
    }

    private static ProtoReader metric(byte[] metricsData, String name) {
        for (ProtoReader metric : new ProtoReader(metricsData).message(1).message(2).messages(2)) {
            if (metric.string(1).equals(name)) {
                return metric;
            }
        }
        return null;
    }
}
