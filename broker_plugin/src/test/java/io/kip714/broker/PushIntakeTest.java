package io.kip714.broker;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The request-thread half on its own: no producer, no thread. What it needs is the buffer, the
 * counters and the collector, so it can be tested (and reasoned about) without the sender.
 */
class PushIntakeTest {
    static RequestContext context() throws Exception {
        return new RequestContext(new RequestHeader(ApiKeys.PUSH_TELEMETRY, (short) 0, "c", 1), "conn",
            InetAddress.getLoopbackAddress(), Optional.of(5000), KafkaPrincipal.ANONYMOUS, new ListenerName("PLAINTEXT"),
            SecurityProtocol.PLAINTEXT, ClientInformation.EMPTY, false);
    }

    private static PluginConfig config(int maxRecords) {
        return new PluginConfig(Map.of("node.id", "3", "kip714.bootstrap.servers", "127.0.0.1:1",
            "kip714.buffer.max.records", String.valueOf(maxRecords)));
    }

    @Test
    void acceptedPushBecomesOneBufferedRecordKeyedByInstance() throws Exception {
        PluginConfig config = config(2);
        BoundedRecordBuffer buffer = new BoundedRecordBuffer(config.bufferMaxRecords, config.bufferMaxBytes);
        PluginStats stats = new PluginStats();
        BrokerMetricsCollector collector = new BrokerMetricsCollector();
        PushIntake intake = new PushIntake(config, buffer, stats, collector, () -> "cluster-1");
        Uuid instance = Uuid.randomUuid();
        byte[] data = {1, 2, 3};

        intake.export(context(), new PushLabelsTest.Payload(instance, false, "OTLP", ByteBuffer.wrap(data)), OptionalInt.empty());
        assertEquals(1L, stats.dropped(PluginStats.DROP_NOT_RUNNING), "not accepting before start");

        intake.accepting(true);
        for (int i = 0; i < 3; i++) {
            intake.export(context(), new PushLabelsTest.Payload(instance, false, "OTLP", ByteBuffer.wrap(data)),
                OptionalInt.of(1000));
        }
        assertEquals(2, buffer.records());
        assertEquals(1L, stats.dropped(PluginStats.DROP_BUFFER_FULL));
        PendingRecord record = (PendingRecord) buffer.poll(0);
        assertArrayEquals(instance.toString().getBytes(StandardCharsets.UTF_8), record.key());
        assertArrayEquals(data, record.value());
        assertTrue(record.headers().stream().anyMatch(h -> h.key().equals(TopicContract.CLUSTER_ID)
            && new String(h.value(), StandardCharsets.UTF_8).equals("cluster-1")));
        assertEquals(4L, collector.collectExportTimeCount(instance.toString()));
    }

    @Test
    void aThrowingPayloadIsAPluginErrorNeverAnException() throws Exception {
        PluginConfig config = config(10);
        PluginStats stats = new PluginStats();
        PushIntake intake = new PushIntake(config, new BoundedRecordBuffer(10, 1 << 20), stats,
            new BrokerMetricsCollector(), () -> "");
        intake.accepting(true);
        Uuid instance = Uuid.randomUuid();
        intake.export(context(), new ClientTelemetryPayload() {
            @Override
            public Uuid clientInstanceId() {
                return instance;
            }

            @Override
            public boolean isTerminating() {
                return false;
            }

            @Override
            public String contentType() {
                return "OTLP";
            }

            @Override
            public ByteBuffer data() {
                throw new IllegalStateException("boom");
            }
        }, OptionalInt.empty());
        assertEquals(1L, stats.dropped(PluginStats.DROP_PLUGIN_ERROR));
        assertFalse(stats.droppedByReason().isEmpty());
    }
}
