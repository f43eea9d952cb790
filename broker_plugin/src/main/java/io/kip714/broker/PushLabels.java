package io.kip714.broker;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

/**
 * The broker-added labels of one push, as the topic headers carry them. A value the broker does
 * not expose on this Kafka version is the empty string (never a missing header).
 */
record PushLabels(
    String clientInstanceId,
    String clientId,
    String clientSoftwareName,
    String clientSoftwareVersion,
    String clientSourceAddress,
    String clientSourcePort,
    String principal,
    String listener,
    String nodeId,
    String clusterId,
    boolean terminating,
    String pushIntervalMs,
    String subscriptionId) {

    /**
     * Reads the labels from the request context. Software name/version and source port live only
     * on the concrete {@link RequestContext} (public fields), which the broker passes in practice;
     * the source port only from Kafka 3.8 ({@link RequestContextFields}: empty on 3.7);
     * the push interval is known only on Kafka 4.2+ (KIP-1217); the subscription id is exposed by
     * no plugin API, so it is always empty.
     */
    static PushLabels from(AuthorizableRequestContext context, ClientTelemetryPayload payload,
                           OptionalInt pushIntervalMs, String nodeId, String clusterId) {
        String softwareName = "";
        String softwareVersion = "";
        String sourcePort = "";
        if (context instanceof RequestContext requestContext) {
            ClientInformation information = requestContext.clientInformation;
            if (information != null) {
                softwareName = nullToEmpty(information.softwareName());
                softwareVersion = nullToEmpty(information.softwareVersion());
            }
            sourcePort = RequestContextFields.clientPort(requestContext);
        }
        InetAddress address = context.clientAddress();
        return new PushLabels(
            payload.clientInstanceId() == null ? "" : payload.clientInstanceId().toString(),
            nullToEmpty(context.clientId()),
            softwareName,
            softwareVersion,
            address == null ? "" : address.getHostAddress(),
            sourcePort,
            context.principal() == null ? "" : context.principal().toString(),
            nullToEmpty(context.listenerName()),
            nullToEmpty(nodeId),
            nullToEmpty(clusterId),
            payload.isTerminating(),
            pushIntervalMs.isPresent() ? String.valueOf(pushIntervalMs.getAsInt()) : "",
            "");
    }

    /** Headers of a client record, in contract order, values UTF-8. */
    List<Header> headers() {
        List<Header> headers = new ArrayList<>(14);
        add(headers, TopicContract.TYPE, TopicContract.TYPE_CLIENT);
        add(headers, TopicContract.CLIENT_INSTANCE_ID, clientInstanceId);
        add(headers, TopicContract.CLIENT_ID, clientId);
        add(headers, TopicContract.CLIENT_SOFTWARE_NAME, clientSoftwareName);
        add(headers, TopicContract.CLIENT_SOFTWARE_VERSION, clientSoftwareVersion);
        add(headers, TopicContract.CLIENT_SOURCE_ADDRESS, clientSourceAddress);
        add(headers, TopicContract.CLIENT_SOURCE_PORT, clientSourcePort);
        add(headers, TopicContract.PRINCIPAL, principal);
        add(headers, TopicContract.LISTENER, listener);
        add(headers, TopicContract.NODE_ID, nodeId);
        add(headers, TopicContract.CLUSTER_ID, clusterId);
        add(headers, TopicContract.TERMINATING, terminating ? "true" : "false");
        add(headers, TopicContract.PUSH_INTERVAL_MS, pushIntervalMs);
        add(headers, TopicContract.SUBSCRIPTION_ID, subscriptionId);
        return headers;
    }

    static List<Header> brokerHeaders(String nodeId, String clusterId) {
        List<Header> headers = new ArrayList<>(3);
        add(headers, TopicContract.TYPE, TopicContract.TYPE_BROKER);
        add(headers, TopicContract.NODE_ID, nullToEmpty(nodeId));
        add(headers, TopicContract.CLUSTER_ID, nullToEmpty(clusterId));
        return headers;
    }

    private static void add(List<Header> headers, String name, String value) {
        headers.add(new RecordHeader(name, value.getBytes(StandardCharsets.UTF_8)));
    }

    private static String nullToEmpty(String value) {
        return value == null ? "" : value;
    }
}
