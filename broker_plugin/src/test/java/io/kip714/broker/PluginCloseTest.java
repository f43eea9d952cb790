package io.kip714.broker;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * close() stops every thread the plugin started (its sender, its timer, its producer's and admin
 * client's network threads), whatever state the sender is in, within a bounded time.
 */
class PluginCloseTest {
    private static final long CLOSE_BOUND_MS = 4_000;

    private static List<String> threadsOf(String nodeId) {
        return Thread.getAllStackTraces().keySet().stream()
            .filter(Thread::isAlive).map(Thread::getName).filter(name -> name.contains(nodeId)).sorted().toList();
    }

    private static void closeWithinBound(TelemetryTopicCore core, String nodeId) throws InterruptedException {
        long started = System.currentTimeMillis();
        core.close();
        long took = System.currentTimeMillis() - started;
        assertTrue(took < CLOSE_BOUND_MS, "close() took " + took + " ms");
        long deadline = System.currentTimeMillis() + 2_000;
        while (!threadsOf(nodeId).isEmpty() && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(List.of(), threadsOf(nodeId));
    }

    @Test
    void beforeEverStarting() throws Exception {
        String node = "close-unstarted";
        TelemetryTopicCore core = new TelemetryTopicCore(new PluginConfig(TelemetrySenderTest.configs(node)),
            KafkaProducer::new, true);
        closeWithinBound(core, node);
        core.start(); // a start after close must not bring threads back
        assertEquals(List.of(), threadsOf(node));
    }

    @Test
    void whileBackingOffAfterBuildFailures() throws Exception {
        String node = "close-backoff";
        TelemetryTopicCore core = new TelemetryTopicCore(new PluginConfig(TelemetrySenderTest.configs(node)), props -> {
            throw new KafkaException("cannot build");
        }, false);
        core.start();
        TelemetrySenderTest.waitUntil("a build failure", () -> core.stats().producerBuildFailures() >= 1);
        Thread.sleep(100); // now in the 1 s (real) backoff wait
        closeWithinBound(core, node);
    }

    /** A started core of node {@code node} with one setting changed, aimed at a cluster that is not there. */
    private static TelemetryTopicCore startedUnreachable(String node, String key, String value) {
        Map<String, Object> configs = TelemetrySenderTest.configs(node);
        configs.put(key, value);
        TelemetryTopicCore core = new TelemetryTopicCore(new PluginConfig(configs), KafkaProducer::new, false);
        core.start();
        return core;
    }

    @Test
    void whileCreatingTheTopicOnAnUnreachableCluster() throws Exception {
        String node = "close-creating";
        TelemetryTopicCore core = startedUnreachable(node, "kip714.topic.create", "true");
        TelemetrySenderTest.waitUntil("the admin client", () -> threadsOf("admin-" + node).size() > 0);
        Thread.sleep(300);
        closeWithinBound(core, node);
    }

    @Test
    void whileBlockedSendingToAnUnreachableCluster() throws Exception {
        String node = "close-sending";
        TelemetryTopicCore core = startedUnreachable(node, "kip714.producer.max.block.ms", "120000");
        assertTrue(core.offer(TelemetrySenderTest.record("instance-b", 10)));
        // The sender takes the record and blocks in send() waiting for metadata (up to 120 s).
        TelemetrySenderTest.waitUntil("the send", () -> core.buffered() == 1 && core.stats().inFlight() == 1);
        Thread.sleep(300);
        closeWithinBound(core, node);
    }
}
