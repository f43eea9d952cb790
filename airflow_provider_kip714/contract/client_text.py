"""Client-controlled text shown to a person (a terminal, a log line, a chart): data, never control.

Client ids, software names, metric names and label values come from any client that can connect,
and from anyone who can produce to the telemetry topic. Printed raw, ``\\x1b[2J`` clears the reader's
terminal and a NUL or a newline forges lines. Shown through ``printable``, every character that is
not printable reads as its escape (``\\x1b``), and a very long value is cut.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def printable(text: object, limit: int | None = None) -> str:
    """``str(text)`` with non-printable characters escaped, cut to ``limit`` characters (with '…')."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return shown if limit is None or len(shown) <= limit else shown[: limit - 1] + "…"


__all__ = ["printable"]


def safe_link(url: object) -> str | None:
    """``url`` if it is an http(s) URL without control characters, else None (never a ``javascript:``)."""
    if not isinstance(url, str) or not url.isprintable() or len(url) > 2000:
        return None
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.netloc else None
