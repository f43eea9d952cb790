"""Regexes over client-controlled strings, compiled by RE2: matching time linear in the input.

Client ids, software names and addresses come from any client that connects; a user's selector
regex runs against them in the triggerer's shared event loop and in the CLI. A backtracking engine
(Python's ``re``, Java's) can take exponential time on a pattern such as ``(a+)+$``; RE2 cannot.
RE2 also reads ``\\w``, ``\\d`` and ``\\b`` as ASCII, as Java does by default. It lacks backreferences,
lookaround and possessive quantifiers: such patterns are refused with the engine's reason.
"""

from __future__ import annotations

from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would also print the reason on stderr; callers raise it instead


def compile_linear(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (use ``.fullmatch`` for the KIP's whole-value rule).

    Raises ``ValueError`` with RE2's reason when the pattern is invalid or needs backtracking.
    """
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as err:
        reason = err.args[0] if err.args else err
        raise ValueError(
            reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        ) from None
