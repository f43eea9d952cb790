package io.kip714.broker;

import org.junit.jupiter.api.Test;

import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

class OtlpMetricsTest {
    /**
     * Bytes produced by the reference implementation, Python opentelemetry-proto 1.x, for the same
     * MetricsData (resource node_id/cluster_id, scope, an int gauge with an attribute, a cumulative
     * monotonic sum with a negative as_int, a histogram with min/max and an empty attribute value,
     * a double gauge): {@code MetricsData(...).SerializeToString().hex()}.
     */
    private static final String PYTHON_OTLP_HEX =
        "0ad0020a250a0e0a076e6f64655f696412030a01310a130a0a636c75737465725f696412050a0361626312a6020a190a10"
        + "696f2e6b69703731342e62726f6b65721205302e312e3012410a01671207612067617567651a026d732a2f0a2d19e80300"
        + "00000000003105000000000000003a190a12636c69656e745f696e7374616e63655f696412030a017812310a01731a097b"
        + "726571756573747d3a210a1b11f40100000000000019e80300000000000031f9ffffffffffffff1002180112780a01681a"
        + "026d734a6f0a6b11f40100000000000019e80300000000000021030000000000000029000000000000f83f321801000000"
        + "00000000020000000000000000000000000000003a10000000000000e03f000000000000f03f4a070a016112020a005900"
        + "0000000000d03f61000000000000e83f100212190a01642a140a1219e803000000000000210000000000000440";

    @Test
    void encodesByteIdenticalToOpenTelemetryProto() {
        Map<String, String> resource = new LinkedHashMap<>();
        resource.put("node_id", "1");
        resource.put("cluster_id", "abc");
        byte[] encoded = new OtlpMetrics(resource, "io.kip714.broker", "0.1.0")
            .gauge("g", "a gauge", "ms", List.of(OtlpMetrics.NumberPoint.ofLong(Map.of("client_instance_id", "x"), 0, 1000, 5)))
            .cumulativeMonotonicSum("s", "", "{request}", List.of(OtlpMetrics.NumberPoint.ofLong(Map.of(), 500, 1000, -7)))
            .cumulativeHistogram("h", "", "ms", List.of(new OtlpMetrics.HistogramPoint(Map.of("a", ""), 500, 1000, 3, 1.5,
                new long[] {1, 2, 0}, new double[] {0.5, 1.0}, 0.25, 0.75)))
            .gauge("d", "", "", List.of(OtlpMetrics.NumberPoint.ofDouble(Map.of(), 0, 1000, 2.5)))
            .toMetricsData();
        assertEquals(PYTHON_OTLP_HEX, HexFormat.of().formatHex(encoded));
    }

    @Test
    void emptyMetricListsAreLeftOut() {
        byte[] encoded = new OtlpMetrics(Map.of(), "scope", "")
            .gauge("never", "", "", List.of())
            .toMetricsData();
        ProtoReader scopeMetrics = new ProtoReader(encoded).message(1).message(2);
        assertEquals("scope", scopeMetrics.message(1).string(1));
        assertEquals(false, scopeMetrics.has(2));
    }

    @Test
    void varintsSpanSeveralBytes() {
        byte[] encoded = new ProtoWriter().uint64(1, 300).uint64(2, Long.MAX_VALUE).toByteArray();
        assertEquals("08ac0210ffffffffffffffff7f", HexFormat.of().formatHex(encoded));
    }
}
