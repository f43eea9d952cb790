"""Client quotas (AlterClientQuotas, KIP-546) over the raw protocol: neither Python client has them.

The demo uses a byte-rate quota to make a producer's record queue time climb the way a throttled
production client's does.
"""

from __future__ import annotations

from kio.schema.alter_client_quotas.v1.request import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from kio.schema.alter_client_quotas.v1.response import AlterClientQuotasResponse
from kio.schema.errors import ErrorCode
from kio.static.primitive import f64

from airflow_provider_kip714.exceptions import ClientMetricsAdminError
from kip714_dev.kafka_wire import KafkaWireConnection


def set_client_quota(bootstrap: str, client_id: str, key: str, value: float | None) -> None:
    """Set (or with ``value=None`` remove) one quota, e.g. ``producer_byte_rate``, for a client id."""
    entry = EntryData(
        entity=(EntityData(entity_type="client-id", entity_name=client_id),),
        ops=(OpData(key=key, value=f64(value or 0.0), remove=value is None),),
    )
    with KafkaWireConnection.from_bootstrap(bootstrap) as connection:
        response = connection.send(
            AlterClientQuotasRequest(entries=(entry,), validate_only=False), AlterClientQuotasResponse
        )
    for result in response.entries:
        if result.error_code is not ErrorCode.none:
            detail = result.error_message or ""
            raise ClientMetricsAdminError(
                f"quota {key} for client-id {client_id}: {result.error_code.name} {detail}".rstrip()
            )
