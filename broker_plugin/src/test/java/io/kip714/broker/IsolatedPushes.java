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

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalInt;

/**
 * Runs inside an {@link IsolatingClassLoader}: uses only Kafka API that exists from 3.7 to 4.4
 * (the RequestContext constructor without a port), and returns plain Java values so the test on
 * the other side of the loader can read them.
 */
public final class IsolatedPushes {
    private IsolatedPushes() {
    }

    static RequestContext context() throws Exception {
        RequestHeader header = new RequestHeader(ApiKeys.PUSH_TELEMETRY, (short) 0, "orders-app", 7);
        return new RequestContext(header, "conn-1", InetAddress.getByName("127.0.0.5"),
            new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "alice"), new ListenerName("PLAINTEXT"),
            SecurityProtocol.PLAINTEXT, new ClientInformation("librdkafka", "2.5.3"), false);
    }

    /** The headers of one push as the plugin labels it on this loader's Kafka. */
    public static Map<String, String> headersOfOnePush() throws Exception {
        PushLabelsTest.Payload payload = new PushLabelsTest.Payload(Uuid.randomUuid(), false, "OTLP",
            ByteBuffer.wrap(new byte[] {1}));
        PushLabels labels = PushLabels.from(context(), payload, OptionalInt.empty(), "1", "c");
        Map<String, String> headers = new LinkedHashMap<>();
        for (Header header : labels.headers()) {
            headers.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
        }
        headers.put("has-client-port", String.valueOf(RequestContextFields.hasClientPort()));
        return headers;
    }
}
