"""``PartitionBatch.raw_table`` (built from the batch's columns) equals ``raw_table`` of its records."""

from __future__ import annotations

from airflow_provider_kip714.telemetry.landing_batch import PartitionBatch, raw_table

CLIENT = [("kip714.type", b"client"), ("kip714.client.id", b"orders-1")]
ODD = [("kip714.type", None), ("kip714.note", b"\xff not utf-8")]


def test_raw_table_from_columns_equals_raw_table_of_the_records() -> None:
    batch = PartitionBatch("telemetry", 3)
    batch.append(10, 1_700_000_000_000, b"k1", list(CLIENT), b"v1")
    batch.append(11, 1_700_000_000_001, None, list(ODD), b"v")
    batch.append(12, 0, b"k2", None, None)
    batch.append(14, 5, b"", list(CLIENT), b"")
    batch.append(15, 1_700_000_000_009, b"k3", [], b"v3")

    built = batch.raw_table()

    assert built.equals(raw_table(batch.records()))
    assert built.column("offset").to_pylist() == [10, 11, 12, 14, 15]
    assert built.column("headers").to_pylist()[1] == [
        ("kip714.type", None),
        ("kip714.note", "\ufffd not utf-8"),
    ]
    assert built.column("headers").to_pylist()[2] == built.column("headers").to_pylist()[4] == []
