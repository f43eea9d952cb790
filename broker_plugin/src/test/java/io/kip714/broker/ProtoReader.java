package io.kip714.broker;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Test-side protobuf reader: splits one message into its fields, to walk encoded OTLP. */
final class ProtoReader {
    /** Field values: Long for varint/fixed64, byte[] for length-delimited. */
    final Map<Integer, List<Object>> fields = new LinkedHashMap<>();

    ProtoReader(byte[] bytes) {
        int[] position = {0};
        while (position[0] < bytes.length) {
            long tag = varint(bytes, position);
            int field = (int) (tag >>> 3);
            int wireType = (int) (tag & 7);
            Object value;
            switch (wireType) {
                case 0 -> value = varint(bytes, position);
                case 1 -> {
                    long fixed = 0;
                    for (int i = 0; i < 8; i++) {
                        fixed |= (bytes[position[0] + i] & 0xFFL) << (8 * i);
                    }
                    position[0] += 8;
                    value = fixed;
                }
                case 2 -> {
                    int length = (int) varint(bytes, position);
                    byte[] nested = new byte[length];
                    System.arraycopy(bytes, position[0], nested, 0, length);
                    position[0] += length;
                    value = nested;
                }
                default -> throw new IllegalArgumentException("unexpected wire type " + wireType);
            }
            fields.computeIfAbsent(field, f -> new ArrayList<>()).add(value);
        }
    }

    List<ProtoReader> messages(int field) {
        List<ProtoReader> out = new ArrayList<>();
        for (Object value : fields.getOrDefault(field, List.of())) {
            out.add(new ProtoReader((byte[]) value));
        }
        return out;
    }

    ProtoReader message(int field) {
        return messages(field).get(0);
    }

    String string(int field) {
        List<Object> values = fields.get(field);
        return values == null ? "" : new String((byte[]) values.get(0), StandardCharsets.UTF_8);
    }

    long number(int field) {
        List<Object> values = fields.get(field);
        return values == null ? 0L : (Long) values.get(0);
    }

    boolean has(int field) {
        return fields.containsKey(field);
    }

    /** OTLP KeyValue list (string values) at {@code field}. */
    Map<String, String> stringAttributes(int field) {
        Map<String, String> attributes = new LinkedHashMap<>();
        for (ProtoReader keyValue : messages(field)) {
            attributes.put(keyValue.string(1), keyValue.message(2).string(1));
        }
        return attributes;
    }

    private static long varint(byte[] bytes, int[] position) {
        long result = 0;
        int shift = 0;
        while (true) {
            byte b = bytes[position[0]++];
            result |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return result;
            }
            shift += 7;
        }
    }
}
