package io.kip714.broker;

import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.OptionalInt;
import java.util.function.Supplier;

/**
 * The part that runs on the broker's request threads: copies the push, builds its headers and
 * offers the record to the bounded buffer. Never blocks, never throws into the broker (Kafka would
 * answer the push with INVALID_RECORD and the client would stop pushing): a record that cannot be
 * taken is dropped and counted instead.
 */
final class PushIntake {
    private static final Logger log = LoggerFactory.getLogger(PushIntake.class);

    private final PluginConfig config;
    private final BoundedRecordBuffer buffer;
    private final PluginStats stats;
    private final BrokerMetricsCollector collector;
    private final Supplier<String> clusterId;
    private volatile boolean accepting;

    PushIntake(PluginConfig config, BoundedRecordBuffer buffer, PluginStats stats, BrokerMetricsCollector collector,
               Supplier<String> clusterId) {
        this.config = config;
        this.buffer = buffer;
        this.stats = stats;
        this.collector = collector;
        this.clusterId = clusterId;
    }

    /** Records are taken only between the plugin's start and close. */
    void accepting(boolean accepting) {
        this.accepting = accepting;
    }

    /** Called on a broker request thread for every accepted push. */
    void export(AuthorizableRequestContext context, ClientTelemetryPayload payload, OptionalInt pushIntervalMs) {
        long startNanos = System.nanoTime();
        long acceptedAtMs = System.currentTimeMillis();
        String instanceId = "";
        boolean terminating = false;
        try {
            terminating = payload.isTerminating();
            PushLabels labels = PushLabels.from(context, payload, pushIntervalMs, config.nodeId, clusterId.get());
            instanceId = labels.clientInstanceId();
            byte[] value = CompressedPayloads.decompressed(copy(payload.data()));
            offer(new PendingRecord(instanceId.getBytes(StandardCharsets.UTF_8), value, labels.headers(), acceptedAtMs));
        } catch (Throwable unexpected) {
            // A bug or an API mismatch must not turn into INVALID_RECORD for the client.
            stats.countDrop(PluginStats.DROP_PLUGIN_ERROR);
            log.warn("kip714 telemetry plugin could not export a push; dropped", unexpected);
        } finally {
            collector.recordExportTime(instanceId, (System.nanoTime() - startNanos) / 1_000_000.0, pushIntervalMs,
                terminating);
        }
    }

    /** Offers a record to the sender; false (and counted) when it is refused. */
    boolean offer(PendingRecord record) {
        if (!accepting) {
            stats.countDrop(PluginStats.DROP_NOT_RUNNING);
            return false;
        }
        if (!buffer.offer(record)) {
            stats.countDrop(PluginStats.DROP_BUFFER_FULL);
            return false;
        }
        return true;
    }

    private static byte[] copy(ByteBuffer data) {
        if (data == null) {
            return new byte[0];
        }
        ByteBuffer view = data.duplicate();
        byte[] bytes = new byte[view.remaining()];
        view.get(bytes);
        return bytes;
    }
}
