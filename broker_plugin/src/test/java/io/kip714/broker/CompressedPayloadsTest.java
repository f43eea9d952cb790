package io.kip714.broker;

import com.github.luben.zstd.ZstdOutputStream;
import net.jpountz.lz4.LZ4FrameOutputStream;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.function.Function;
import java.util.zip.GZIPOutputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;

/** Kafka 3.7 passes pushes to the plugin still compressed; the plugin decompresses them itself. */
class CompressedPayloadsTest {
    /** An OTLP MetricsData-shaped payload: field 1 (resource_metrics), length-delimited. */
    private static byte[] otlp() {
        byte[] body = new byte[3000];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) ("org.apache.kafka.producer.".charAt(i % 26));
        }
        byte[] payload = new byte[body.length + 3];
        payload[0] = 0x0A;
        payload[1] = (byte) (0x80 | (body.length & 0x7F));
        payload[2] = (byte) (body.length >> 7);
        System.arraycopy(body, 0, payload, 3, body.length);
        return payload;
    }

    private interface Wrap {
        OutputStream wrap(OutputStream out) throws IOException;
    }

    private static byte[] compress(byte[] data, Wrap wrap) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (OutputStream out = wrap.wrap(bytes)) {
            out.write(data);
        }
        return bytes.toByteArray();
    }

    @Test
    void zstdGzipAndLz4FramesAreDecompressed() throws IOException {
        byte[] plain = otlp();
        for (Wrap wrap : new Wrap[] {ZstdOutputStream::new, GZIPOutputStream::new, LZ4FrameOutputStream::new}) {
            byte[] compressed = compress(plain, wrap);
            assertFalse(Arrays.equals(plain, compressed));
            assertArrayEquals(plain, CompressedPayloads.decompressed(compressed));
        }
    }

    @Test
    void decompressedPayloadsPassUnchanged() {
        byte[] plain = otlp();
        assertSame(plain, CompressedPayloads.decompressed(plain));
        byte[] empty = new byte[0];
        assertSame(empty, CompressedPayloads.decompressed(empty));
    }

    @Test
    void aCorruptFrameIsKeptAsItCameForLandingToQuarantine() throws IOException {
        byte[] compressed = compress(otlp(), ZstdOutputStream::new);
        byte[] truncated = Arrays.copyOf(compressed, 12);
        assertSame(truncated, CompressedPayloads.decompressed(truncated));
        Function<byte[], byte[]> same = CompressedPayloads::decompressed;
        byte[] gzipHeaderOnly = {0x1F, (byte) 0x8B, 8, 0};
        assertSame(gzipHeaderOnly, same.apply(gzipHeaderOnly));
    }
}
