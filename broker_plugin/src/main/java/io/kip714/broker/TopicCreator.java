package io.kip714.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Creates the telemetry topic when missing, on the sender thread before the first send, with a
 * replication factor of min(3, live brokers) and min.insync.replicas one below it unless
 * configured. Brokers of a new cluster start together and each plugin at first sees only its own
 * broker, so while fewer than 3 are live the count is taken again for up to {@link #SETTLE_MS}.
 * Retries while the cluster is still starting (or has fewer brokers than an explicit replication
 * factor), for at most {@link #PATIENCE_MS}; gives up (and sends anyway) sooner on an error retrying
 * cannot fix, such as a missing CREATE permission.
 */
final class TopicCreator {
    private static final Logger log = LoggerFactory.getLogger(TopicCreator.class);
    static final long PATIENCE_MS = 60_000L;
    static final long RETRY_MS = 1_000L;
    static final long SETTLE_MS = 30_000L;
    static final int MAX_AUTOMATIC_REPLICATION_FACTOR = 3;

    /** The two admin calls the creator needs; a seam for tests. */
    interface TopicAdmin extends AutoCloseable {
        boolean topicExists(String topic) throws InterruptedException, ExecutionException;

        int liveBrokers() throws InterruptedException, ExecutionException;

        void createTopic(NewTopic topic) throws InterruptedException, ExecutionException;

        @Override
        void close();
    }

    private final PluginConfig config;
    private final Supplier<TopicAdmin> adminFactory;
    private final BooleanSupplier running;
    private final Sleeper sleeper;
    private final LongSupplier clockMs;
    private int mostLiveBrokersSeen;
    private int liveBrokersLogged = -1;
    private long settleUntilMs = -1;

    TopicCreator(PluginConfig config, Supplier<TopicAdmin> adminFactory, BooleanSupplier running, Sleeper sleeper,
                 LongSupplier clockMs) {
        this.config = config;
        this.adminFactory = adminFactory;
        this.running = running;
        this.sleeper = sleeper;
        this.clockMs = clockMs;
    }

    /** The real admin client, with the producer's connection and security settings. */
    static TopicAdmin kafkaAdmin(Map<String, Object> adminProps) {
        Admin admin = Admin.create(adminProps);
        return new TopicAdmin() {
            @Override
            public boolean topicExists(String topic) throws InterruptedException, ExecutionException {
                return admin.listTopics().names().get().contains(topic);
            }

            @Override
            public int liveBrokers() throws InterruptedException, ExecutionException {
                return admin.describeCluster().nodes().get().size();
            }

            @Override
            public void createTopic(NewTopic topic) throws InterruptedException, ExecutionException {
                admin.createTopics(List.of(topic)).all().get();
            }

            @Override
            public void close() {
                admin.close(Duration.ZERO);
            }
        };
    }

    static short replicationFactor(int configured, int liveBrokers) {
        if (configured > 0) {
            return (short) configured;
        }
        return (short) Math.max(1, Math.min(MAX_AUTOMATIC_REPLICATION_FACTOR, liveBrokers));
    }

    /** Configured (at most the replication factor), else one below the replication factor, at least 1. */
    static int minInsyncReplicas(int configured, short replicationFactor) {
        if (configured > 0) {
            return Math.min(configured, replicationFactor);
        }
        return replicationFactor >= 2 ? replicationFactor - 1 : 1;
    }

    /** Returns when the topic exists, creating it failed for good, or the plugin is stopping. */
    void ensureTopic() {
        long giveUpAt = clockMs.getAsLong() + PATIENCE_MS;
        TopicAdmin admin = null;
        try {
            admin = adminFactory.get();
            while (running.getAsBoolean()) {
                if (clockMs.getAsLong() > giveUpAt) {
                    log.warn("kip714 telemetry plugin gave up creating topic {} after {} ms; sending anyway",
                        config.topic, PATIENCE_MS);
                    return;
                }
                if (tryCreate(admin)) {
                    return;
                }
                sleeper.sleep(RETRY_MS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            log.warn("kip714 telemetry plugin could not check topic {}; sending anyway", config.topic, e);
        } finally {
            if (admin != null) {
                admin.close();
            }
        }
    }

    /** True when done (created, exists, or failed for good); false to try again. */
    private boolean tryCreate(TopicAdmin admin) throws InterruptedException {
        try {
            if (admin.topicExists(config.topic)) {
                return true;
            }
            int liveBrokers = -1;
            if (config.topicReplicationFactor <= 0) {
                liveBrokers = settledLiveBrokers(admin);
                if (liveBrokers < 0) {
                    return false;
                }
            }
            NewTopic topic = newTopic(liveBrokers);
            admin.createTopic(topic);
            log.info("kip714 telemetry plugin created topic {}: replication factor {}{}, {}, partitions {}",
                config.topic, topic.replicationFactor(), liveBrokers < 0 ? "" : " (" + liveBrokers + " live brokers)",
                topic.configs(), topic.numPartitions() < 0 ? "broker default" : topic.numPartitions());
            return true;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof TopicExistsException) {
                return true;
            }
            if (!(cause instanceof RetriableException) && !(cause instanceof InvalidReplicationFactorException)) {
                log.warn("kip714 telemetry plugin could not create topic {}; sending anyway", config.topic, cause);
                return true;
            }
            log.info("kip714 telemetry plugin waiting for the cluster to create topic {}: {}", config.topic, cause.toString());
            return false;
        }
    }

    /**
     * The most live brokers seen, once 3 were seen or {@link #SETTLE_MS} passed since the first
     * count; -1 to count again later.
     */
    private int settledLiveBrokers(TopicAdmin admin) throws InterruptedException, ExecutionException {
        mostLiveBrokersSeen = Math.max(mostLiveBrokersSeen, admin.liveBrokers());
        long now = clockMs.getAsLong();
        if (settleUntilMs < 0) {
            settleUntilMs = now + SETTLE_MS;
        }
        if (mostLiveBrokersSeen >= MAX_AUTOMATIC_REPLICATION_FACTOR || now >= settleUntilMs) {
            return mostLiveBrokersSeen;
        }
        if (liveBrokersLogged != mostLiveBrokersSeen) {
            liveBrokersLogged = mostLiveBrokersSeen;
            log.info("kip714 telemetry plugin sees {} live brokers; waiting up to {} ms for more before creating "
                + "topic {}", mostLiveBrokersSeen, settleUntilMs - now, config.topic);
        }
        return -1;
    }

    NewTopic newTopic(int liveBrokers) {
        short replication = replicationFactor(config.topicReplicationFactor, liveBrokers);
        int minInsync = minInsyncReplicas(config.topicMinInsyncReplicas, replication);
        if (config.topicMinInsyncReplicas > replication) {
            log.warn("kip714 telemetry plugin creates topic {} with min.insync.replicas {}, not the configured {}: "
                + "only {} live brokers, so the replication factor is {}", config.topic, minInsync,
                config.topicMinInsyncReplicas, liveBrokers, replication);
        }
        if (config.topicReplicationFactor <= 0 && replication < MAX_AUTOMATIC_REPLICATION_FACTOR) {
            log.warn("kip714 telemetry plugin creates topic {} with replication factor {}: only {} live brokers were "
                + "seen; set {} or create the topic yourself on a larger cluster", config.topic, replication,
                liveBrokers, PluginConfig.TOPIC_REPLICATION_FACTOR);
        }
        Optional<Integer> partitions = config.topicPartitions > 0 ? Optional.of(config.topicPartitions) : Optional.empty();
        return new NewTopic(config.topic, partitions, Optional.of(replication))
            .configs(Map.of(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, String.valueOf(minInsync)));
    }
}
