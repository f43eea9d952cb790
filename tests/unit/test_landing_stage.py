"""``raw_table`` of a ``PartitionBatch``'s columns: every record as received, headers as text."""

from __future__ import annotations

from datetime import UTC, datetime

from airflow_provider_kip714.decoding.decoder import TopicRecord
from airflow_provider_kip714.telemetry.landing_chunk import PartitionBatch
from airflow_provider_kip714.telemetry.landing_stage import raw_table, record_columns

CLIENT = [("kip714.type", b"client"), ("kip714.client.id", b"orders-1")]
ODD = [("kip714.type", None), ("kip714.note", b"\xff not utf-8")]


def test_raw_table_of_a_batch_keeps_every_record_as_received() -> None:
    batch = PartitionBatch("telemetry", 3)
    batch.append(10, 1_700_000_000_000, b"k1", list(CLIENT), b"v1")
    batch.append(11, 1_700_000_000_001, None, list(ODD), b"v")
    batch.append(12, 0, b"k2", None, None)
    batch.append(14, 5, b"", list(CLIENT), b"")
    batch.append(15, 1_700_000_000_009, b"k3", [], b"v3")

    built = raw_table(record_columns(batch))

    assert built.equals(raw_table(record_columns(batch).records()))
    assert built.column("topic").to_pylist() == ["telemetry"] * 5
    assert built.column("partition").to_pylist() == [3] * 5
    assert built.column("offset").to_pylist() == [10, 11, 12, 14, 15]
    assert built.column("timestamp").to_pylist()[:3] == [
        datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC),
        datetime(2023, 11, 14, 22, 13, 20, 1000, tzinfo=UTC),
        datetime(1970, 1, 1, tzinfo=UTC),
    ]
    assert built.column("key").to_pylist() == [b"k1", None, b"k2", b"", b"k3"]
    assert built.column("value").to_pylist() == [b"v1", b"v", None, b"", b"v3"]
    headers = built.column("headers").to_pylist()
    assert headers[0] == headers[3] == [("kip714.type", "client"), ("kip714.client.id", "orders-1")]
    assert headers[1] == [("kip714.type", None), ("kip714.note", "\ufffd not utf-8")]
    assert headers[2] == headers[4] == []


def test_raw_table_of_records_from_two_partitions() -> None:
    records = [
        TopicRecord("t", 0, 7, 1, b"a", CLIENT, b"x"),
        TopicRecord("t", 1, 9, 2, None, None, b"y"),
    ]
    built = raw_table(records)
    assert built.column("partition").to_pylist() == [0, 1]
    assert built.column("headers").to_pylist()[1] == []
