"""What a landed chunk is called: one partition's inclusive offset range, and the token of one attempt
to write it. Every file of a chunk is ``<chunk>.<token>.parquet``, its marker ``<chunk>.<token>.commit``
(in the folder ``kip714_common.commit_markers`` names)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from airflow_provider_kip714.exceptions import LandingError
from spark_apps.kip714_common.commit_markers import COMMITS_DIR, MARKER_SUFFIX

DATA_SUFFIX: Final = ".parquet"
_STEM: Final = re.compile(r"^p(\d{5,})-(\d{20})-(\d{20})(?:\.([0-9a-f]{6,32}))?$")


@dataclass(frozen=True, order=True)
class ChunkId:
    """One partition's inclusive offset range."""

    partition: int
    first_offset: int
    last_offset: int

    @property
    def stem(self) -> str:
        return f"p{self.partition:05d}-{self.first_offset:020d}-{self.last_offset:020d}"

    @classmethod
    def parse(cls, name: str) -> tuple[ChunkId, str] | None:
        """``(chunk, token)`` of a data file or marker name (token ``""`` for pre-marker zones)."""
        for suffix in (DATA_SUFFIX, MARKER_SUFFIX):
            if name.endswith(suffix):
                match = _STEM.match(name[: -len(suffix)])
                if match is None:
                    return None
                chunk = cls(int(match.group(1)), int(match.group(2)), int(match.group(3)))
                return chunk, match.group(4) or ""
        return None


def file_stem(chunk: ChunkId, token: str) -> str:
    return f"{chunk.stem}.{token}" if token else chunk.stem


def next_offsets(chunks: Iterable[ChunkId]) -> dict[int, int]:
    """The next offset to land per partition after the committed ``chunks``; overlapping chunks (a zone
    changed by hand or by two writers) are refused, as landing on them could duplicate records."""
    following: dict[int, int] = {}
    previous: ChunkId | None = None
    for chunk in sorted(chunks):
        same_partition = previous is not None and previous.partition == chunk.partition
        if same_partition and chunk.first_offset <= previous.last_offset:  # type: ignore[union-attr]
            raise LandingError(
                f"{COMMITS_DIR}/: chunks {previous.stem} and {chunk.stem} overlap; "  # type: ignore[union-attr]
                "the landing zone was modified by hand or by two writers"
            )
        following[chunk.partition] = chunk.last_offset + 1
        previous = chunk
    return following
