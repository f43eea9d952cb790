package io.kip714.broker;

import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

import java.util.OptionalInt;

/**
 * Broker plugin for Kafka 3.7 to 4.1 (KIP-714's {@link ClientTelemetry}); still loads on 4.x while
 * that deprecated interface exists. Configure with
 * {@code metric.reporters=io.kip714.broker.ClientTelemetryTopicReporter}. The push interval is not
 * exposed by this API, so {@code kip714.push_interval_ms} is written empty.
 */
@SuppressWarnings("deprecation")
public class ClientTelemetryTopicReporter extends AbstractTelemetryTopicReporter implements ClientTelemetry {
    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return (context, payload) -> {
            TelemetryTopicCore core = coreOrNull();
            if (core != null) {
                core.export(context, payload, OptionalInt.empty());
            }
        };
    }
}
