"""The id of a Spark Connect server session that successive runs share (live mode's cycles): one rule, for
the pipeline's ``--connect-session`` and for the id live mode keeps in its cursor. pyspark-free: the
provider imports it."""

from __future__ import annotations

import uuid


def new_session_id() -> str:
    """A fresh id: Spark Connect takes a version-4 UUID."""
    return str(uuid.uuid4())


def is_session_id(value: object) -> bool:
    """Whether ``value`` is a version-4 UUID in canonical form (lower case, hyphens)."""
    if not isinstance(value, str):
        return False
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return False
    return parsed.version == 4 and str(parsed) == value
