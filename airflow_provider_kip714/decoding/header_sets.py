"""Intern header sets: each distinct set of record headers is kept (and parsed, and written) once.

A client's pushes all carry the same ``kip714.*`` headers, so a batch of thousands of records has a
few dozen distinct header sets. Landing keeps one copy of each (``PartitionBatch``), the raw table
writes each set's map once, and decoding parses each set's labels once; all of them use this class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

Headers: TypeAlias = Sequence[tuple[str, bytes | None]] | None
HeaderSet: TypeAlias = tuple[tuple[str, bytes | None], ...] | None


def as_text(headers: HeaderSet) -> list[tuple[str, str | None]]:
    """A header set as ``raw/`` keeps it: values as text, undecodable bytes replaced (the bytes that
    matter, the record's value, stay as received); no headers is an empty map."""
    return [
        (name, None if raw is None else raw.decode("utf-8", errors="replace")) for name, raw in headers or ()
    ]


class HeaderSets:
    """The distinct header sets seen so far (``sets``), each with its slot (position in ``sets``).

    ``slot`` interns by value (a fresh header list per consumed message is fine); ``slots`` interns a
    whole sequence and also short-cuts by identity, which is safe because the caller's sequence keeps
    every header object alive for the call (so no ``id()`` is reused) and landing hands over one
    object per distinct set.
    """

    __slots__ = ("_by_value", "sets")

    def __init__(self) -> None:
        self.sets: list[HeaderSet] = []
        self._by_value: dict[HeaderSet, int] = {}

    def __len__(self) -> int:
        return len(self.sets)

    def slot(self, headers: Headers) -> int:
        """The slot of ``headers`` (by value), adding it as a new set if it is one."""
        key = tuple(headers) if headers else None
        slot = self._by_value.get(key)
        if slot is None:
            slot = self._by_value[key] = len(self.sets)
            self.sets.append(key)
        return slot

    def slots(self, header_lists: Sequence[Headers]) -> list[int]:
        """Slots of many header lists at once, interning each distinct object once (C-level loops)."""
        objects = {id(headers): headers for headers in header_lists}  # the sequence keeps them alive
        slot_of = {key: self.slot(headers) for key, headers in objects.items()}
        return list(map(slot_of.__getitem__, map(id, header_lists)))


__all__ = ["HeaderSet", "HeaderSets", "Headers"]
