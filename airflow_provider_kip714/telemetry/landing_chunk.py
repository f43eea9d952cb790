"""A landing chunk: one partition's consecutive records, as the consume loop cuts them.

The chain of a landing run reads ``landing_fetch`` (the readers) -> ``landing_chunk`` (what they cut)
-> ``landing_stage`` (decode and write on a staging thread) -> ``landing_zone`` (commit). This module is
plain data, so the consume loop imports neither pyarrow nor the decoders nor the zone.

- ``PartitionBatch``: the Python reader's lists, appended to message by message.
- ``NativeChunk``: the native reader's (``kip714_native.TopicReader``) column buffers, as it filled them.
"""

from __future__ import annotations

from airflow_provider_kip714.decoding.header_sets import HeaderSet, HeaderSets


class PartitionBatch:
    """One partition's consecutive records in compact columns, as the Python reader hands them on.

    Each distinct header set (one per client connection, usually) is kept once: decoding parses its
    labels once and the raw table writes its map once, instead of once per record.
    """

    __slots__ = (
        "_interned",
        "header_index",
        "header_sets",
        "keys",
        "offsets",
        "partition",
        "timestamps",
        "topic",
        "values",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self._interned = HeaderSets()
        self.header_sets: list[HeaderSet] = self._interned.sets  # each distinct header set once
        self.header_index: list[int] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def append(
        self,
        offset: int,
        timestamp_ms: int,
        key: bytes | None,
        headers: list[tuple[str, bytes | None]] | None,
        value: bytes | None,
    ) -> None:
        self.header_index.append(self._interned.slot(headers))
        self.offsets.append(offset)
        self.timestamps.append(timestamp_ms)
        self.keys.append(key)
        self.values.append(value)


class NativeChunk:
    """One partition's consecutive records as the native reader cut them: its buffers, untouched.

    ``buffers`` holds little-endian ``offsets`` and ``timestamps`` (int64), ``header_index`` (int32),
    ``keys``/``values`` as ``<name>.offsets|data|valid`` and the distinct ``header_sets``; the stager
    reads them in place (``landing_stage.record_columns``).
    """

    __slots__ = ("buffers", "partition", "topic")

    def __init__(self, topic: str, buffers: dict[str, object]) -> None:
        self.topic = topic
        self.partition: int = buffers["partition"]  # type: ignore[assignment]
        self.buffers = buffers

    def __len__(self) -> int:
        return len(self.buffers["offsets"]) // 8  # type: ignore[arg-type]


Chunk = PartitionBatch | NativeChunk

__all__ = ["Chunk", "NativeChunk", "PartitionBatch"]
