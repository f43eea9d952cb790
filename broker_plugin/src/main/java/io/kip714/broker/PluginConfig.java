package io.kip714.broker;

import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The plugin's settings: every {@code kip714.*} key is defined on a Kafka {@link ConfigDef} (type,
 * default, validator, importance, doc) and read from the broker's own configs. Invalid values fail
 * broker start-up with a {@link ConfigException} naming the key: a misconfiguration is not a
 * transient failure. {@code kip714.producer.*} is passed through to the plugin's producer as is.
 */
final class PluginConfig extends AbstractConfig {
    private static final Logger log = LoggerFactory.getLogger(PluginConfig.class);

    static final String PREFIX = "kip714.";
    static final String PRODUCER_PREFIX = PREFIX + "producer.";
    static final String TOPIC = PREFIX + "topic";
    static final String BOOTSTRAP_SERVERS = PREFIX + "bootstrap.servers";
    static final String BROKER_METRICS_INTERVAL_MS = PREFIX + "broker.metrics.interval.ms";
    static final String BROKER_METRICS_INSTANCES_PER_RECORD = PREFIX + "broker.metrics.instances.per.record";
    static final String BUFFER_MAX_RECORDS = PREFIX + "buffer.max.records";
    static final String BUFFER_MAX_BYTES = PREFIX + "buffer.max.bytes";
    static final String TOPIC_CREATE = PREFIX + "topic.create";
    static final String TOPIC_PARTITIONS = PREFIX + "topic.partitions";
    static final String TOPIC_REPLICATION_FACTOR = PREFIX + "topic.replication.factor";
    static final String TOPIC_MIN_INSYNC_REPLICAS = PREFIX + "topic.min.insync.replicas";
    static final String CLOSE_TIMEOUT_MS = PREFIX + "close.timeout.ms";

    static final ConfigDef CONFIG_DEF = new ConfigDef()
        .define(TOPIC, Type.STRING, TopicContract.DEFAULT_TOPIC, ConfigValidators.nonBlank(), Importance.HIGH,
            "Topic the plugin writes client pushes and broker records to.")
        .define(BOOTSTRAP_SERVERS, Type.STRING, "", Importance.HIGH,
            "Where the plugin's producer connects. Empty: the broker's own first non-controller listener "
                + "(advertised.listeners, else listeners; a PLAINTEXT one preferred), whose security "
                + "protocol the producer then uses.")
        .define(BROKER_METRICS_INTERVAL_MS, Type.LONG, 30_000L, ConfigValidators.between(100, 86_400_000),
            Importance.MEDIUM, "How often the broker metrics record is written, in ms.")
        .define(BROKER_METRICS_INSTANCES_PER_RECORD, Type.INT, BrokerMetricsCollector.DEFAULT_INSTANCES_PER_RECORD,
            ConfigValidators.between(1, 100_000), Importance.LOW,
            "Client instances per broker metrics record; more clients make several records per interval.")
        .define(BUFFER_MAX_RECORDS, Type.INT, 10_000, ConfigValidators.between(1, 10_000_000), Importance.MEDIUM,
            "Records that may wait for the producer; more are dropped (reason buffer_full).")
        .define(BUFFER_MAX_BYTES, Type.LONG, 64L * 1024 * 1024, ConfigValidators.between(1024, Long.MAX_VALUE),
            Importance.MEDIUM, "Bytes that may wait for the producer; more are dropped (reason buffer_full).")
        .define(TOPIC_CREATE, Type.BOOLEAN, true, Importance.MEDIUM, "Create the topic when it is missing.")
        .define(TOPIC_PARTITIONS, Type.INT, -1, ConfigValidators.minusOneOrBetween(1, 100_000), Importance.LOW,
            "Partitions when the plugin creates the topic; -1: the broker's num.partitions.")
        .define(TOPIC_REPLICATION_FACTOR, Type.INT, -1, ConfigValidators.minusOneOrBetween(1, Short.MAX_VALUE),
            Importance.MEDIUM, "Replication factor when the plugin creates the topic; -1: min(3, live brokers "
                + "seen by the admin client's describeCluster at creation time).")
        .define(TOPIC_MIN_INSYNC_REPLICAS, Type.INT, -1, ConfigValidators.minusOneOrBetween(1, Short.MAX_VALUE),
            Importance.MEDIUM, "min.insync.replicas topic config when the plugin creates the topic; -1: the "
                + "replication factor minus 1 when it is 2 or more, else 1.")
        .define(CLOSE_TIMEOUT_MS, Type.LONG, 1_000L, ConfigValidators.between(0, 600_000), Importance.LOW,
            "How long broker shutdown waits for records already handed to the producer, in ms.");

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
    final int topicReplicationFactor;
    final int topicMinInsyncReplicas;
    final long closeTimeoutMs;
    final String nodeId;

