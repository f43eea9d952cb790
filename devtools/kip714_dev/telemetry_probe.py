"""Speak the KIP-714 telemetry APIs as a client would, to see what the broker tells a given client.

Operators use it to check that a window reaches the clients it targets ("which metrics and interval
would ``client_id=orders-1`` get right now?") without waiting for a real client's next request; tests
use it to provoke broker behaviour (early pushes are throttled) that real clients avoid.
"""

from __future__ import annotations

import gzip
import uuid
from dataclasses import dataclass

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.get_telemetry_subscriptions.v0.request import GetTelemetrySubscriptionsRequest
from kio.schema.get_telemetry_subscriptions.v0.response import GetTelemetrySubscriptionsResponse
from kio.schema.push_telemetry.v0.request import PushTelemetryRequest
from kio.schema.push_telemetry.v0.response import PushTelemetryResponse
from kio.static.primitive import i8, i32

from airflow_provider_kip714.contract.instance_id import to_kafka_form
from airflow_provider_kip714.exceptions import ClientMetricsAdminError
from kip714_dev.kafka_wire import KafkaWireConnection

GET_TELEMETRY_SUBSCRIPTIONS_KEY = 71
PUSH_TELEMETRY_KEY = 72
COMPRESSION_NONE = i8(0)
COMPRESSION_GZIP = i8(1)


@dataclass(frozen=True)
class TelemetrySubscriptionView:
    """What the broker answered to GetTelemetrySubscriptions."""

    client_instance_id: str  # Kafka's base64 form
    subscription_id: int
    push_interval_ms: int
    requested_metrics: tuple[str, ...]
    accepted_compression_types: tuple[int, ...]
    telemetry_max_bytes: int
    delta_temporality: bool

    @property
    def subscribed(self) -> bool:
        return bool(self.requested_metrics)


class TelemetryProbe:
    """One probe client: its own connection, client id and software name, like a real client."""

    def __init__(
        self,
        bootstrap: str,
        client_id: str = "kip714-probe",
        software_name: str = "kip714-probe",
        software_version: str = "1.0",
    ) -> None:
        self._connection = KafkaWireConnection.from_bootstrap(bootstrap, client_id=client_id)
        versions = self._connection.send(
            ApiVersionsRequest(client_software_name=software_name, client_software_version=software_version),
            ApiVersionsResponse,
        )
        keys = {api.api_key for api in versions.api_keys}
        if not {GET_TELEMETRY_SUBSCRIPTIONS_KEY, PUSH_TELEMETRY_KEY} <= keys:
            self._connection.close()
            raise ClientMetricsAdminError(
                "the broker does not advertise the KIP-714 telemetry APIs: no client-telemetry "
                "receiver plugin is configured (metric.reporters), so clients never push"
            )
        self._instance_id: uuid.UUID | None = None

    def get_subscription(self) -> TelemetrySubscriptionView:
        response = self._connection.send(
            GetTelemetrySubscriptionsRequest(client_instance_id=self._instance_id),
            GetTelemetrySubscriptionsResponse,
        )
        if response.error_code is not ErrorCode.none:
            raise ClientMetricsAdminError(f"GetTelemetrySubscriptions failed: {response.error_code.name}")
        if response.client_instance_id is not None:
            self._instance_id = response.client_instance_id
        assert self._instance_id is not None, "the broker assigned no client instance id"
        return TelemetrySubscriptionView(
            client_instance_id=to_kafka_form(str(self._instance_id)),
            subscription_id=int(response.subscription_id),
            push_interval_ms=int(response.push_interval.total_seconds() * 1000),
            requested_metrics=tuple(response.requested_metrics),
            accepted_compression_types=tuple(int(c) for c in response.accepted_compression_types),
            telemetry_max_bytes=int(response.telemetry_max_bytes),
            delta_temporality=bool(response.delta_temporality),
        )

    def push(
        self, subscription_id: int, metrics: bytes, terminating: bool = False, compress: bool = False
    ) -> ErrorCode:
        """Push an OTLP MetricsData payload, as is or gzip-compressed; returns the broker's error code.

        Compressed, a payload can be small on the wire and large once the broker decompresses it: the
        case Kafka 4.3.1+ caps at ``telemetry.max.bytes``.
        """
        response = self._connection.send(
            PushTelemetryRequest(
                client_instance_id=self._instance_id,
                subscription_id=i32(subscription_id),
                terminating=terminating,
                compression_type=COMPRESSION_GZIP if compress else COMPRESSION_NONE,
                metrics=gzip.compress(metrics) if compress else metrics,
            ),
            PushTelemetryResponse,
        )
        return response.error_code

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> TelemetryProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
