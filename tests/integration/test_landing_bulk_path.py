"""Landing's bulk path (a consumed run of one partition read with C-level maps) lands exactly what
the record-by-record path lands: same chunks, same raw, datapoints and quarantine rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from telemetry_helpers import client_headers, create_topic, produce_records, producer_like_payload

from airflow_provider_kip714.telemetry.landing import TopicLander, land_topic

pytestmark = pytest.mark.integration


def _mixed_records(count: int, partitions: int) -> list[tuple[int, bytes | None, Any]]:
    """Several header sets interleaved (two clients, a broker-less set, no headers) and bad values."""
    header_sets = [
        client_headers(),
        client_headers(instance_id="AAAAAAAAAAAAAAAAAAAAAB", client_id="payments-7"),
        None,
        client_headers(client_id="orders-2", extra_header="x"),
    ]
    records = []
    for index in range(count):
        value = producer_like_payload(3, seed=index) if index % 17 else b"\x0a\xff not protobuf"
        records.append((index % partitions, value, header_sets[(index // 3) % len(header_sets)]))
    return records


def _zone_tables(root: Path) -> dict[str, pa.Table]:
    """Every data file of a zone by path without its run token; quarantine's clock column dropped."""
    tables = {}
    for path in sorted(root.rglob("*.parquet")):
        relative = path.relative_to(root).as_posix()
        stem, _token, suffix = relative.rsplit(".", 2)
        table = pq.read_table(path)
        if "quarantined_at" in table.column_names:
            table = table.drop_columns(["quarantined_at"])
        tables[f"{stem}.{suffix}"] = table
    return tables


def _land_in_two_runs(config: dict[str, Any], topic: str, out: Path) -> tuple[int, int]:
    first = land_topic(config, topic, out, chunk_records=70, fsync=False, max_records=333)
    second = land_topic(config, topic, out, chunk_records=70, fsync=False)
    return first.records + second.records, first.quarantined + second.quarantined


def test_bulk_path_lands_the_same_files_as_record_by_record(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = kafka_cluster.client_config()
    topic = create_topic(config, partitions=3)
    produce_records(config, topic, _mixed_records(900, partitions=3))

    bulk_taken: list[int] = []
    bulk = TopicLander._accept_run

    def counting_bulk(self: TopicLander, *args: Any) -> int | None:
        taken = bulk(self, *args)
        bulk_taken.append(taken or 0)
        return taken

    monkeypatch.setattr(TopicLander, "_accept_run", counting_bulk)
    landed_bulk = _land_in_two_runs(config, topic, tmp_path / "bulk")
    assert sum(bulk_taken) > 600, "the bulk path took almost nothing: the comparison would be empty"

    monkeypatch.setattr(TopicLander, "_accept_run", lambda *_args: None)  # every run record by record
    landed_each = _land_in_two_runs(config, topic, tmp_path / "each")

    assert landed_bulk == landed_each
    assert landed_bulk[0] == 900 and landed_bulk[1] > 900 // 17  # bad values and headerless records
    bulk_tables, each_tables = _zone_tables(tmp_path / "bulk"), _zone_tables(tmp_path / "each")
    assert sorted(bulk_tables) == sorted(each_tables)
    assert any(name.startswith("quarantine/") for name in bulk_tables)
    for name, table in bulk_tables.items():
        assert table.equals(each_tables[name]), name
