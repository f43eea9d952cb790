package io.kip714.broker;

import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

import javax.management.ObjectName;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A record over the producer's max.request.size: the real KafkaProducer reports it through the
 * send callback (doSend hands ApiExceptions to the callback), which this fake does the same way.
 */
class OversizedRecordTest {
    /** Refuses values over {@code limit} bytes the way KafkaProducer.doSend does. */
    static final class SizeLimitedProducer extends MockProducer<byte[], byte[]> {
        private final int limit;

        SizeLimitedProducer(int limit) {
            super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
            this.limit = limit;
        }

        @Override
        public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
            if (record.value().length > limit) {
                RecordTooLargeException error = new RecordTooLargeException("The message is " + record.value().length
                    + " bytes when serialized which is larger than " + limit + ", which is the value of the "
                    + "max.request.size configuration.");
                callback.onCompletion(null, error);
                return CompletableFuture.failedFuture(error);
            }
            return super.send(record, callback);
        }
    }

    @Test
    void oversizedRecordsAreCountedInTheirOwnReasonAndWarnedAtMostOncePerMinute() throws Exception {
        Map<String, Object> configs = TelemetrySenderTest.configs("99");
        AtomicLong now = new AtomicLong(1_000_000);
        TelemetryTopicCore core = new TelemetryTopicCore(new PluginConfig(configs), props -> new SizeLimitedProducer(1_000),
            true, now::get, null);
        core.start();
        try {
            for (int i = 0; i < 3; i++) {
                core.offer(TelemetrySenderTest.record("big-instance", 5_000));
            }
            core.offer(TelemetrySenderTest.record("small-instance", 10));
            TelemetrySenderTest.waitUntil("four records handled", () -> core.stats().exported() + core.droppedTotal() == 4);
            assertEquals(3L, core.stats().dropped(PluginStats.DROP_OVERSIZED));
            assertEquals(0L, core.stats().dropped(PluginStats.DROP_DELIVERY_FAILED));
            assertEquals(1L, core.exportedTotal());
            assertEquals(1L, core.oversizedWarnings(), "three oversized records within a minute: one WARN line");

            now.addAndGet(60_000);
            core.offer(TelemetrySenderTest.record("big-instance", 5_000));
            TelemetrySenderTest.waitUntil("the fourth oversized record", () -> core.stats().dropped(PluginStats.DROP_OVERSIZED) == 4);
            assertEquals(2L, core.oversizedWarnings(), "a minute later the next one is logged again");

            Object inJmx = ManagementFactory.getPlatformMBeanServer().getAttribute(
                new ObjectName("kafka.server:type=kip714-telemetry-plugin,node_id=99,reason=oversized"), "dropped-count");
            assertEquals(4.0, inJmx);
        } finally {
            core.close();
        }
    }
}
