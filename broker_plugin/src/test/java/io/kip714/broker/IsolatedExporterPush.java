package io.kip714.broker;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryContext;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Runs inside an {@link IsolatingClassLoader} on Kafka 4.2+ API (KIP-1217's exporter). */
public final class IsolatedExporterPush {
    private IsolatedExporterPush() {
    }

    /**
     * Builds the 4.2+ exporter plugin the way a broker does (configure, init), hands it one push
     * through {@link ClientTelemetryExporter}, and reports what its core counted.
     */
    public static Map<String, Long> exportOnePushThroughTheExporter() throws Exception {
        ClientTelemetryTopicExporterReporter reporter = new ClientTelemetryTopicExporterReporter();
        Map<String, Object> configs = new HashMap<>();
        configs.put("node.id", "1");
        configs.put("kip714.bootstrap.servers", "127.0.0.1:1");
        configs.put("kip714.topic.create", "false");
        configs.put("kip714.close.timeout.ms", "0");
        configs.put("kip714.producer.max.block.ms", "100");
        reporter.configure(configs);
        reporter.init(List.of());
        Uuid instance = Uuid.randomUuid();
        try {
            RequestContext request = IsolatedPushes.context();
            ClientTelemetryContext telemetryContext = new ClientTelemetryContext() {
                @Override public int pushIntervalMs() { return 5000; }
                @Override public AuthorizableRequestContext authorizableRequestContext() {
                    return request;
                }
            };
            reporter.clientTelemetryExporter().exportMetrics(telemetryContext,
                new PushLabelsTest.Payload(instance, false, "OTLP", ByteBuffer.wrap(new byte[] {1, 2, 3})));
            TelemetryTopicCore core = reporter.requireCore();
            Map<String, Long> result = new HashMap<>(core.counters().droppedByReason());
            result.put("export-time-count", core.collector().collectExportTimeCount(instance.toString()));
            return result;
        } finally {
            reporter.close();
        }
    }
}
