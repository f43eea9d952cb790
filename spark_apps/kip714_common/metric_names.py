"""Metric-name normalisation steps 1-3 (``names.py``'s table), without pyspark.

One home for the rule that puts librdkafka's and the Java client's names for one measurement on one
row: the Spark apps (``names.metric_name_column``, the rules loader) and the provider (the
troubleshooting form's thresholds and rules) all import it from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

KAFKA_PREFIX: Final = "org.apache.kafka."
"""KIP-714's namespace of client metric names (what a subscription's ``metrics`` prefixes start with)."""

METRIC_NAME_ALIASES: dict[str, str] = {}
"""Normalised name (after steps 1-2) -> the common name, for differences seen in landed data.

Empty on purpose: the names checked so far (librdkafka 2.16 and Java 3.9 producer/consumer) already agree
after steps 1-2; add an entry here when landed data shows a pair that does not. Apps accept extra
entries with ``--metric-aliases FILE.json``."""


def clean_metric_name(name: str) -> str:
    """Step 1: lower case, ``-`` as ``.`` (the form a subscription's metric prefixes are compared in)."""
    return name.strip().lower().replace("-", ".")


def normalise_metric_name(name: str, aliases: Mapping[str, str] = METRIC_NAME_ALIASES) -> str:
    """The common name of one metric (or a prefix of names, with ``aliases={}``), whichever client sent it."""
    cleaned = clean_metric_name(name).removeprefix(KAFKA_PREFIX)
    return aliases.get(cleaned, cleaned)


__all__ = ["KAFKA_PREFIX", "METRIC_NAME_ALIASES", "clean_metric_name", "normalise_metric_name"]
