package io.kip714.broker;

import org.junit.jupiter.api.Test;

import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plugin's classes linked against the oldest supported kafka-clients (3.7.2, copied by Maven
 * into target/), in their own class loader: Kafka 3.7's RequestContext has no {@code clientPort},
 * and a direct field access threw NoSuchFieldError on every push there.
 */
class Kafka37CompatibilityTest {
    private static IsolatingClassLoader oldestKafkaLoader() throws Exception {
        Path jar = Path.of(System.getProperty("kip714.oldestKafkaClients", "target/oldest-kafka/kafka-clients-oldest.jar"));
        assertTrue(Files.isRegularFile(jar), "missing " + jar + " (copied by maven-dependency-plugin)");
        URL[] dirs = IsolatingClassLoader.pluginClassDirs();
        URL[] urls = {jar.toUri().toURL(), dirs[0], dirs[1]};
        return new IsolatingClassLoader(urls, List.of("io.kip714.", "org.apache.kafka."), Set.of());
    }

    @Test
    void theLoaderReallyHoldsAKafkaWithoutClientPort() throws Exception {
        try (IsolatingClassLoader loader = oldestKafkaLoader()) {
            Class<?> requestContext = loader.loadClass("org.apache.kafka.common.requests.RequestContext");
            assertEquals(loader, requestContext.getClassLoader());
            assertThrows(NoSuchFieldException.class, () -> requestContext.getField("clientPort"));
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void pushLabelsOnKafka37HaveAnEmptySourcePortAndEverythingElse() throws Exception {
        try (IsolatingClassLoader loader = oldestKafkaLoader()) {
            Map<String, String> headers = (Map<String, String>) loader.loadClass("io.kip714.broker.IsolatedPushes")
                .getMethod("headersOfOnePush").invoke(null);
            assertEquals("false", headers.get("has-client-port"));
            assertEquals("", headers.get("kip714.client_source_port"));
            assertEquals("127.0.0.5", headers.get("kip714.client_source_address"));
            assertEquals("orders-app", headers.get("kip714.client_id"));
            assertEquals("librdkafka", headers.get("kip714.client_software_name"));
            assertEquals("2.5.3", headers.get("kip714.client_software_version"));
            assertEquals("User:alice", headers.get("kip714.principal"));
            assertEquals(15, headers.size());
        }
    }

    @Test
    void theSourcePortIsReadWhereTheBrokerGivesIt() {
        assertTrue(RequestContextFields.hasClientPort());
    }
}
