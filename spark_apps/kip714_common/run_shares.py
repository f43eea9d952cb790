"""What the steps of one pipeline run share: the landing zone's listings, its reads, frames built on them.

Within ``shared_reads`` (one run of several steps, ``pipeline.py``) a value asked for by key is built once
and handed to every step that asks again (``shared``): the rollups and broker-metrics steps read the same
points and roll them up the same way. A small input's shared frames are also persisted
(``persisted``), so Spark computes them once; a large one's are shared as plans only. Scoped to the
block: a later run reads the landing zone afresh (late records included). Persisted frames are released
with the run's other cached frames (``caching.run_caches``, around this block). Outside a block every
call builds, as an app run on its own does.

Module state, not a context variable: the pipeline's steps run in worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from kip714_common.caching import cached
from pyspark.sql import DataFrame

_Value = TypeVar("_Value")


@dataclass
class RunShares:
    persist: bool
    """Whether shared frames are persisted: set once the run knows its input is small (``pipeline.py``)."""
    values: dict[tuple[object, ...], object] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Held while a value is built: a concurrent step asking for it waits, then shares. Reentrant: a
    build may ask for another shared value (the rollup reads the points)."""
    listings: dict[tuple[str, str], object] = field(default_factory=dict)
    """``listed``'s answers: ("exists" | "sizes", landing-zone path) -> its answer."""
    listing_lock: threading.Lock = field(default_factory=threading.Lock)


_ACTIVE: RunShares | None = None


@contextmanager
def shared_reads(persist: bool = False) -> Iterator[RunShares]:
    """Within the block, steps share what they read and build (see the module docstring)."""
    global _ACTIVE
    previous, _ACTIVE = _ACTIVE, RunShares(persist)
    try:
        yield _ACTIVE
    finally:
        _ACTIVE = previous


def shared(key: tuple[object, ...], build: Callable[[], _Value]) -> _Value:
    """``build()`` once per ``key`` within ``shared_reads``; outside it, on every call."""
    shares = _ACTIVE
    if shares is None:
        return build()
    with shares.lock:
        if key not in shares.values:
            shares.values[key] = build()
        return shares.values[key]  # type: ignore[return-value]


def persisted(frame: DataFrame) -> DataFrame:
    """``frame`` cached for the rest of the run when the run shares persisted frames (a small input).

    Two steps' jobs on one cached frame share its shuffle stages; on one executor (``local[n]``, a
    Connect server's) a task that needs a cached block another task is computing waits for it."""
    shares = _ACTIVE
    return cached(frame) if shares is not None and shares.persist else frame


def listed(key: tuple[str, str], list_now: Callable[[], _Value]) -> _Value:
    """A landing-zone listing: within ``shared_reads`` the first answer stands for the whole run.

    On Spark Connect every listing is a Spark job (``files.ConnectFiles``); a live cycle's steps asked
    the same few folders (the markers, the hour folders) about 14 times, some 2 s of a 25 s cycle. One
    answer per run also gives every step the same snapshot of the committed chunks.
    """
    shares = _ACTIVE
    if shares is None:
        return list_now()
    # not ``shares.lock``: a shared read lists the zone while it holds that one
    with shares.listing_lock:
        known = shares.listings.get(key)
    if known is None:
        known = list_now()  # outside the lock: concurrent steps may list different folders at once
        with shares.listing_lock:
            known = shares.listings.setdefault(key, known)
    return known  # type: ignore[return-value]
