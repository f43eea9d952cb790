"""argparse types for the devtools commands: a bad value fails at parse time, one line naming the flag.

argparse prints ``argument --flag: <message>`` and exits 2 for an ``ArgumentTypeError``, so every
check here is written once and every flag that takes seconds, a port, a count or a data dir uses it.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

MAX_SECONDS: Final = 86_400.0
# S3 bucket naming (AWS general purpose buckets): 3..63 of [a-z0-9.-], starting and ending with a
# letter or digit, no "..", not an IPv4 address.
_BUCKET_RE: Final = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IPV4_RE: Final = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def seconds(minimum: float = 0.0, *, allow_minimum: bool = False) -> Callable[[str], float]:
    """A finite number of seconds above ``minimum`` (or equal to it when ``allow_minimum``), at most a day."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        low_ok = value >= minimum if allow_minimum else value > minimum
        if not (math.isfinite(value) and low_ok and value <= MAX_SECONDS):
            bound = f">= {minimum:g}" if allow_minimum else f"> {minimum:g}"
            raise argparse.ArgumentTypeError(
                f"must be a finite number of seconds {bound} and <= {MAX_SECONDS:g}, got {text!r}"
            )
        return value

    return parse


def bounded_int(low: int, high: int, what: str = "an integer") -> Callable[[str], int]:
    """An integer in ``low..high`` (inclusive)."""

    def parse(text: str) -> int:
        try:
            # ASCII digits only: int() also reads other scripts' digits ('٣' is 3), which no one means
            value = int(text) if text.strip().isascii() else low - 1
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {what} between {low} and {high}, got {text!r}")
        return value

    return parse


port: Final = bounded_int(1, 65535, "a TCP port")


def data_dir(text: str) -> Path:
    """A directory to use: not empty (that would be the current directory), not an existing file."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a directory, got an empty path")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a directory")
    for parent in path.absolute().parents:
        if parent.exists() and not parent.is_dir():
            raise argparse.ArgumentTypeError(f"{str(parent)!r} (a parent of {text!r}) is not a directory")
    return path


def bucket(text: str) -> str:
    """An S3 bucket name S3Proxy and every S3 client accept."""
    if not _BUCKET_RE.match(text) or ".." in text or _IPV4_RE.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an S3 bucket name: 3..63 characters of lower-case letters, digits, '.' "
            "and '-', starting and ending with a letter or digit, no '..', not an IP address"
        )
    return text
