"""The OTLP metric names of the broker plugin's ``broker`` records: the one Python definition.

Pure Python, like ``landing_contract``: the Spark apps filter landed points on these names, and the
provider's ``contract.topic`` re-exports ``BrokerMetric`` (the plugin's side is ``TopicContract.java``).
"""

from __future__ import annotations

from enum import StrEnum


class BrokerMetric(StrEnum):
    """OTLP metric names of the plugin's broker records."""

    INSTANCE_COUNT = "kafka.server.client_metrics.instance.count"
    UNKNOWN_SUBSCRIPTION_REQUESTS = "kafka.server.client_metrics.unknown_subscription_request.count"
    THROTTLES = "kafka.server.client_metrics.throttle.count"
    PLUGIN_EXPORTS = "kafka.server.client_metrics.plugin_export.count"
    PLUGIN_ERRORS = "kafka.server.client_metrics.plugin_error.count"
    PLUGIN_EXPORT_TIME = "kafka.server.client_metrics.plugin_export.time"
    PLUGIN_DROPS = "kip714.plugin.dropped.count"
