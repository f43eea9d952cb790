"""Which clients: the KIP-714 selector names, declared once for the provider and the Spark apps.

Pure Python on purpose (imported inside ``spark-submit`` and on Airflow workers); the provider's
``airflow_provider_kip714.contract.selectors`` builds headers, parsing and matching on these lists.
Every selector is also a landing column of the same name (``landing_contract.DATAPOINT_COLUMNS``).
"""

from __future__ import annotations

from typing import Final

SELECTORS: Final[tuple[str, ...]] = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)
"""The six keys Kafka accepts in a subscription's ``match`` (``selector=regex``)."""

RULE_SELECTORS: Final[tuple[str, ...]] = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "principal",
)
"""Identity columns a rule's ``match`` may filter on: the KIP selectors the rollups keep (no source
port) plus the broker-added ``principal``."""


def whole_value_pattern(pattern: str) -> str:
    """Anchor a regex so that it must match the whole value, as the broker matches selectors."""
    return f"^(?:{pattern})$"
