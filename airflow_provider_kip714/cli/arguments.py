"""argparse value types shared by every ``kip714`` command group."""

from __future__ import annotations

import argparse
import re

_ASCII_INTEGER = re.compile(r"-?[0-9]+", re.ASCII)


def ascii_int(text: str) -> int:
    """``type=int`` without its surprises: ``int()`` also reads ``'٣'`` (Arabic-Indic three), ``'1_000'``
    and ``' 7 '``; a count on a command line is written in ASCII digits, or it is a typo."""
    if not _ASCII_INTEGER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"must be an integer written in ASCII digits (got {text!r})")
    return int(text)
