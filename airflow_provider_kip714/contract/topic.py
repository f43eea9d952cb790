"""The telemetry topic contract shared with ``broker_plugin/`` (see docs/topic-contract.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

# the broker records' metric names: declared where the Spark apps (which cannot import this package) read them
from spark_apps.kip714_common.broker_metric_names import BrokerMetric as BrokerMetric

DEFAULT_TELEMETRY_TOPIC: Final = "_client_telemetry"


class RecordType(StrEnum):
    CLIENT = "client"
    BROKER = "broker"


class Header(StrEnum):
    """Header names the plugin writes on every record (UTF-8 values)."""

    TYPE = "kip714.type"
    CLIENT_INSTANCE_ID = "kip714.client_instance_id"
    CLIENT_ID = "kip714.client_id"
    CLIENT_SOFTWARE_NAME = "kip714.client_software_name"
    CLIENT_SOFTWARE_VERSION = "kip714.client_software_version"
    CLIENT_SOURCE_ADDRESS = "kip714.client_source_address"
    CLIENT_SOURCE_PORT = "kip714.client_source_port"
    PRINCIPAL = "kip714.principal"
    LISTENER = "kip714.listener"
    NODE_ID = "kip714.node_id"
    CLUSTER_ID = "kip714.cluster_id"
    TERMINATING = "kip714.terminating"
    PUSH_INTERVAL_MS = "kip714.push_interval_ms"
    SUBSCRIPTION_ID = "kip714.subscription_id"


CLIENT_HEADERS: Final = tuple(Header)
