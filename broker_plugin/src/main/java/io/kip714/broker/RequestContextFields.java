package io.kip714.broker;

import org.apache.kafka.common.requests.RequestContext;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Optional;

/**
 * Optional public fields of the broker's concrete {@link RequestContext}, looked up once when the
 * class loads. They differ by Kafka version: {@code clientPort} first appears in Kafka 3.8, so
 * reading it by direct field access throws {@code NoSuchFieldError} on every push on 3.7. A field
 * the running broker lacks reads as the empty string.
 */
final class RequestContextFields {
    /** {@code RequestContext.clientPort} ({@code Optional<Integer>}, Kafka 3.8+), or null when absent. */
    private static final Field CLIENT_PORT = publicField(RequestContext.class, "clientPort", Optional.class);

    private RequestContextFields() {
    }

    /** Whether this broker's RequestContext carries the client's source port. */
    static boolean hasClientPort() {
        return CLIENT_PORT != null;
    }

    /** The client's source port as text; empty when the broker does not give it. */
    static String clientPort(RequestContext context) {
        if (CLIENT_PORT == null) {
            return "";
        }
        try {
            Object value = CLIENT_PORT.get(context);
            return value instanceof Optional<?> port && port.isPresent() ? String.valueOf(port.get()) : "";
        } catch (IllegalAccessException e) {
            return "";
        }
    }

    /** A public instance field of the given type, or null when this Kafka version has none. */
    static Field publicField(Class<?> owner, String name, Class<?> type) {
        try {
            Field field = owner.getField(name);
            boolean usable = !Modifier.isStatic(field.getModifiers()) && type.isAssignableFrom(field.getType());
            return usable ? field : null;
        } catch (NoSuchFieldException | SecurityException e) {
            return null;
        }
    }
}