    PluginConfig(Map<String, ?> configs) {
        super(CONFIG_DEF, pluginKeys(configs));
        topic = getString(TOPIC).trim();
        brokerMetricsIntervalMs = getLong(BROKER_METRICS_INTERVAL_MS);
        brokerMetricsInstancesPerRecord = getInt(BROKER_METRICS_INSTANCES_PER_RECORD);
        bufferMaxRecords = getInt(BUFFER_MAX_RECORDS);
        bufferMaxBytes = getLong(BUFFER_MAX_BYTES);
        topicCreate = getBoolean(TOPIC_CREATE);
        topicPartitions = getInt(TOPIC_PARTITIONS);
        topicReplicationFactor = getInt(TOPIC_REPLICATION_FACTOR);
        topicMinInsyncReplicas = getInt(TOPIC_MIN_INSYNC_REPLICAS);
        if (topicReplicationFactor > 0 && topicMinInsyncReplicas > topicReplicationFactor) {
            throw new ConfigException(TOPIC_MIN_INSYNC_REPLICAS, topicMinInsyncReplicas,
                "must not exceed " + TOPIC_REPLICATION_FACTOR + " (" + topicReplicationFactor + ")");
        }
        closeTimeoutMs = getLong(CLOSE_TIMEOUT_MS);
        String node = OwnListener.text(configs, "node.id");
        nodeId = node.isEmpty() ? OwnListener.text(configs, "broker.id") : node;
        producerOverrides = producerOverrides(configs);

        String explicitBootstrap = getString(BOOTSTRAP_SERVERS).trim();
        if (!explicitBootstrap.isEmpty()) {
            bootstrapServers = explicitBootstrap;
            derivedSecurityProtocol = null;
        } else {
            OwnListener own = OwnListener.of(configs);
            bootstrapServers = own.hostPort();
            derivedSecurityProtocol = own.securityProtocol();
        }
        for (String unknown : unknownKeys(configs)) {
            log.warn("kip714 telemetry plugin ignores the unknown setting {} (see the plugin's documented keys)", unknown);
        }
    }

    /**
     * The plugin's own keys (those the ConfigDef defines), without the producer pass-through and
     * without the broker's other settings: parsing only these keeps the broker's config providers
     * and secrets out of this config. A blank value of a non-string key means "the default".
     */
    private static Map<String, Object> pluginKeys(Map<String, ?> configs) {
        Map<String, Object> own = new HashMap<>();
        for (Map.Entry<String, ?> entry : configs.entrySet()) {
            ConfigDef.ConfigKey key = CONFIG_DEF.configKeys().get(entry.getKey());
            Object value = entry.getValue();
            if (key == null || value == null) {
                continue;
            }
            if (key.type != Type.STRING && value instanceof String text && text.isBlank()) {
                continue;
            }
            own.put(entry.getKey(), value);
        }
        return own;
    }

    private static Map<String, Object> producerOverrides(Map<String, ?> configs) {
        Map<String, Object> overrides = new HashMap<>();
        for (Map.Entry<String, ?> entry : configs.entrySet()) {
            if (entry.getKey().startsWith(PRODUCER_PREFIX) && entry.getValue() != null) {
                overrides.put(entry.getKey().substring(PRODUCER_PREFIX.length()), entry.getValue());
            }
        }
        return Map.copyOf(overrides);
    }

    /** {@code kip714.*} keys that are neither defined nor producer pass-through: most likely typos. */
    static Set<String> unknownKeys(Map<String, ?> configs) {
        Set<String> unknown = new TreeSet<>();
        for (String key : configs.keySet()) {
            if (key.startsWith(PREFIX) && !key.startsWith(PRODUCER_PREFIX) && !CONFIG_DEF.names().contains(key)) {
                unknown.add(key);
            }
        }
        return unknown;
    }
}
