"""The CLI's stdout carries results only (the JSON or text a script reads); everything else goes to stderr.

Airflow's logging (structlog) writes to stdout unless told otherwise, and it is set up lazily by
whatever first touches Airflow: with an ``s3://`` data root, the guardrail's WARNING, logged while
``subscriptions add --json`` read the capabilities table through an ``ObjectStoragePath``, came out on
stdout ahead of the JSON and broke every script reading it. So a command runs with ``sys.stdout``
pointed at stderr, and prints its result with ``result()``, to the stdout the process started with.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from typing import TextIO

_results: TextIO | None = None


def result(text: str, *, flush: bool = False) -> None:
    """Print one result for the caller (stdout, even while a command runs)."""
    print(text, file=_results or sys.stdout, flush=flush)


@contextmanager
def results_only_on_stdout() -> Iterator[None]:
    """Within the block, ``print`` and any library's stdout logging go to stderr; ``result`` to stdout."""
    global _results
    previous, _results = _results, sys.stdout
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        _results = previous
