package io.kip714.broker;

import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

import java.util.OptionalInt;

/**
 * Broker plugin for Kafka 4.2+ (KIP-1217's {@link ClientTelemetryExporterProvider}), which also
 * hands over the client's push interval. Configure with
 * {@code metric.reporters=io.kip714.broker.ClientTelemetryTopicExporterReporter}. Does not load on
 * brokers older than 4.2: use {@link ClientTelemetryTopicReporter} there.
 */
public class ClientTelemetryTopicExporterReporter extends AbstractTelemetryTopicReporter
    implements ClientTelemetryExporterProvider {
    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return (context, payload) -> {
            TelemetryTopicCore core = coreOrNull();
            if (core != null) {
                core.export(context.authorizableRequestContext(), payload, OptionalInt.of(context.pushIntervalMs()));
            }
        };
    }
}
