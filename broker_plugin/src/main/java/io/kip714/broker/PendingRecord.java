package io.kip714.broker;

import org.apache.kafka.common.header.Header;

import java.nio.charset.StandardCharsets;
import java.util.List;

/** One record waiting for the sender thread: a client push or a broker metrics record. */
record PendingRecord(byte[] key, byte[] value, List<Header> headers, long timestampMs)
    implements BoundedRecordBuffer.Sized {
    @Override
    public int sizeInBytes() {
        int size = key.length + value.length;
        for (Header header : headers) {
            size += header.key().length() + header.value().length;
        }
        return size;
    }

    /** The key as text: the client instance id of a push, {@code broker-<node.id>} of a broker record. */
    String keyText() {
        return new String(key, StandardCharsets.UTF_8);
    }
}
