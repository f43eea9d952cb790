package io.kip714.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
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

/**
 * Creates the telemetry topic when missing, on the sender thread before the first send. Retries
 * while the cluster is still starting, for at most {@link #PATIENCE_MS}; gives up (and sends
 * anyway) sooner on an error retrying cannot fix, such as a missing CREATE permission.
 */
final class TopicCreator {
    private static final Logger log = LoggerFactory.getLogger(TopicCreator.class);
    static final long PATIENCE_MS = 60_000L;
    static final long RETRY_MS = 1_000L;

    private final PluginConfig config;
    private final Map<String, Object> adminProps;
    private final BooleanSupplier running;
    private final Sleeper sleeper;

    TopicCreator(PluginConfig config, Map<String, Object> adminProps, BooleanSupplier running, Sleeper sleeper) {
        this.config = config;
        this.adminProps = adminProps;
        this.running = running;
        this.sleeper = sleeper;
    }

    /** Returns when the topic exists, creating it failed for good, or the plugin is stopping. */
    void ensureTopic() {
        Optional<Integer> partitions = config.topicPartitions > 0 ? Optional.of(config.topicPartitions) : Optional.empty();
        Optional<Short> replication = config.topicReplicationFactor > 0
            ? Optional.of((short) config.topicReplicationFactor) : Optional.empty();
        long giveUpAt = System.currentTimeMillis() + PATIENCE_MS;
        Admin admin = null;
        try {
            admin = Admin.create(adminProps);
            while (running.getAsBoolean()) {
                if (System.currentTimeMillis() > giveUpAt) {
                    log.warn("kip714 telemetry plugin gave up creating topic {} after {} ms; sending anyway",
                        config.topic, PATIENCE_MS);
                    return;
                }
                if (tryCreate(admin, new NewTopic(config.topic, partitions, replication))) {
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
                admin.close(Duration.ZERO);
            }
        }
    }

    /** True when done (created, exists, or failed for good); false to try again. */
    private boolean tryCreate(Admin admin, NewTopic topic) throws InterruptedException {
        try {
            admin.createTopics(List.of(topic)).all().get();
            log.info("kip714 telemetry plugin created topic {}", config.topic);
            return true;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof TopicExistsException) {
                return true;
            }
            if (!(cause instanceof RetriableException)) {
                log.warn("kip714 telemetry plugin could not create topic {}; sending anyway", config.topic, cause);
                return true;
            }
            log.info("kip714 telemetry plugin waiting for the cluster to create topic {}: {}", config.topic, cause.toString());
            return false;
        }
    }
}
