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
The Python functions (names: ``metric_names``, pyspark-free, which the provider imports too) and the Spark
expressions below implement the same table; a unit test holds them equal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from .metric_names import KAFKA_PREFIX as KAFKA_PREFIX
from .metric_names import METRIC_NAME_ALIASES as METRIC_NAME_ALIASES
from .metric_names import normalise_metric_name as normalise_metric_name

DROPPED_LABELS = frozenset({"client_id"})
NODE_LABEL = "node_id"
_LABEL_SEPARATORS = re.compile(r"[.\-]")


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
    """Stable text form of a label set: JSON sorted by key, ``""`` when empty (the rollups' grouping key)."""
    if not labels:
        return ""
    return json.dumps(dict(sorted(labels.items())), separators=(",", ":"), ensure_ascii=False)


def metric_name_column(name: Column, aliases: Mapping[str, str] = METRIC_NAME_ALIASES) -> Column:
    """Spark expression of ``normalise_metric_name``; translate/substring, no regex (runs on every point)."""
    cleaned = F.translate(F.lower(F.trim(name)), "-", ".")
    stripped = F.when(
        cleaned.startswith(KAFKA_PREFIX), F.substring(cleaned, len(KAFKA_PREFIX) + 1, 1 << 20)
    ).otherwise(cleaned)
    if not aliases:
        return stripped
    alias_map = F.create_map(*[F.lit(part) for pair in sorted(aliases.items()) for part in pair])
    return F.coalesce(alias_map[stripped], stripped)


def _label_key_column(key: Column) -> Column:
    return F.regexp_replace(F.lower(key), r"[.\-]", "_")


def _cleaned_labels(renamed: Column) -> Column:
    """Steps label 2 and 3 on a map whose keys are already renamed (step label 1)."""
    kept = F.map_filter(renamed, lambda key, _value: ~key.isin(*sorted(DROPPED_LABELS)))
    return F.transform_values(
        kept,
        lambda key, value: F.when(key == NODE_LABEL, F.regexp_replace(value, "^node-", "")).otherwise(value),
    )


def labels_column(labels: Column) -> Column:
    """Spark expression of ``normalise_labels`` (needs ``spark.sql.mapKeyDedupPolicy=LAST_WIN``)."""
    renamed = F.transform_keys(labels, lambda key, _value: _label_key_column(key))
    return F.when(F.size(labels) == 0, labels).otherwise(_cleaned_labels(renamed))  # most points: no labels


def labels_from_entries_column(entries: Column) -> Column:
    """``labels_column`` of the map whose ``map_entries`` is ``entries`` (a non-empty array).

    Renames inside the entries and only then builds the map, so duplicate keys resolve exactly as
    ``transform_keys`` resolves them (last one wins, in entry order). Lets apps normalise each distinct
    label set once instead of every data point (``landing.normalise``).
    """
    renamed = F.transform(
        entries,
        lambda entry: F.struct(_label_key_column(entry["key"]).alias("key"), entry["value"].alias("value")),
    )
    return _cleaned_labels(F.map_from_entries(renamed))


def labels_key_column(labels: Column) -> Column:
    """Spark expression of ``labels_key`` (sorted map rendered by ``to_json``: codegen, no lambdas)."""
    ordered = F.map_from_entries(F.sort_array(F.map_entries(labels)))
    return F.when(F.coalesce(F.size(labels), F.lit(0)) <= 0, F.lit("")).otherwise(F.to_json(ordered))
