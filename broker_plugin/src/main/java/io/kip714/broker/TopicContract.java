package io.kip714.broker;

/**
 * Names of the telemetry topic contract (docs/topic-contract.md); the Python side holds the same
 * names in airflow_provider_kip714/contract/topic.py.
 */
final class TopicContract {
    static final String DEFAULT_TOPIC = "_client_telemetry";

    static final String TYPE = "kip714.type";
    static final String TYPE_CLIENT = "client";
    static final String TYPE_BROKER = "broker";

    static final String CLIENT_INSTANCE_ID = "kip714.client_instance_id";
    static final String CLIENT_ID = "kip714.client_id";
    static final String CLIENT_SOFTWARE_NAME = "kip714.client_software_name";
    static final String CLIENT_SOFTWARE_VERSION = "kip714.client_software_version";
    static final String CLIENT_SOURCE_ADDRESS = "kip714.client_source_address";
    static final String CLIENT_SOURCE_PORT = "kip714.client_source_port";
    static final String PRINCIPAL = "kip714.principal";
    static final String LISTENER = "kip714.listener";
    static final String NODE_ID = "kip714.node_id";
    static final String CLUSTER_ID = "kip714.cluster_id";
    static final String TERMINATING = "kip714.terminating";
    static final String PUSH_INTERVAL_MS = "kip714.push_interval_ms";
    static final String SUBSCRIPTION_ID = "kip714.subscription_id";

    static final String INSTANCE_COUNT = "kafka.server.client_metrics.instance.count";
    static final String UNKNOWN_SUBSCRIPTION_REQUESTS = "kafka.server.client_metrics.unknown_subscription_request.count";
    static final String THROTTLES = "kafka.server.client_metrics.throttle.count";
    static final String PLUGIN_EXPORTS = "kafka.server.client_metrics.plugin_export.count";
    static final String PLUGIN_ERRORS = "kafka.server.client_metrics.plugin_error.count";
    static final String PLUGIN_EXPORT_TIME = "kafka.server.client_metrics.plugin_export.time";
    static final String PLUGIN_EXPORT_TIME_AVG = "kafka.server.client_metrics.plugin_export.time.avg";
    static final String PLUGIN_EXPORT_TIME_MAX = "kafka.server.client_metrics.plugin_export.time.max";
    static final String PLUGIN_DROPS = "kip714.plugin.dropped.count";
    static final String PLUGIN_EXPORTED = "kip714.plugin.exported.count";
    static final String PLUGIN_BUFFERED = "kip714.plugin.buffered.records";

    static String brokerRecordKey(String nodeId) {
        return "broker-" + nodeId;
    }

    private TopicContract() {
    }
}
