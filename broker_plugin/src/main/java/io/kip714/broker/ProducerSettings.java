package io.kip714.broker;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.util.HashMap;
import java.util.Map;

/** The configs of the plugin's producer and of the admin client that creates the topic. */
final class ProducerSettings {
    private ProducerSettings() {
    }

    static Map<String, Object> producer(PluginConfig config) {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers);
        if (config.derivedSecurityProtocol != null) {
            props.put("security.protocol", config.derivedSecurityProtocol);
        }
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "kip714-telemetry-plugin-" + config.nodeId);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        // Only the sender thread calls send(), so blocking there is harmless; bounded anyway.
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        // The plugin's own producer must not push its telemetry back into the topic.
        props.put("enable.metrics.push", false);
        // Durable by default: a record counts as written once every in-sync replica has it, and
        // retries after a leader change write it once.
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        props.putAll(config.producerOverrides);
        if (!config.producerOverrides.containsKey(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG) && !acksAll(props)) {
            // An explicit enable.idempotence=true with acks 0/1 would not build; the client's own
            // default then turns idempotence off.
            props.remove(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG);
        }
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return props;
    }

    private static boolean acksAll(Map<String, Object> props) {
        String acks = String.valueOf(props.get(ProducerConfig.ACKS_CONFIG)).trim();
        return acks.equals("all") || acks.equals("-1");
    }

    /** The producer's connection and security settings, as the admin client understands them. */
    static Map<String, Object> admin(PluginConfig config) {
        Map<String, Object> adminProps = new HashMap<>();
        for (Map.Entry<String, Object> entry : producer(config).entrySet()) {
            if (AdminClientConfig.configNames().contains(entry.getKey())) {
                adminProps.put(entry.getKey(), entry.getValue());
            }
        }
        adminProps.put(AdminClientConfig.CLIENT_ID_CONFIG, "kip714-telemetry-plugin-admin-" + config.nodeId);
        adminProps.put("enable.metrics.push", false);
        adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        adminProps.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return adminProps;
    }
}
