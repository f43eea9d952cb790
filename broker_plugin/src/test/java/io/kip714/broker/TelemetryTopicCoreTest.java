package io.kip714.broker;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The drop path with a real KafkaProducer aimed at a port nothing listens on: pushes keep being
 * accepted without an exception, the bounded buffer refuses the overflow, and failed sends are
 * counted, never thrown.
 */
class TelemetryTopicCoreTest {
    private static Map<String, Object> unreachableTarget() {
        Map<String, Object> configs = new HashMap<>();
        configs.put("node.id", "1");
        configs.put("kip714.bootstrap.servers", "127.0.0.1:1");
        configs.put("kip714.topic.create", "false");
        configs.put("kip714.buffer.max.records", "3");
        configs.put("kip714.close.timeout.ms", "0");
        configs.put("kip714.producer.max.block.ms", "100");
        configs.put("kip714.producer.reconnect.backoff.max.ms", "100");
        return configs;
    }

    private static RequestContext context() throws Exception {
        return new RequestContext(new RequestHeader(ApiKeys.PUSH_TELEMETRY, (short) 0, "c", 1), "conn",
            InetAddress.getLoopbackAddress(), Optional.of(5000), KafkaPrincipal.ANONYMOUS, new ListenerName("PLAINTEXT"),
            SecurityProtocol.PLAINTEXT, ClientInformation.EMPTY, false);
    }

    @Test
    void unreachableTargetDropsAndCountsWithoutThrowing() throws Exception {
        TelemetryTopicCore core = new TelemetryTopicCore(new PluginConfig(unreachableTarget()), KafkaProducer::new, false);
        core.start();
        RequestContext context = context();
        Uuid instance = Uuid.randomUuid();
        try {
            for (int i = 0; i < 40; i++) {
                core.export(context, new PushLabelsTest.Payload(instance, false, "OTLP", ByteBuffer.wrap(new byte[100])),
                    OptionalInt.of(1000));
            }
            long deadline = System.currentTimeMillis() + 20_000;
            while (senderSideDrops(core) == 0 && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            Map<String, Long> drops = core.counters().droppedByReason();
            assertTrue(drops.get(TelemetryTopicCore.DROP_BUFFER_FULL) > 0, drops.toString());
            // The producer reports a metadata timeout through the callback (delivery_failed) or,
            // depending on the client version, by throwing from send() (send_failed).
            assertTrue(senderSideDrops(core) > 0, drops.toString());
            assertEquals(0L, drops.get(TelemetryTopicCore.DROP_PLUGIN_ERROR), drops.toString());
            assertEquals(0L, core.exportedTotal());
            assertEquals(40L, core.collector().collectExportTimeCount(instance.toString()));
        } finally {
            core.close();
        }
        long before = core.droppedTotal();
        core.export(context, new PushLabelsTest.Payload(instance, false, "OTLP", ByteBuffer.allocate(1)), OptionalInt.empty());
        assertEquals(before + 1, core.droppedTotal());
        assertTrue(core.counters().droppedByReason().get(TelemetryTopicCore.DROP_NOT_RUNNING) >= 1);
    }

    @Test
    void dropCounterIsVisibleInJmx() throws Exception {
        Map<String, Object> configs = unreachableTarget();
        configs.put("node.id", "77");
        TelemetryTopicCore core = new TelemetryTopicCore(new PluginConfig(configs), KafkaProducer::new, true);
        try {
            core.countDrop(TelemetryTopicCore.DROP_BUFFER_FULL);
            core.countDrop(TelemetryTopicCore.DROP_BUFFER_FULL);
            javax.management.MBeanServer server = java.lang.management.ManagementFactory.getPlatformMBeanServer();
            Object total = server.getAttribute(
                new javax.management.ObjectName("kafka.server:type=kip714-telemetry-plugin,node_id=77"), "dropped-count");
            assertEquals(2.0, total);
            Object byReason = server.getAttribute(new javax.management.ObjectName(
                "kafka.server:type=kip714-telemetry-plugin,node_id=77,reason=buffer_full"), "dropped-count");
            assertEquals(2.0, byReason);
        } finally {
            core.close();
        }
        assertEquals(false, java.lang.management.ManagementFactory.getPlatformMBeanServer().isRegistered(
            new javax.management.ObjectName("kafka.server:type=kip714-telemetry-plugin,node_id=77")));
    }

    private static long senderSideDrops(TelemetryTopicCore core) {
        Map<String, Long> drops = core.counters().droppedByReason();
        return drops.get(TelemetryTopicCore.DROP_SEND_FAILED) + drops.get(TelemetryTopicCore.DROP_DELIVERY_FAILED);
    }

    @Test
    void producerConfigsPassOverridesButKeepByteSerializers() {
        Map<String, Object> configs = unreachableTarget();
        configs.put("kip714.producer.key.serializer", "x.Y");
        configs.put("kip714.producer.sasl.mechanism", "PLAIN");
        TelemetryTopicCore core = new TelemetryTopicCore(new PluginConfig(configs), KafkaProducer::new, false);
        Map<String, Object> props = core.producerConfigs();
        assertEquals("PLAIN", props.get("sasl.mechanism"));
        assertEquals("100", props.get("max.block.ms"));
        assertEquals(false, props.get("enable.metrics.push"));
        assertEquals("org.apache.kafka.common.serialization.ByteArraySerializer", props.get("key.serializer"));
        assertEquals("kip714-telemetry-plugin-1", props.get("client.id"));
    }
}
