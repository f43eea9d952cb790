"""Own baselines learned once for a history, read back by every later run judging with the same one.

Live cycles judge a new window every few seconds against the same history: the hourly rollups table's last
whole hours (``--history-end``), which change once an hour. Learning them again each cycle read that whole
history twice (the medians, then the deviations from them): 6.9-11.7 s of a settled 1,000-instance
cycle's 30.6-33.6 s of server CPU (``docs/benchmarks.md``, session 29). With ``--baselines-cache FOLDER``
a run reads the baselines a run with the same history and settings wrote below ``FOLDER``, or learns and
writes them. The caller names ``FOLDER`` after the history's files (``live.cycle``), so a rewritten hour
is learned again: this module cannot tell. It adds the learning settings and ``STORE_VERSION`` to the path.

The rows carry how many were written (``LEARNED_ROWS``; a history that yields none writes one marker row),
so a write a killed run cut short reads as absent and is learned and written again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Final

from kip714_common.caching import cached
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

STORE_VERSION: Final = 1
"""Part of every folder's name: raise it when learning changes (``baselines.py``), so kept baselines of the
old kind are not read."""
LEARNED_ROWS: Final = "_learned_rows"
"""How many baselines the write held, on every row: fewer rows read means the write was cut short."""


def settings_folder(cache: str, settings: dict[str, object]) -> str:
    """``cache``'s subfolder for baselines learned with ``settings`` (a digest of their JSON form)."""
    keyed = {"store_version": STORE_VERSION, **settings}
    digest = hashlib.sha256(json.dumps(keyed, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return f"{cache.rstrip('/')}/learned-{digest}"


def stored_baselines(
    spark: SparkSession, folder: str, learn: Callable[[], DataFrame | None]
) -> DataFrame | None:
    """The baselines written whole in ``folder``, else ``learn()``'s, written there for the next run; None
    (nothing written) when ``learn`` finds no history to learn from.

    The learned frame is cached for the rest of the run (``caching.cached``): counting it and writing it
    would otherwise learn twice."""
    stored = _written_whole(spark, folder)
    if stored is not None:
        return stored
    fresh = learn()
    if fresh is None:
        return None
    learned = cached(fresh)
    rows = learned.count()
    if rows:
        written = learned.withColumn(LEARNED_ROWS, F.lit(rows).cast("long"))
    else:  # one marker row, counted 0: "learned, and there was nothing to learn"
        nulls = [F.lit(None).cast(field.dataType).alias(field.name) for field in learned.schema.fields]
        written = spark.range(1).select(*nulls, F.lit(0).cast("long").alias(LEARNED_ROWS))
    written.coalesce(1).write.mode("overwrite").parquet(folder)
    return learned


def _written_whole(spark: SparkSession, folder: str) -> DataFrame | None:
    """``folder``'s baselines if a run wrote them all; None if it holds none, or a write cut short.

    One read, no separate listing: a missing folder, or one holding only a killed write's hidden files,
    fails it with Spark's ``AnalysisException`` (classic and Connect alike)."""
    try:
        stored = spark.read.parquet(folder)
        counts = [F.count(F.lit(1)).alias("rows"), F.min(LEARNED_ROWS).alias("low"), F.max(LEARNED_ROWS)]
        rows, low, high = stored.agg(*counts).collect()[0]
    except AnalysisException:
        return None
    learned_all = rows > 0 and low == high == rows
    learned_none = rows == 1 and low == high == 0
    if not (learned_all or learned_none):
        return None
    return stored.where(F.col(LEARNED_ROWS) > 0).drop(LEARNED_ROWS)
