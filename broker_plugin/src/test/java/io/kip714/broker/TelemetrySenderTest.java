package io.kip714.broker;

import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sender thread when its producer cannot be built: it backs off, retries, and says so. */
class TelemetrySenderTest {
    static Map<String, Object> configs(String nodeId) {
        Map<String, Object> configs = new HashMap<>();
        configs.put("node.id", nodeId);
        configs.put("kip714.bootstrap.servers", "127.0.0.1:1");
        configs.put("kip714.topic.create", "false");
        return configs;
    }

    static MockProducer<byte[], byte[]> mockProducer() {
        return new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static PendingRecord record(String key, int valueBytes) {
        return new PendingRecord(key.getBytes(), new byte[valueBytes], List.of(), 1L);
    }

    static void waitUntil(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 20_000;
        while (!condition.getAsBoolean()) {
            assertTrue(System.currentTimeMillis() < deadline, "timed out waiting for " + what);
            Thread.sleep(10);
        }
    }

    @Test
    void buildFailuresBackOffExponentiallyToAMinuteThenTheProducerIsUsed() throws Exception {
        PluginConfig config = new PluginConfig(configs("s1"));
        BoundedRecordBuffer buffer = new BoundedRecordBuffer(10, 1 << 20);
        PluginStats stats = new PluginStats();
        AtomicInteger attempts = new AtomicInteger();
        MockProducer<byte[], byte[]> producer = mockProducer();
        Function<Map<String, Object>, Producer<byte[], byte[]>> factory = props -> {
            if (attempts.incrementAndGet() <= 9) {
                throw new KafkaException("Failed to construct kafka producer");
            }
            return producer;
        };
        List<Long> delays = new CopyOnWriteArrayList<>();
        TelemetrySender sender = new TelemetrySender(config, buffer, stats, factory, () -> 0L, delays::add);
        sender.start();
        try {
            waitUntil("the producer", () -> attempts.get() >= 10 && !stats.producerUnavailable());
            assertEquals(List.of(1_000L, 2_000L, 4_000L, 8_000L, 16_000L, 32_000L, 60_000L, 60_000L, 60_000L), delays);
            assertEquals(9L, stats.producerBuildFailures());
            buffer.offer(record("instance-a", 10));
            waitUntil("the record to be exported", () -> stats.exported() == 1);
            assertEquals(1, producer.history().size());
        } finally {
            sender.stop();
        }
    }

    @Test
    void aBadProducerOverrideIsRetriedNotFatal() throws Exception {
        Map<String, Object> configs = configs("s2");
        configs.put("kip714.producer.linger.ms", "soon");
        PluginConfig config = new PluginConfig(configs);
        PluginStats stats = new PluginStats();
        List<Long> delays = new CopyOnWriteArrayList<>();
        TelemetrySender sender = new TelemetrySender(config, new BoundedRecordBuffer(10, 1 << 20), stats,
            org.apache.kafka.clients.producer.KafkaProducer::new, () -> 0L, millis -> {
                delays.add(millis);
                if (delays.size() >= 3) {
                    Thread.sleep(Long.MAX_VALUE); // park until stop() interrupts
                }
            });
        sender.start();
        try {
            waitUntil("three attempts", () -> stats.producerBuildFailures() >= 3);
            assertTrue(stats.producerUnavailable());
        } finally {
            long started = System.nanoTime();
            sender.stop();
            assertTrue(System.nanoTime() - started < 3_000_000_000L, "stop() while backing off took too long");
        }
        assertEquals(List.of(1_000L, 2_000L, 4_000L), delays);
    }

    @Test
    void producerStateIsInJmx() throws Exception {
        Map<String, Object> configs = configs("88");
        TelemetryTopicCore core = new TelemetryTopicCore(new PluginConfig(configs), props -> {
            throw new KafkaException("no producer");
        }, true);
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = new ObjectName("kafka.server:type=kip714-telemetry-plugin,node_id=88");
        try {
            core.start();
            waitUntil("a build failure", () -> core.stats().producerBuildFailures() >= 1);
            assertEquals(1.0, server.getAttribute(name, "producer-unavailable"));
            assertTrue((Double) server.getAttribute(name, "producer-build-failure-count") >= 1.0);
        } finally {
            core.close();
        }
    }
}
