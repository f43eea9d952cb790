package io.kip714.broker;

import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PluginConfigTest {
    private static Map<String, Object> kraftBroker() {
        Map<String, Object> configs = new HashMap<>();
        configs.put("node.id", "4");
        configs.put("listeners", "CONTROLLER://127.0.0.1:9093,SASL://0.0.0.0:9094,PLAINTEXT://:9092");
        configs.put("controller.listener.names", "CONTROLLER");
        configs.put("listener.security.protocol.map", "CONTROLLER:PLAINTEXT,SASL:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT");
        return configs;
    }

    @Test
    void defaultsAndOwnPlaintextListener() {
        PluginConfig config = new PluginConfig(kraftBroker());
        assertEquals("_client_telemetry", config.topic);
        assertEquals("127.0.0.1:9092", config.bootstrapServers);
        assertEquals("PLAINTEXT", config.derivedSecurityProtocol);
        assertEquals(30_000L, config.brokerMetricsIntervalMs);
        assertEquals("4", config.nodeId);
        assertTrue(config.topicCreate);
    }

    @Test
    void advertisedListenersWinAndControllerListenersAreSkipped() {
        Map<String, Object> configs = kraftBroker();
        configs.put("advertised.listeners", "SASL://broker4.example:9094");
        PluginConfig config = new PluginConfig(configs);
        assertEquals("broker4.example:9094", config.bootstrapServers);
        assertEquals("SASL_PLAINTEXT", config.derivedSecurityProtocol);
    }

    @Test
    void explicitSettingsAndProducerPassthrough() {
        Map<String, Object> configs = kraftBroker();
        configs.put("kip714.topic", "telemetry");
        configs.put("kip714.bootstrap.servers", "other:9092");
        configs.put("kip714.producer.security.protocol", "SASL_SSL");
        configs.put("kip714.producer.sasl.mechanism", "PLAIN");
        configs.put("kip714.broker.metrics.interval.ms", "1000");
        PluginConfig config = new PluginConfig(configs);
        assertEquals("telemetry", config.topic);
        assertEquals("other:9092", config.bootstrapServers);
        assertNull(config.derivedSecurityProtocol);
        assertEquals(Map.of("security.protocol", "SASL_SSL", "sasl.mechanism", "PLAIN"), config.producerOverrides);
        assertEquals(1_000L, config.brokerMetricsIntervalMs);
    }

    @Test
    void badValuesNameTheKey() {
        Map<String, Object> configs = kraftBroker();
        configs.put("kip714.broker.metrics.interval.ms", "soon");
        ConfigException notInteger = assertThrows(ConfigException.class, () -> new PluginConfig(configs));
        assertTrue(notInteger.getMessage().contains("kip714.broker.metrics.interval.ms"), notInteger.getMessage());

        configs.put("kip714.broker.metrics.interval.ms", "5");
        ConfigException tooSmall = assertThrows(ConfigException.class, () -> new PluginConfig(configs));
        assertTrue(tooSmall.getMessage().contains("between 100"), tooSmall.getMessage());

        Map<String, Object> noListener = new HashMap<>(Map.of("listeners", "CONTROLLER://:9093",
            "controller.listener.names", "CONTROLLER"));
        ConfigException missing = assertThrows(ConfigException.class, () -> new PluginConfig(noListener));
        assertTrue(missing.getMessage().contains("kip714.bootstrap.servers"), missing.getMessage());
    }
}
