package io.kip714.broker;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Minimal protobuf (proto3) wire-format writer: just the field kinds the OTLP messages we emit
 * need. Hand-written so the plugin jar carries no protobuf runtime that could clash with the
 * broker's classpath.
 */
final class ProtoWriter {
    private static final int WIRE_VARINT = 0;
    private static final int WIRE_FIXED64 = 1;
    private static final int WIRE_LENGTH_DELIMITED = 2;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream(128);

    byte[] toByteArray() {
        return out.toByteArray();
    }

    int size() {
        return out.size();
    }

    ProtoWriter string(int field, String value) {
        if (value == null || value.isEmpty()) {
            return this; // proto3 default: omitted
        }
        return bytes(field, value.getBytes(StandardCharsets.UTF_8));
    }

    ProtoWriter bytes(int field, byte[] value) {
        tag(field, WIRE_LENGTH_DELIMITED);
        varint(value.length);
        out.write(value, 0, value.length);
        return this;
    }

    /** Writes a nested message, even when empty (presence matters for oneof members). */
    ProtoWriter message(int field, ProtoWriter nested) {
        return bytes(field, nested.toByteArray());
    }

    ProtoWriter uint64(int field, long value) {
        if (value == 0) {
            return this;
        }
        tag(field, WIRE_VARINT);
        varint(value);
        return this;
    }

    ProtoWriter bool(int field, boolean value) {
        if (!value) {
            return this;
        }
        tag(field, WIRE_VARINT);
        varint(1);
        return this;
    }

    /** A member of a oneof or an {@code optional} field: written even when it is the default. */
    ProtoWriter int64Always(int field, long value) {
        tag(field, WIRE_VARINT);
        varint(value);
        return this;
    }

    ProtoWriter fixed64(int field, long value) {
        if (value == 0) {
            return this;
        }
        return fixed64Always(field, value);
    }

    ProtoWriter fixed64Always(int field, long value) {
        tag(field, WIRE_FIXED64);
        rawFixed64(value);
        return this;
    }

    /** A double member of a oneof or an {@code optional} field: always written. */
    ProtoWriter doubleAlways(int field, double value) {
        return fixed64Always(field, Double.doubleToRawLongBits(value));
    }

    ProtoWriter packedFixed64(int field, long[] values) {
        if (values.length == 0) {
            return this;
        }
        tag(field, WIRE_LENGTH_DELIMITED);
        varint(8L * values.length);
        for (long value : values) {
            rawFixed64(value);
        }
        return this;
    }

    ProtoWriter packedDouble(int field, double[] values) {
        long[] bits = new long[values.length];
        for (int i = 0; i < values.length; i++) {
            bits[i] = Double.doubleToRawLongBits(values[i]);
        }
        return packedFixed64(field, bits);
    }

    private void tag(int field, int wireType) {
        varint(((long) field << 3) | wireType);
    }

    private void varint(long value) {
        while ((value & ~0x7FL) != 0) {
            out.write((int) ((value & 0x7F) | 0x80));
            value >>>= 7;
        }
        out.write((int) value);
    }

    private void rawFixed64(long value) {
        for (int i = 0; i < 8; i++) {
            out.write((int) (value >>> (8 * i)) & 0xFF);
        }
    }
}
