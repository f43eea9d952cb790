package io.kip714.broker;

import com.github.luben.zstd.ZstdInputStream;
import net.jpountz.lz4.LZ4FrameInputStream;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.GZIPInputStream;

/**
 * Kafka 3.7 hands the plugin a push's bytes as the client compressed them: its
 * {@code PushTelemetryRequest.metricsData()} skips decompression ("TODO: Add support for
 * decompression of metrics data"), although the broker offers zstd, lz4, gzip and snappy to clients.
 * Kafka 3.8+ decompresses first. A decompressed OTLP {@code MetricsData} starts with field 1
 * ({@code 0x0A}), so a zstd, gzip or LZ4 frame is told apart by its magic number and decompressed
 * here, with the libraries the broker itself ships. Snappy (a raw block without a magic number from
 * librdkafka) cannot be told apart and passes unchanged; clients prefer zstd, the broker's first choice.
 */
final class CompressedPayloads {
    /** Cap on a decompressed push (Kafka's telemetry.max.bytes default is 1 MiB). */
    static final int MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024;

    private CompressedPayloads() {
    }

    /**
     * The OTLP bytes of a push: {@code data} itself unless it is a zstd, gzip or LZ4 frame. A frame
     * that does not decompress (corrupt, or over the cap) is kept as it came, so landing quarantines
     * it with a reason rather than the plugin dropping it unseen.
     */
    static byte[] decompressed(byte[] data) {
        try {
            if (isZstd(data)) {
                return readAll(new ZstdInputStream(new ByteArrayInputStream(data)));
            }
            if (isGzip(data)) {
                return readAll(new GZIPInputStream(new ByteArrayInputStream(data)));
            }
            if (isLz4Frame(data)) {
                return readAll(new LZ4FrameInputStream(new ByteArrayInputStream(data)));
            }
        } catch (IOException | RuntimeException e) {
            return data;
        }
        return data;
    }

    static boolean isZstd(byte[] data) {
        return startsWith(data, 0x28, 0xB5, 0x2F, 0xFD);
    }

    static boolean isGzip(byte[] data) {
        return startsWith(data, 0x1F, 0x8B);
    }

    static boolean isLz4Frame(byte[] data) {
        return startsWith(data, 0x04, 0x22, 0x4D, 0x18);
    }

    private static boolean startsWith(byte[] data, int... magic) {
        if (data.length < magic.length) {
            return false;
        }
        for (int i = 0; i < magic.length; i++) {
            if ((data[i] & 0xFF) != magic[i]) {
                return false;
            }
        }
        return true;
    }

    private static byte[] readAll(InputStream in) throws IOException {
        try (in) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] chunk = new byte[8192];
            int read;
            while ((read = in.read(chunk)) != -1) {
                out.write(chunk, 0, read);
                if (out.size() > MAX_DECOMPRESSED_BYTES) {
                    throw new IOException("decompressed push exceeds " + MAX_DECOMPRESSED_BYTES + " bytes");
                }
            }
            return out.toByteArray();
        }
    }
}
