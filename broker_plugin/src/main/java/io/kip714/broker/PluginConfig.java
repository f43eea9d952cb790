package io.kip714.broker;

import org.apache.kafka.common.config.ConfigException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The plugin's settings, read from the broker's own configs (every key optional). Invalid values
 * fail broker start-up with a {@link ConfigException} naming the key: a misconfiguration is not a
 * transient failure.
 */
final class PluginConfig {
    static final String PREFIX = "kip714.";
    static final String TOPIC = PREFIX + "topic";
    static final String BOOTSTRAP_SERVERS = PREFIX + "bootstrap.servers";
    static final String PRODUCER_PREFIX = PREFIX + "producer.";
    static final String BROKER_METRICS_INTERVAL_MS = PREFIX + "broker.metrics.interval.ms";
    static final String BROKER_METRICS_INSTANCES_PER_RECORD = PREFIX + "broker.metrics.instances.per.record";
    static final String BUFFER_MAX_RECORDS = PREFIX + "buffer.max.records";
    static final String BUFFER_MAX_BYTES = PREFIX + "buffer.max.bytes";
    static final String TOPIC_CREATE = PREFIX + "topic.create";
    static final String TOPIC_PARTITIONS = PREFIX + "topic.partitions";
    static final String TOPIC_REPLICATION_FACTOR = PREFIX + "topic.replication.factor";
    static final String CLOSE_TIMEOUT_MS = PREFIX + "close.timeout.ms";

    final String topic;
    final String bootstrapServers;
    /** security.protocol of the derived listener, or null when the user gave bootstrap servers. */
    final String derivedSecurityProtocol;
    final Map<String, Object> producerOverrides;
    final long brokerMetricsIntervalMs;
    final int brokerMetricsInstancesPerRecord;
    final int bufferMaxRecords;
    final long bufferMaxBytes;
    final boolean topicCreate;
    final int topicPartitions;
    final short topicReplicationFactor;
    final long closeTimeoutMs;
    final String nodeId;

    PluginConfig(Map<String, ?> configs) {
        topic = stringValue(configs, TOPIC, TopicContract.DEFAULT_TOPIC);
        if (topic.isBlank()) {
            throw new ConfigException(TOPIC, topic, "must not be empty");
        }
        brokerMetricsIntervalMs = longValue(configs, BROKER_METRICS_INTERVAL_MS, 30_000L, 100L, 86_400_000L);
        brokerMetricsInstancesPerRecord = (int) longValue(configs, BROKER_METRICS_INSTANCES_PER_RECORD,
            BrokerMetricsCollector.DEFAULT_INSTANCES_PER_RECORD, 1L, 100_000L);
        bufferMaxRecords = (int) longValue(configs, BUFFER_MAX_RECORDS, 10_000L, 1L, 10_000_000L);
        bufferMaxBytes = longValue(configs, BUFFER_MAX_BYTES, 64L * 1024 * 1024, 1024L, Long.MAX_VALUE);
        topicCreate = booleanValue(configs, TOPIC_CREATE, true);
        topicPartitions = (int) longValue(configs, TOPIC_PARTITIONS, -1L, -1L, 100_000L);
        topicReplicationFactor = (short) longValue(configs, TOPIC_REPLICATION_FACTOR, -1L, -1L, Short.MAX_VALUE);
        closeTimeoutMs = longValue(configs, CLOSE_TIMEOUT_MS, 1_000L, 0L, 600_000L);
        if (topicPartitions == 0) {
            throw new ConfigException(TOPIC_PARTITIONS, 0, "must be -1 (broker default) or >= 1");
        }
        if (topicReplicationFactor == 0) {
            throw new ConfigException(TOPIC_REPLICATION_FACTOR, 0, "must be -1 (broker default) or >= 1");
        }
        String node = stringValue(configs, "node.id", "");
        if (node.isEmpty()) {
            node = stringValue(configs, "broker.id", "");
        }
        nodeId = node;

        Map<String, Object> overrides = new HashMap<>();
        for (Map.Entry<String, ?> entry : configs.entrySet()) {
            if (entry.getKey().startsWith(PRODUCER_PREFIX) && entry.getValue() != null) {
                overrides.put(entry.getKey().substring(PRODUCER_PREFIX.length()), entry.getValue());
            }
        }
        producerOverrides = Map.copyOf(overrides);

        String explicitBootstrap = stringValue(configs, BOOTSTRAP_SERVERS, "");
        if (!explicitBootstrap.isBlank()) {
            bootstrapServers = explicitBootstrap;
            derivedSecurityProtocol = null;
        } else {
            Listener own = ownListener(configs);
            bootstrapServers = own.hostPort();
            derivedSecurityProtocol = own.securityProtocol();
        }
    }

