"""SIGTERM as a normal exit, so a script's ``finally`` blocks stop the brokers it started.

Python's default SIGTERM kills the process without unwinding: a benchmark stopped with ``kill`` or
``timeout`` left its local Kafka running. Scripts that start servers call ``exit_on_sigterm()`` first.
"""

from __future__ import annotations

import signal
from types import FrameType


def _exit(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # the status a shell reports for a process killed by it


def exit_on_sigterm() -> None:
    """Turn SIGTERM (and SIGHUP) into ``SystemExit`` in the main thread; ``finally`` blocks then run."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit)
