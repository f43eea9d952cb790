package io.kip714.broker;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PushLabelsTest {
    private static final Uuid INSTANCE = Uuid.fromString("WqvcjYoHRpK09ZNcRFk23Q");

    /** A push as the broker builds it: the payload interface carries plain values. */
    record Payload(Uuid clientInstanceId, boolean isTerminating, String contentType, ByteBuffer data)
        implements ClientTelemetryPayload {
    }

    private static RequestContext brokerContext() throws Exception {
        RequestHeader header = new RequestHeader(ApiKeys.PUSH_TELEMETRY, (short) 0, "orders-app", 7);
        return new RequestContext(header, "conn-1", InetAddress.getByName("127.0.0.5"), Optional.of(51234),
            new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"), new ListenerName("SASL_PLAINTEXT"),
            SecurityProtocol.SASL_PLAINTEXT, new ClientInformation("apache-kafka-java", "4.4.0"), false);
    }

    private static Map<String, String> asMap(List<Header> headers) {
        Map<String, String> map = new LinkedHashMap<>();
        for (Header header : headers) {
            map.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
        }
        return map;
    }

    @Test
    void everyContractHeaderFromTheBrokerRequestContext() throws Exception {
        Payload payload = new Payload(INSTANCE, true, "OTLP", ByteBuffer.wrap(new byte[] {1, 2}));
        PushLabels labels = PushLabels.from(brokerContext(), payload, OptionalInt.of(10_000), "3", "cluster-x");

        Map<String, String> expected = new LinkedHashMap<>();
        expected.put("kip714.type", "client");
        expected.put("kip714.client_instance_id", "WqvcjYoHRpK09ZNcRFk23Q");
        expected.put("kip714.client_id", "orders-app");
        expected.put("kip714.client_software_name", "apache-kafka-java");
        expected.put("kip714.client_software_version", "4.4.0");
        expected.put("kip714.client_source_address", "127.0.0.5");
        expected.put("kip714.client_source_port", "51234");
        expected.put("kip714.principal", "User:alice");
        expected.put("kip714.listener", "SASL_PLAINTEXT");
        expected.put("kip714.node_id", "3");
        expected.put("kip714.cluster_id", "cluster-x");
        expected.put("kip714.terminating", "true");
        expected.put("kip714.push_interval_ms", "10000");
        expected.put("kip714.subscription_id", "");
        assertEquals(expected, asMap(labels.headers()));
        assertEquals(List.copyOf(expected.keySet()), labels.headers().stream().map(Header::key).toList());
    }

    @Test
    void pushIntervalIsEmptyOnTheClientTelemetryApi() throws Exception {
        Payload payload = new Payload(INSTANCE, false, "OTLP", ByteBuffer.allocate(0));
        Map<String, String> headers = asMap(PushLabels.from(brokerContext(), payload, OptionalInt.empty(), "1", "").headers());
        assertEquals("", headers.get("kip714.push_interval_ms"));
        assertEquals("false", headers.get("kip714.terminating"));
        assertEquals("", headers.get("kip714.cluster_id"));
    }

    @Test
    void contextOtherThanRequestContextLeavesSoftwareAndPortEmpty() throws Exception {
        RequestContext real = brokerContext();
        AuthorizableRequestContext plain = new AuthorizableRequestContext() {
            @Override public String listenerName() { return real.listenerName(); }
            @Override public SecurityProtocol securityProtocol() { return real.securityProtocol(); }
            @Override public KafkaPrincipal principal() { return real.principal(); }
            @Override public InetAddress clientAddress() { return real.clientAddress(); }
            @Override public int requestType() { return real.requestType(); }
            @Override public int requestVersion() { return real.requestVersion(); }
            @Override public String clientId() { return real.clientId(); }
            @Override public int correlationId() { return real.correlationId(); }
        };
        Payload payload = new Payload(INSTANCE, false, "OTLP", ByteBuffer.allocate(0));
        Map<String, String> headers = asMap(PushLabels.from(plain, payload, OptionalInt.of(5), "1", "c").headers());
        assertEquals("", headers.get("kip714.client_software_name"));
        assertEquals("", headers.get("kip714.client_software_version"));
        assertEquals("", headers.get("kip714.client_source_port"));
        assertEquals("orders-app", headers.get("kip714.client_id"));
        assertEquals(14, headers.size());
    }

    @Test
    void brokerRecordHeaders() {
        assertEquals(Map.of("kip714.type", "broker", "kip714.node_id", "2", "kip714.cluster_id", "c"),
            asMap(PushLabels.brokerHeaders("2", "c")));
    }
}
