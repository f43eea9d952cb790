package io.kip714.broker;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Encodes one interval's broker points as OTLP {@code MetricsData} values: the per-client series
 * are split across records of at most {@code instancesPerRecord} client instances each, and the
 * first record also carries the broker-wide series, so every series is in exactly one record.
 */
final class BrokerRecordEncoder {
    static final String INSTANCE_ID_TAG = BrokerMetricsCollector.INSTANCE_ID_TAG;

    /** Number points by contract metric name, and the export-time histogram points. */
    record Points(Map<String, List<OtlpMetrics.NumberPoint>> numbers, List<OtlpMetrics.HistogramPoint> exportTime) {
        Points() {
            this(new HashMap<>(), new ArrayList<>());
        }

        void add(String metric, OtlpMetrics.NumberPoint point) {
            numbers.computeIfAbsent(metric, name -> new ArrayList<>()).add(point);
        }
    }

    private BrokerRecordEncoder() {
    }

    static List<byte[]> encode(String nodeId, String clusterId, Points points, int instancesPerRecord) {
        Map<String, String> resource = new LinkedHashMap<>();
        resource.put("node_id", nodeId);
        resource.put("cluster_id", clusterId);
        int perRecord = Math.max(1, instancesPerRecord);
        Map<String, Integer> groupOf = groupInstances(points, perRecord);
        int groups = Math.max(1, (groupOf.size() + perRecord - 1) / perRecord);
        List<byte[]> records = new ArrayList<>(groups);
        for (int group = 0; group < groups; group++) {
            int current = group;
            Predicate<Map<String, String>> inGroup = attributes -> {
                String instance = attributes.get(INSTANCE_ID_TAG);
                return instance == null ? current == 0 : groupOf.getOrDefault(instance, 0) == current;
            };
            records.add(encodeGroup(resource, points, inGroup));
        }
        return records;
    }

    /** Client instances in a stable order, numbered into groups; broker-wide points go to group 0. */
    private static Map<String, Integer> groupInstances(Points points, int perRecord) {
        TreeSet<String> instances = new TreeSet<>();
        for (OtlpMetrics.HistogramPoint point : points.exportTime()) {
            instances.add(point.attributes().get(INSTANCE_ID_TAG));
        }
        for (List<OtlpMetrics.NumberPoint> list : points.numbers().values()) {
            for (OtlpMetrics.NumberPoint point : list) {
                String instance = point.attributes().get(INSTANCE_ID_TAG);
                if (instance != null) {
                    instances.add(instance);
                }
            }
        }
        Map<String, Integer> groupOf = new HashMap<>();
        for (String instance : instances) {
            groupOf.put(instance, groupOf.size() / perRecord);
        }
        return groupOf;
    }

    private static byte[] encodeGroup(Map<String, String> resource, Points points,
                                      Predicate<Map<String, String>> inGroup) {
        OtlpMetrics otlp = new OtlpMetrics(resource, "io.kip714.broker", PluginVersion.VERSION);
        otlp.gauge(TopicContract.INSTANCE_COUNT, "Client metrics instances the broker manages", "{instance}",
                numbers(points, TopicContract.INSTANCE_COUNT, inGroup))
            .cumulativeMonotonicSum(TopicContract.UNKNOWN_SUBSCRIPTION_REQUESTS,
                "Pushes with an unknown or stale subscription id", "{request}",
                numbers(points, TopicContract.UNKNOWN_SUBSCRIPTION_REQUESTS, inGroup))
            .cumulativeMonotonicSum(TopicContract.THROTTLES, "Pushes throttled for coming too early", "{request}",
                numbers(points, TopicContract.THROTTLES, inGroup))
            .cumulativeMonotonicSum(TopicContract.PLUGIN_EXPORTS, "Pushes handed to the plugin", "{request}",
                numbers(points, TopicContract.PLUGIN_EXPORTS, inGroup))
            .cumulativeMonotonicSum(TopicContract.PLUGIN_ERRORS, "Pushes whose plugin export raised", "{request}",
                numbers(points, TopicContract.PLUGIN_ERRORS, inGroup))
            .cumulativeHistogram(TopicContract.PLUGIN_EXPORT_TIME,
                "Time spent in this plugin's export per push, measured by the plugin", "ms",
                points.exportTime().stream().filter(point -> inGroup.test(point.attributes())).toList())
            .gauge(TopicContract.PLUGIN_EXPORT_TIME_AVG, "Broker's own windowed average export time", "ms",
                numbers(points, TopicContract.PLUGIN_EXPORT_TIME_AVG, inGroup))
            .gauge(TopicContract.PLUGIN_EXPORT_TIME_MAX, "Broker's own windowed maximum export time", "ms",
                numbers(points, TopicContract.PLUGIN_EXPORT_TIME_MAX, inGroup))
            .cumulativeMonotonicSum(TopicContract.PLUGIN_DROPS, "Records the plugin dropped instead of writing",
                "{record}", numbers(points, TopicContract.PLUGIN_DROPS, inGroup))
            .cumulativeMonotonicSum(TopicContract.PLUGIN_EXPORTED, "Records the topic acknowledged", "{record}",
                numbers(points, TopicContract.PLUGIN_EXPORTED, inGroup))
            .gauge(TopicContract.PLUGIN_BUFFERED, "Records waiting in the plugin or its producer", "{record}",
                numbers(points, TopicContract.PLUGIN_BUFFERED, inGroup));
        return otlp.toMetricsData();
    }

    private static List<OtlpMetrics.NumberPoint> numbers(Points points, String metric,
                                                         Predicate<Map<String, String>> inGroup) {
        return points.numbers().getOrDefault(metric, List.of()).stream()
            .filter(point -> inGroup.test(point.attributes())).toList();
    }
}
