package io.kip714.broker;

import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

import org.apache.kafka.common.config.ConfigDef;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    /** The documented default of every key, as docs/broker-plugin.md's table states it. */
    private static final Map<String, Object> DEFAULTS = Map.ofEntries(
        Map.entry("kip714.topic", "_client_telemetry"),
        Map.entry("kip714.bootstrap.servers", ""),
        Map.entry("kip714.broker.metrics.interval.ms", 30_000L),
        Map.entry("kip714.broker.metrics.instances.per.record", 500),
        Map.entry("kip714.buffer.max.records", 10_000),
        Map.entry("kip714.buffer.max.bytes", 64L * 1024 * 1024),
        Map.entry("kip714.topic.create", true),
        Map.entry("kip714.topic.partitions", -1),
        Map.entry("kip714.topic.replication.factor", -1),
        Map.entry("kip714.topic.min.insync.replicas", -1),
        Map.entry("kip714.close.timeout.ms", 1_000L));

    @Test
    void everyKeyIsDefinedOnConfigDefWithTypeDefaultValidatorAndDoc() {
        ConfigDef def = PluginConfig.CONFIG_DEF;
        assertTrue(def.names().containsAll(DEFAULTS.keySet()), def.names().toString());
        for (Map.Entry<String, Object> expected : DEFAULTS.entrySet()) {
            ConfigDef.ConfigKey key = def.configKeys().get(expected.getKey());
            assertEquals(expected.getValue(), key.defaultValue, key.name);
            assertFalse(key.documentation == null || key.documentation.isBlank(), key.name);
            assertTrue(key.importance != null, key.name);
            if (key.type != ConfigDef.Type.BOOLEAN && key.type != ConfigDef.Type.STRING) {
                assertTrue(key.validator != null, key.name + " has no validator");
            }
        }
    }

    @Test
    void everyInvalidValueFailsWithAConfigExceptionNamingItsKey() {
        Map<String, Object> invalid = new LinkedHashMap<>();
        invalid.put("kip714.topic", " ");
        invalid.put("kip714.broker.metrics.interval.ms", "99");
        invalid.put("kip714.broker.metrics.instances.per.record", "0");
        invalid.put("kip714.buffer.max.records", "many");
        invalid.put("kip714.buffer.max.bytes", "1023");
        invalid.put("kip714.topic.create", "maybe");
        invalid.put("kip714.topic.partitions", "0");
        invalid.put("kip714.topic.replication.factor", "-2");
        invalid.put("kip714.topic.min.insync.replicas", "0");
        invalid.put("kip714.close.timeout.ms", "-1");
        for (Map.Entry<String, Object> entry : invalid.entrySet()) {
            Map<String, Object> configs = kraftBroker();
            configs.put(entry.getKey(), entry.getValue());
            ConfigException error = assertThrows(ConfigException.class, () -> new PluginConfig(configs), entry.getKey());
            assertTrue(error.getMessage().contains(entry.getKey()), error.getMessage());
        }
    }

    @Test
    void typedValuesAndBlankNumbersAreAccepted() {
        Map<String, Object> configs = kraftBroker();
        configs.put("kip714.buffer.max.records", 7);
        configs.put("kip714.topic.create", false);
        configs.put("kip714.topic.partitions", "");
        PluginConfig config = new PluginConfig(configs);
        assertEquals(7, config.bufferMaxRecords);
        assertFalse(config.topicCreate);
        assertEquals(-1, config.topicPartitions);
    }

    @Test
    void misspeltPluginKeysAreReportedButProducerKeysAreNot() {
        Map<String, Object> configs = kraftBroker();
        configs.put("kip714.topic.replicaton.factor", "3");
        configs.put("kip714.producer.linger.ms", "5");
        configs.put("kip714.topic", "t");
        assertEquals(Set.of("kip714.topic.replicaton.factor"), PluginConfig.unknownKeys(configs));
    }

    @Test
    void theDocumentedTableListsEveryKeyWithItsDefault() throws IOException {
        String doc = Files.readString(Path.of("..", "docs", "broker-plugin.md"));
        for (String name : PluginConfig.CONFIG_DEF.names()) {
            Matcher row = Pattern.compile("^\\| `" + Pattern.quote(name) + "` \\| ([^|]*)\\|", Pattern.MULTILINE).matcher(doc);
            assertTrue(row.find(), name + " is missing from the configuration table of docs/broker-plugin.md");
            Object value = PluginConfig.CONFIG_DEF.configKeys().get(name).defaultValue;
            if (value != null && !String.valueOf(value).isEmpty()) {
                assertTrue(row.group(1).contains("`" + value + "`"), name + ": documented default " + row.group(1)
                    + " does not show " + value);
            }
        }
    }
}
