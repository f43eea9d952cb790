"""Frames a run caches, released when the run ends.

A Spark Connect server's cache manager is shared by every session and outlives them: a frame one run
persisted and never unpersisted stays cached, with the broadcasts its plan holds, until memory pressure
evicts it, while later runs pile up their own. A step that caches a frame for the rest of the run does it
through ``cached``; the pipeline releases every such frame when its steps are done (``run_caches``). An
app run on its own releases nothing: its JVM ends with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame

_RUN: list[DataFrame] | None = None


def cached(frame: DataFrame) -> DataFrame:
    """``frame.persist()`` (memory and disk), released when the enclosing ``run_caches`` ends."""
    persisted = frame.persist()
    if _RUN is not None:
        _RUN.append(persisted)  # list.append is atomic: the pipeline's steps run on threads
    return persisted


@contextmanager
def run_caches() -> Iterator[None]:
    """Unpersist, on the way out, every frame ``cached`` within the block."""
    global _RUN
    previous, _RUN = _RUN, []
    try:
        yield
    finally:
        frames, _RUN = _RUN, previous
        for frame in frames:
            frame.unpersist()