    /** One entry of {@code listeners}/{@code advertised.listeners}. */
    record Listener(String name, String host, int port, String securityProtocol) {
        String hostPort() {
            return host + ":" + port;
        }
    }

    /**
     * The broker's own client listener: advertised listeners first (what clients use), then
     * listeners; controller listeners are skipped; a PLAINTEXT one is preferred because it needs
     * no credentials. A wildcard bind host means "this machine", so 127.0.0.1 is used.
     */
    static Listener ownListener(Map<String, ?> configs) {
        Set<String> controllerNames = new HashSet<>();
        for (String name : stringValue(configs, "controller.listener.names", "").split(",")) {
            if (!name.isBlank()) {
                controllerNames.add(name.trim().toUpperCase(Locale.ROOT));
            }
        }
        Map<String, String> protocolMap = new HashMap<>();
        for (String pair : stringValue(configs, "listener.security.protocol.map", "").split(",")) {
            String[] parts = pair.split(":", 2);
            if (parts.length == 2) {
                protocolMap.put(parts[0].trim().toUpperCase(Locale.ROOT), parts[1].trim().toUpperCase(Locale.ROOT));
            }
        }
        for (String key : List.of("advertised.listeners", "listeners")) {
            List<Listener> candidates = new ArrayList<>();
            for (String entry : stringValue(configs, key, "").split(",")) {
                if (entry.isBlank()) {
                    continue;
                }
                Listener listener = parseListener(key, entry.trim(), protocolMap);
                if (!controllerNames.contains(listener.name())) {
                    candidates.add(listener);
                }
            }
            for (Listener candidate : candidates) {
                if ("PLAINTEXT".equals(candidate.securityProtocol())) {
                    return candidate;
                }
            }
            if (!candidates.isEmpty()) {
                return candidates.get(0);
            }
        }
        throw new ConfigException(BOOTSTRAP_SERVERS, "",
            "not set, and no non-controller entry in advertised.listeners or listeners to derive it from");
    }

    private static Listener parseListener(String key, String entry, Map<String, String> protocolMap) {
        int schemeEnd = entry.indexOf("://");
        int portStart = entry.lastIndexOf(':');
        if (schemeEnd <= 0 || portStart <= schemeEnd + 2) {
            throw new ConfigException(key, entry, "listener must look like NAME://host:port");
        }
        String name = entry.substring(0, schemeEnd).toUpperCase(Locale.ROOT);
        String host = entry.substring(schemeEnd + 3, portStart);
        int port;
        try {
            port = Integer.parseInt(entry.substring(portStart + 1));
        } catch (NumberFormatException e) {
            throw new ConfigException(key, entry, "listener port must be an integer");
        }
        if (host.isEmpty() || host.equals("0.0.0.0") || host.equals("[::]") || host.equals("::")) {
            host = "127.0.0.1";
        }
        return new Listener(name, host, port, protocolMap.getOrDefault(name, name));
    }

    private static String stringValue(Map<String, ?> configs, String key, String defaultValue) {
        Object value = configs.get(key);
        if (value == null) {
            return defaultValue;
        }
        if (value instanceof List<?> list) {
            return String.join(",", list.stream().map(String::valueOf).toList());
        }
        return String.valueOf(value).trim();
    }

    private static long longValue(Map<String, ?> configs, String key, long defaultValue, long min, long max) {
        Object raw = configs.get(key);
        if (raw == null || String.valueOf(raw).isBlank()) {
            return defaultValue;
        }
        long value;
        try {
            value = raw instanceof Number number ? number.longValue() : Long.parseLong(String.valueOf(raw).trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(key, raw, "must be an integer");
        }
        if (value < min || value > max) {
            throw new ConfigException(key, raw, "must be between " + min + " and " + max);
        }
        return value;
    }

    private static boolean booleanValue(Map<String, ?> configs, String key, boolean defaultValue) {
        Object raw = configs.get(key);
        if (raw == null || String.valueOf(raw).isBlank()) {
            return defaultValue;
        }
        String text = String.valueOf(raw).trim().toLowerCase(Locale.ROOT);
        if (!text.equals("true") && !text.equals("false")) {
            throw new ConfigException(key, raw, "must be true or false");
        }
        return Boolean.parseBoolean(text);
    }
}
