"""Metric-name and label normalisation across librdkafka and the Java client.

Both clients follow KIP-714's naming (``org.apache.kafka.<group>.<name>``, hyphens become dots) but differ
in details; rollups must put the same measurement from both on one row. The rules, in order:

| step | rule | example |
|---|---|---|
| name 1 | lower-case; ``-`` becomes ``.`` | ``Record-Queue-Time-Max`` -> ``record.queue.time.max`` |
| name 2 | drop the ``org.apache.kafka.`` prefix | ``org.apache.kafka.producer.x`` -> ``producer.x`` |
| name 3 | ``METRIC_NAME_ALIASES`` (after steps 1-2) | a client-specific name -> the common one |
| label 1 | key lower-case; ``.`` and ``-`` become ``_`` | ``node.id`` (librdkafka) -> ``node_id`` |
| label 2 | ``node_id`` value loses a ``node-`` prefix | Java ``"node-1"`` -> ``"1"`` (librdkafka: ``1``) |
| label 3 | ``client_id`` label dropped | the broker-added ``client_id`` column already says it |

Broker metric names (``kafka.server.client_metrics.*``, ``kip714.*``) pass steps 1-2 unchanged.
The Python functions and the Spark expressions below implement the same table; a unit test holds them equal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

KAFKA_PREFIX = "org.apache.kafka."
METRIC_NAME_ALIASES: dict[str, str] = {}
"""Normalised name (after steps 1-2) -> the common name, for differences seen in landed data.

Empty on purpose: the names checked so far (librdkafka 2.16 and Java 3.9 producer/consumer) already agree
after steps 1-2; add an entry here when landed data shows a pair that does not. Apps accept extra
entries with ``--metric-aliases FILE.json``."""

DROPPED_LABELS = frozenset({"client_id"})
NODE_LABEL = "node_id"
_LABEL_SEPARATORS = re.compile(r"[.\-]")


def normalise_metric_name(name: str, aliases: Mapping[str, str] = METRIC_NAME_ALIASES) -> str:
    """The common name of one metric, whichever client sent it."""
    cleaned = name.strip().lower().replace("-", ".")
    if cleaned.startswith(KAFKA_PREFIX):
        cleaned = cleaned[len(KAFKA_PREFIX) :]
    return aliases.get(cleaned, cleaned)


def normalise_labels(labels: Mapping[str, str | int | None]) -> dict[str, str | None]:
    """The common label set of one data point (values as strings, like the landing zone keeps them)."""
    result: dict[str, str | None] = {}
    for key, value in labels.items():
        clean_key = _LABEL_SEPARATORS.sub("_", key.lower())
        if clean_key in DROPPED_LABELS:
            continue
        text = None if value is None else str(value)
        if clean_key == NODE_LABEL and text is not None and text.startswith("node-"):
            text = text[len("node-") :]
        result[clean_key] = text
    return result


def labels_key(labels: Mapping[str, str | None]) -> str:
    """Stable text form of a label set (sorted ``k=v`` joined by ``,``), the rollups' grouping key."""
    return ",".join(sorted(f"{key}={'' if value is None else value}" for key, value in labels.items()))


def metric_name_column(name: Column, aliases: Mapping[str, str] = METRIC_NAME_ALIASES) -> Column:
    """Spark expression of ``normalise_metric_name``."""
    cleaned = F.regexp_replace(F.lower(F.trim(name)), "-", ".")
    stripped = F.regexp_replace(cleaned, r"^org\.apache\.kafka\.", "")
    if not aliases:
        return stripped
    alias_map = F.create_map(*[F.lit(part) for pair in sorted(aliases.items()) for part in pair])
    return F.coalesce(alias_map[stripped], stripped)


def labels_column(labels: Column) -> Column:
    """Spark expression of ``normalise_labels`` (needs ``spark.sql.mapKeyDedupPolicy=LAST_WIN``)."""
    renamed = F.transform_keys(labels, lambda key, _value: F.regexp_replace(F.lower(key), r"[.\-]", "_"))
    kept = F.map_filter(renamed, lambda key, _value: ~key.isin(*sorted(DROPPED_LABELS)))
    return F.transform_values(
        kept,
        lambda key, value: F.when(key == NODE_LABEL, F.regexp_replace(value, "^node-", "")).otherwise(value),
    )


def labels_key_column(labels: Column) -> Column:
    """Spark expression of ``labels_key``."""
    entries = F.transform(
        F.map_entries(F.coalesce(labels, F.create_map().cast("map<string,string>"))),
        lambda entry: F.concat(entry["key"], F.lit("="), F.coalesce(entry["value"], F.lit(""))),
    )
    return F.array_join(F.array_sort(entries), ",")
