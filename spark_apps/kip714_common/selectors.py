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


def regex_problem(pattern: str) -> str | None:
    """What Java's and Python's regex engines both refuse: a trailing lone ``\\`` or unbalanced
    ``(``/``)`` outside character classes. Everything else is the broker's to judge (Java syntax such
    as ``\\p{L}`` is valid there); the provider's ``ClientMetricsAdmin.validate``
    asks it, and Spark's ``rlike`` compiles it."""
    depth = 0
    in_class = 0
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if index + 1 == len(pattern):
                return "ends with a lone backslash"
            if pattern[index + 1] == "Q":  # Java's \Q...\E quoting: not ours to judge
                return None
            index += 2
            continue
        if in_class:
            if char == "[":
                in_class += 1
            elif char == "]":
                in_class -= 1
        elif char == "[":
            in_class = 1
            index += 1
            if pattern[index : index + 1] == "^":
                index += 1
            if pattern[index : index + 1] == "]":  # a leading ] is literal in both engines
                index += 1
            continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return "has an unbalanced ')'"
        index += 1
    if in_class:
        return None  # Java nests classes, Python does not: the broker decides
    return "has an unbalanced '('" if depth else None
