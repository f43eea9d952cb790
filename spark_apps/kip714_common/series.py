"""One row per distinct landed series, and a 64-bit id for each: what lets the apps group and join by a long.

``series_id`` stands for (source name, normalised labels, type, temporality); ``_raw_key`` for the series
as landed, so a point finds its row without copying label arrays into a join key. ``landing.normalise``
builds the table once per read and broadcasts it back onto the points.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kip714_common.caching import cached
from kip714_common.names import labels_from_entries_column, labels_key_column, metric_name_column
from kip714_common.schemas import STRING_MAP
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

SERIES_ID_SEED = 714
PointKind = tuple[str | None, str | None]
"""(metric_type, temporality) of a data point, as landed."""


RAW_SERIES_COLUMNS = ("_source_name", "_label_keys", "_label_values", "_kind", "_temporality")
"""A series as landed, in the names table's column names and hashing order (``raw_series_columns``)."""


def raw_series_columns(points: DataFrame) -> dict[str, Column]:
    """A point's series as landed, in the names table's column names.

    The label map as its key and value arrays: views of the map, where ``map_entries`` would build an
    array per point.
    """
    return {
        "_source_name": points["metric_name"],
        "_label_keys": F.map_keys(points["attributes"]),
        "_label_values": F.map_values(points["attributes"]),
        "_kind": points["metric_type"],
        "_temporality": points["temporality"],
    }


def raw_series_key(points: DataFrame, seed: int) -> Column:
    """64-bit hash of a point's series as landed: the same value for a point and its names-table row."""
    point = raw_series_columns(points)
    return F.xxhash64(F.lit(seed), *[point[name] for name in RAW_SERIES_COLUMNS])


@dataclass(frozen=True)
class SeriesTable:
    names: DataFrame
    """One row per distinct landed series: ``_source_name``, ``_label_keys``, ``_label_values``, ``_kind``,
    ``_temporality``, ``_metric_name``, ``_labels``, ``_attributes_key``, ``series_id``, ``_raw_key``."""
    kinds: frozenset[PointKind]
    raw_seed: int | None
    """The seed that makes ``_raw_key`` unique over the table, or None: join points on the whole series."""


def series_table(typed: DataFrame, aliases: Mapping[str, str]) -> SeriesTable:
    """Normalised names, labels and ``series_id`` per distinct (name, labels, type, temporality); kinds.

    ``series_id`` stands for (source name, normalised labels, type, temporality), which decides the
    normalised name too: the rollup groups points by this one long instead of five strings, and joins
    the strings back once per rollup row. ``_raw_key`` stands for the series as landed, so each point
    finds its row by one long. Both are 64-bit hashes; the table is checked for collisions, and on the
    (astronomically unlikely) collision the next seed is used. Hashes skip nulls, so label sets that
    differ only in where a null value sits collide under every seed: points are then joined on the
    whole series instead of ``_raw_key``.
    """
    entries = F.map_entries(F.map_from_arrays("_label_keys", "_label_values"))
    labels = F.when(
        F.coalesce(F.size("_label_keys"), F.lit(0)) <= 0, F.create_map().cast(STRING_MAP)
    ).otherwise(labels_from_entries_column(entries))
    described = cached(
        typed.select(
            "_source_name",
            "_label_keys",
            "_label_values",
            "_kind",
            "_temporality",
            metric_name_column(F.col("_source_name"), aliases).alias("_metric_name"),
            labels.alias("_labels"),
            labels_key_column(labels).alias("_attributes_key"),
        )
    )
    identity = [F.col(c) for c in ("_source_name", "_attributes_key", "_kind", "_temporality")]
    raw = [F.col(c) for c in RAW_SERIES_COLUMNS]
    series_count, row_count, kinds, series_ids, raw_keys = described.agg(
        F.count_distinct(F.struct(*identity)),
        F.count(F.lit(1)),
        F.collect_set(F.struct("_kind", "_temporality")),
        F.count_distinct(F.xxhash64(F.lit(SERIES_ID_SEED), *identity)),
        F.count_distinct(F.xxhash64(F.lit(SERIES_ID_SEED), *raw)),
    ).first()  # type: ignore[misc]
    series_seed = (
        SERIES_ID_SEED if series_ids == series_count else _unique_seed(described, identity, series_count, 16)
    )
    if series_seed is None:
        raise RuntimeError(f"series_id: 16 seeds from {SERIES_ID_SEED} all collide; report this")
    # typed rows are distinct series as landed; two seeds colliding means nulls, not chance
    raw_seed = SERIES_ID_SEED if raw_keys == row_count else _unique_seed(described, raw, row_count, 2)
    names = described.withColumns(
        {
            "series_id": F.xxhash64(F.lit(series_seed), *identity),
            "_raw_key": F.xxhash64(F.lit(raw_seed if raw_seed is not None else SERIES_ID_SEED), *raw),
        }
    )
    return SeriesTable(names, frozenset((kind[0], kind[1]) for kind in kinds), raw_seed)


def _unique_seed(table: DataFrame, columns: list[Column], distinct: int, attempts: int) -> int | None:
    """The first seed after ``SERIES_ID_SEED`` hashing ``columns`` to ``distinct`` values in ``table``."""
    for seed in range(SERIES_ID_SEED + 1, SERIES_ID_SEED + attempts):
        if table.agg(F.count_distinct(F.xxhash64(F.lit(seed), *columns))).first()[0] == distinct:  # type: ignore[index]
            return seed
    return None
