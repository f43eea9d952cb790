"""Which clients: the KIP-714 selector names, declared once for the provider and the Spark apps.

Pure Python on purpose (imported inside ``spark-submit`` and on Airflow workers); the provider's
``airflow_provider_kip714.contract.selectors`` builds headers, parsing and matching on these lists.
Every selector is also a landing column of the same name (``landing_contract.DATAPOINT_COLUMNS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # the function that builds a Column imports pyspark itself: this module stays pure
    from pyspark.sql import Column

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


def selector_condition(match: Mapping[str, str]) -> Column:
    """Spark's predicate for ``match`` on rows with the selector columns: every regex (Java's engine,
    as the broker's) matches its column's whole value; a null value matches nothing."""
    from pyspark.sql import functions as F

    condition = F.lit(True)
    for selector, pattern in match.items():
        value = F.col(selector).cast("string")
        condition = condition & F.coalesce(value.rlike(whole_value_pattern(pattern)), F.lit(False))
    return condition


@dataclass(frozen=True)
class RunSelection:
    """The clients a troubleshooting run is about: those its selectors match, from its window's start.

    Its landing holds every client that pushed while the window was open (and a margin before it);
    the analysis keeps client records that match ``match`` and were pushed at or after ``since``, and
    of the broker records the broker's own series and the per-client series of those clients.
    """

    since: datetime
    match: Mapping[str, str] = field(default_factory=dict)


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
