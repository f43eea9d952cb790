package io.kip714.broker;

import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** How the plugin creates its topic: replication from the live brokers, min.insync.replicas below it. */
class TopicCreatorTest {
    /** Answers describeCluster with the next live-broker count and records the topics asked for. */
    static final class FakeAdmin implements TopicCreator.TopicAdmin {
        final Deque<Object> liveBrokers = new ArrayDeque<>();
        final Deque<RuntimeException> createErrors = new ArrayDeque<>();
        final List<NewTopic> created = new ArrayList<>();
        boolean exists;
        int describes;
        boolean closed;

        @Override
        public boolean topicExists(String topic) {
            return exists;
        }

        @Override
        public int liveBrokers() throws ExecutionException {
            describes++;
            Object next = liveBrokers.size() > 1 ? liveBrokers.poll() : liveBrokers.peek();
            if (next instanceof RuntimeException error) {
                throw new ExecutionException(error);
            }
            return (Integer) next;
        }

        @Override
        public void createTopic(NewTopic topic) throws ExecutionException {
            created.add(topic);
            RuntimeException error = createErrors.poll();
            if (error != null) {
                throw new ExecutionException(error);
            }
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    private static PluginConfig config(Map<String, Object> extra) {
        Map<String, Object> configs = TelemetrySenderTest.configs("7");
        configs.putAll(extra);
        return new PluginConfig(configs);
    }

    private static FakeAdmin run(PluginConfig config, FakeAdmin admin) {
        AtomicLong now = new AtomicLong();
        new TopicCreator(config, () -> admin, () -> true, now::addAndGet, now::get).ensureTopic();
        assertTrue(admin.closed);
        return admin;
    }

    private static FakeAdmin admin(Object... liveBrokers) {
        FakeAdmin admin = new FakeAdmin();
        admin.liveBrokers.addAll(List.of(liveBrokers));
        return admin;
    }

    @Test
    void replicationDefaultsToThreeOrTheLiveBrokersAndMinInsyncToOneBelow() {
        for (int[] row : new int[][] {{1, 1, 1}, {2, 2, 1}, {3, 3, 2}, {5, 3, 2}}) {
            NewTopic topic = run(config(Map.of()), admin(row[0])).created.get(0);
            assertEquals((short) row[1], topic.replicationFactor(), row[0] + " live brokers");
            assertEquals(Map.of("min.insync.replicas", String.valueOf(row[2])), topic.configs(), row[0] + " live brokers");
        }
    }

    @Test
    void explicitSettingsWinAndMinInsyncIsCappedAtAnAutomaticReplicationFactor() {
        NewTopic explicit = run(config(Map.of("kip714.topic.replication.factor", "2",
            "kip714.topic.min.insync.replicas", "2", "kip714.topic.partitions", "6")), admin(5)).created.get(0);
        assertEquals(2, explicit.replicationFactor());
        assertEquals(6, explicit.numPartitions());
        assertEquals(Map.of("min.insync.replicas", "2"), explicit.configs());

        NewTopic capped = run(config(Map.of("kip714.topic.min.insync.replicas", "3")), admin(2)).created.get(0);
        assertEquals(2, capped.replicationFactor());
        assertEquals(Map.of("min.insync.replicas", "2"), capped.configs());
    }

    @Test
    void minInsyncAboveAnExplicitReplicationFactorIsAConfigError() {
        ConfigException error = assertThrows(ConfigException.class, () -> config(Map.of(
            "kip714.topic.replication.factor", "2", "kip714.topic.min.insync.replicas", "3")));
        assertTrue(error.getMessage().contains("kip714.topic.min.insync.replicas"), error.getMessage());
    }

    @Test
    void waitsWhileTheClusterStartsAndWhileTooFewBrokersForAnExplicitFactor() {
        FakeAdmin starting = admin(new TimeoutException("no node"), 3);
        assertEquals(3, run(config(Map.of()), starting).created.get(0).replicationFactor());

        FakeAdmin fewBrokers = admin(1);
        fewBrokers.createErrors.add(new InvalidReplicationFactorException("only 1 broker"));
        run(config(Map.of("kip714.topic.replication.factor", "3")), fewBrokers);
        assertEquals(2, fewBrokers.created.size(), "retried after InvalidReplicationFactor");
    }

    @Test
    void anExistingTopicOrAMissingPermissionEndsCreation() {
        FakeAdmin exists = admin(3);
        exists.createErrors.add(new TopicExistsException("there"));
        assertEquals(1, run(config(Map.of()), exists).created.size());
        FakeAdmin denied = admin(3);
        denied.createErrors.add(new TopicAuthorizationException("no CREATE"));
        assertEquals(1, run(config(Map.of()), denied).created.size());
    }

    @Test
    void brokersStartingTogetherAreWaitedForBeforeChoosingTheFactor() {
        // Each broker's plugin starts with its broker; at first it sees only itself.
        FakeAdmin startingTogether = admin(1, 1, 2, 2, 3);
        NewTopic topic = run(config(Map.of()), startingTogether).created.get(0);
        assertEquals(3, topic.replicationFactor());
        assertEquals(Map.of("min.insync.replicas", "2"), topic.configs());

        FakeAdmin alone = admin(1);
        assertEquals(1, run(config(Map.of()), alone).created.get(0).replicationFactor());
        assertTrue(alone.describes >= TopicCreator.SETTLE_MS / TopicCreator.RETRY_MS, "waited " + alone.describes);
    }

    @Test
    void anExistingTopicIsLeftAloneWithoutWaiting() {
        FakeAdmin existing = admin(1);
        existing.exists = true;
        run(config(Map.of()), existing);
        assertEquals(0, existing.created.size());
        assertEquals(0, existing.describes);
    }

    @Test
    void givesUpAfterItsPatience() {
        FakeAdmin never = admin(new TimeoutException("no node"));
        run(config(Map.of()), never);
        assertEquals(0, never.created.size());
    }

    @Test
    void producerDefaultsToAcksAllAndIdempotence() {
        Map<String, Object> props = ProducerSettings.producer(config(Map.of()));
        assertEquals("all", props.get("acks"));
        assertEquals(true, props.get("enable.idempotence"));

        // acks=1 with an explicit enable.idempotence=true would not build: leave idempotence to the client.
        Map<String, Object> acksOne = ProducerSettings.producer(config(Map.of("kip714.producer.acks", "1")));
        assertEquals("1", acksOne.get("acks"));
        assertTrue(!acksOne.containsKey("enable.idempotence"), acksOne.toString());
        new org.apache.kafka.clients.producer.ProducerConfig(acksOne); // valid as given
    }
}
