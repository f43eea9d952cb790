"""The native datapoints writer (``decoding/native_writer.py``, ``native/src/parquet/``) against pyarrow's.

Landing stages each chunk twice here, with ``KIP714_DATAPOINTS_WRITER`` native and pyarrow, and every
hour file must be the same to a reader: the same Parquet schema, the same rows and values, the same
min/max/null statistics on the columns readers prune with, the same aggregates in DuckDB, the same
quarantined records. The chunks mix what clients and brokers send: resource attributes, two scopes
with attributes, int and double values, unset times, an attribute without a value, cumulative and
non-monotonic sums, broker headers (null client labels), headers that fail (quarantined), records
across midnight and two hours interleaved. Spark reads the files in ``tests/spark/``.
"""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import duckdb
import kip714_native
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from otlp_payloads import (
    T0_NS,
    broker_headers,
    client_headers,
    every_kind_payload,
    int_attr,
    producer_like_payload,
    string_attr,
)

from airflow_provider_kip714.decoding import native
from airflow_provider_kip714.decoding.decoder import decode_batch
from airflow_provider_kip714.decoding.labels import LABEL_COLUMNS, BatchLabels
from airflow_provider_kip714.decoding.native_writer import (
    NeedsReference,
    WrittenDatapoints,
    native_writer_available,
    write_natively,
    write_raw_natively,
)
from airflow_provider_kip714.decoding.records import Repeated
from airflow_provider_kip714.native_switches import WRITER_ENV, NativeSwitchError
from airflow_provider_kip714.telemetry.landing import land_topic
from airflow_provider_kip714.telemetry.landing_chunk import PartitionBatch
from airflow_provider_kip714.telemetry.landing_stage import (
    raw_table,
    record_columns,
    stage_chunk,
    stage_records,
)
from airflow_provider_kip714.telemetry.landing_zone import _STATISTICS_COLUMNS, LandingZone, parquet_options

FIELDS = ("topics", "partitions", "offsets", "timestamps_ms", "keys", "header_sets", "header_index", "values")
MIDNIGHT_MS = 1_763_856_000_000  # 2025-11-23T00:00:00Z
HOURS_MS = 1_763_800_000_000


def rich_payload(seed: int) -> bytes:
    """Resource attributes of four types, two scopes with attributes, ints, doubles, unset times."""

    def scope(name: str, version: str, base: int) -> m.ScopeMetrics:
        requests = m.Sum(
            aggregation_temporality=m.AGGREGATION_TEMPORALITY_CUMULATIVE,
            is_monotonic=False,
            data_points=[
                m.NumberDataPoint(
                    start_time_unix_nano=T0_NS - 10**9,
                    time_unix_nano=T0_NS + seed + k,
                    as_int=base + seed * 3 + k - 5,
                    attributes=[string_attr("topic", f"orders-{k}"), int_attr("partition", k)],
                )
                for k in range(3)
            ],
        )
        latency = m.Gauge(
            data_points=[
                m.NumberDataPoint(time_unix_nano=0, as_double=-1.5 * seed),
                m.NumberDataPoint(
                    time_unix_nano=T0_NS + 7,
                    as_int=-(2**40) - seed,
                    attributes=[KeyValue(key="empty")],  # no value: null in the map
                    flags=1,
                ),
            ]
        )
        odd = m.Sum(
            aggregation_temporality=0,
            is_monotonic=True,
            data_points=[m.NumberDataPoint(time_unix_nano=T0_NS, as_double=1e300)],
        )
        return m.ScopeMetrics(
            scope=InstrumentationScope(name=name, version=version, attributes=[string_attr("lib", name)]),
            metrics=[
                m.Metric(name=f"{name}.requests", unit="1", sum=requests),
                m.Metric(name=f"{name}.latency", unit="ms", gauge=latency),
                m.Metric(name="odd", sum=odd),
            ],
        )

    resource = Resource(
        attributes=[
            string_attr("client_rack", f"rack-{seed % 3}"),
            string_attr("service.name", "orders"),
            KeyValue(key="pi", value=AnyValue(double_value=3.25)),
            KeyValue(key="on", value=AnyValue(bool_value=seed % 2 == 0)),
        ]
    )
    scopes = [scope("librdkafka", "2.16.0", 10), scope("app", "", 0)]
    data = m.MetricsData(resource_metrics=[m.ResourceMetrics(resource=resource, scope_metrics=scopes)])
    return data.SerializeToString()


HEADER_KINDS = [
    client_headers(),
    client_headers(client_id="payments-7", instance_id="AAECAwQFBgcICQoLDA0OEA"),
    broker_headers(2),
    client_headers(**{"kip714.terminating": "true"}),
]
BAD_HEADERS = client_headers(**{"kip714.node_id": "abc"})  # fails on its headers: quarantined


def mixed_chunk(number: int) -> PartitionBatch:
    batch = PartitionBatch("_client_telemetry", number)
    for i in range(300 + 150 * number):
        payload = rich_payload(i % 17) if (i + number) % 3 else producer_like_payload(10, seed=i % 64)
        if number == 2:  # a producer's late records: two hours interleaved
            timestamp = HOURS_MS + i + (i % 3 == 0) * 3_600_000
        elif number % 2:  # across midnight: two dates
            timestamp = MIDNIGHT_MS - 60_000 + i * 200
        else:
            timestamp = HOURS_MS + i
        headers = HEADER_KINDS[(i // 5 + number) % 4] if i % 97 else BAD_HEADERS
        key: bytes | None = b"k%d" % i
        if number == 3 and i % 50 == 7:  # what raw/ keeps as received: no headers, no key, odd bytes
            headers, key = [None, [("x-trace", b"\xff\xfe"), ("x-none", None)]][i % 2], None
        batch.append(10_000 * number + i, timestamp, key, headers, payload)
    return batch


def staged_files(directory: Path, batch: PartitionBatch, writer: str, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv(WRITER_ENV, writer)
    zone = LandingZone(directory / writer, "_client_telemetry", fsync=False)
    staged = stage_chunk(zone, "otlp_proto", batch)
    files = sorted(glob.glob(str(directory / writer / "datapoints" / "*" / "*" / "*.parquet")))
    return staged, {os.path.relpath(path, directory / writer).rsplit("/", 1)[0]: path for path in files}


def plain(table: pa.Table) -> pa.Table:
    """Dictionary columns as the strings they stand for (how every reader reads them)."""
    fields = [f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in table.schema]
    return table.cast(pa.schema(fields))


def statistics(path: str) -> dict[str, object]:
    """Per statistics column: min and max over the row groups and the total null count."""
    metadata = pq.ParquetFile(path).metadata
    found: dict[str, list[object]] = {}
    for group in range(metadata.num_row_groups):
        for index in range(metadata.num_columns):
            column = metadata.row_group(group).column(index)
            stats = column.statistics
            if stats is None or not stats.has_min_max:
                continue
            low, high, nulls = found.get(column.path_in_schema, [stats.min, stats.max, 0])
            found[column.path_in_schema] = [
                min(low, stats.min),
                max(high, stats.max),
                nulls + stats.null_count,
            ]
    return found


AGGREGATES = (
    "select count(*), sum(value) filter (where abs(value) < 1e12), min(value), max(value), sum(value_int),"
    ' sum("offset"), count(distinct metric_name), min(time), max(time), count(start_time),'
    " sum(cardinality(attributes)), sum(cardinality(resource_attributes)), count(scope_name),"
    " count(client_id), count(node_id), count(quantiles), count(bucket_counts), min(date), max(date),"
    " sum(hour), count(is_monotonic), count(temporality), sum(flags), count_if(terminating)"
    " from read_parquet('{}', hive_partitioning = false)"
)


def assert_same_rows(native: str, reference: str) -> pa.Table:
    """The native file is pyarrow's to a reader: Parquet schema, every column, the statistics."""
    assert pq.ParquetFile(native).metadata.created_by.startswith("kip714-native")
    assert pq.ParquetFile(native).schema.equals(pq.ParquetFile(reference).schema)
    ours, theirs = plain(pq.read_table(native)), plain(pq.read_table(reference))
    for name in theirs.column_names:
        assert ours.column(name).equals(theirs.column(name)), name
    assert statistics(native) == statistics(reference)
    assert set(statistics(reference)) == _STATISTICS_COLUMNS & set(theirs.column_names)
    return theirs


def assert_same_file(native: str, reference: str) -> None:
    assert_same_rows(native, reference)
    assert (
        duckdb.sql(AGGREGATES.format(native)).fetchall()
        == duckdb.sql(AGGREGATES.format(reference)).fetchall()
    )


@pytest.mark.parametrize("number", range(4))
def test_a_staged_chunk_reads_the_same_from_either_writer(
    number: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert native_writer_available()
    batch = mixed_chunk(number)
    native, native_files = staged_files(tmp_path, batch, "native", monkeypatch)
    reference, reference_files = staged_files(tmp_path, batch, "pyarrow", monkeypatch)
    assert native_files.keys() == reference_files.keys()
    assert len(native_files) == (2 if number else 1)  # midnight and interleaved hours: one file per hour
    assert (native.points, native.quarantined, native.records) == (
        reference.points,
        reference.quarantined,
        reference.records,
    )
    assert native.quarantined > 0  # the bad headers
    quarantined = [
        pq.read_table(glob.glob(str(tmp_path / w / "quarantine" / "*.parquet"))[0])
        for w in ("native", "pyarrow")
    ]
    assert (
        quarantined[0]
        .drop_columns(["quarantined_at"])
        .equals(quarantined[1].drop_columns(["quarantined_at"]))
    )
    for hour, path in native_files.items():
        assert_same_file(path, reference_files[hour])
    raw_files = [glob.glob(str(tmp_path / w / "raw" / "*.parquet")) for w in ("native", "pyarrow")]
    assert_same_raw_file(raw_files[0][0], raw_files[1][0])


def assert_same_raw_file(native: str, reference: str) -> None:
    """raw/: the same schema, rows (headers as received, replacement characters included) and statistics."""
    assert_same_rows(native, reference)
    query = (
        "select count(*), count(key), sum(cardinality(headers)), count(distinct headers),"
        ' sum(octet_length(value)), min(timestamp), max("offset")'
        " from read_parquet('{}', hive_partitioning = false)"
    )
    assert duckdb.sql(query.format(native)).fetchall() == duckdb.sql(query.format(reference)).fetchall()


def test_row_groups_and_the_arrow_input_write_the_same_rows(tmp_path: Path) -> None:
    """Small row groups (many per file) and the native reader's Arrow values (sliced) change nothing."""
    columns = record_columns(mixed_chunk(3))
    whole = write_natively(columns)
    assert whole is not None and whole.failures
    labels = BatchLabels.of_sets(columns.header_sets, columns.header_index)
    records = (columns.topics[0], columns.partitions, columns.offsets, columns.timestamps_ms, labels.slots)
    skip = [index for index, _ in whole.failures]
    points, files, decoded = kip714_native.write_datapoints(
        list(columns.values), records, list(labels.label_rows()), skip, group_rows=97
    )
    assert points == whole.points and decoded is None
    padded = pa.array([b"not this one", *columns.values], type=pa.binary()).slice(1)
    sliced = write_natively(
        type(columns)(*[padded if f == "values" else getattr(columns, f) for f in FIELDS])
    )
    assert sliced is not None
    for (date, hour, data), written, arrow in zip(files, whole.files, sliced.files, strict=True):
        assert (date, hour) == (written.date, written.hour) == (arrow.date, arrow.hour)
        paths = [tmp_path / f"{tag}-{date}-{hour}.parquet" for tag in ("groups", "whole", "arrow")]
        for path, content in zip(paths, (data, written.data, arrow.data), strict=True):
            path.write_bytes(content)
        assert pq.ParquetFile(paths[0]).metadata.num_row_groups > 1
        assert_same_file(str(paths[0]), str(paths[1]))
        assert arrow.data == written.data


class BufferOnly(np.ndarray):
    """An array whose values can be read through the buffer protocol only."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("a number column was iterated in Python")

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        raise AssertionError("a number column was indexed in Python")


def test_number_columns_are_read_in_place_as_buffers_and_make_the_same_files() -> None:
    """The native reader hands its numbers over as memoryviews (``landing_stage._numbers``); read in
    place, they write what lists write. Only a chunk with a failed record (bad headers) reads its
    numbers record by record, to name the failures."""
    clean = PartitionBatch("_client_telemetry", 3)
    for i in range(200):
        clean.append(500 + i, HOURS_MS + i * 10, b"k", client_headers(), producer_like_payload(5, seed=i))
    for batch, array in ((clean, BufferOnly), (mixed_chunk(2), np.ndarray)):
        columns = record_columns(batch)
        buffers = {
            "partitions": Repeated(columns.partitions[0], len(columns)),
            "offsets": np.asarray(columns.offsets, dtype=np.int64).view(array),
            "timestamps_ms": np.asarray(columns.timestamps_ms, dtype=np.int64).view(array),
            "header_index": memoryview(np.asarray(columns.header_index, np.int32).tobytes()).cast("i"),
        }
        in_place = type(columns)(*[buffers.get(f, getattr(columns, f)) for f in FIELDS])
        listed, read = write_natively(columns), write_natively(in_place)
        assert isinstance(listed, WrittenDatapoints) and isinstance(read, WrittenDatapoints)
        assert read.failures == listed.failures and read.points == listed.points > 0
        assert [f.data for f in read.files] == [f.data for f in listed.files]
        raw = (write_raw_natively(columns), write_raw_natively(in_place))
        assert raw[0] is not None and raw[1] is not None and raw[0].data == raw[1].data

        labels = BatchLabels.of_sets(columns.header_sets, buffers["header_index"])
        reference = BatchLabels.of_sets(columns.header_sets, list(columns.header_index))
        assert list(labels.slots) == list(reference.slots)
        assert list(labels.errors) == list(reference.errors)
        assert bool(listed.failures) == (-1 in list(labels.slots)) == (batch is not clean)


def test_the_raw_writer_refuses_a_negative_header_set() -> None:
    with pytest.raises(ValueError, match="header_index: must not be negative"):
        kip714_native.write_raw("t", [0], [1], [2], [None], [[]], np.array([-1], np.int32), [b"v"])


def test_a_chunk_with_a_record_for_the_python_decoder_is_left_to_the_table_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Histograms and summaries (and anything unusual) are the reference decoder's: nothing is written,
    and the table path goes on from the writer's native decoding instead of decoding the chunk again."""
    batch = PartitionBatch("_client_telemetry", 0)
    payloads = [producer_like_payload(10), every_kind_payload(), b"\xff garbage", producer_like_payload(3)]
    for i, payload in enumerate(payloads):
        batch.append(i, HOURS_MS + i, None, client_headers(), payload)
    batch.append(len(payloads), HOURS_MS, None, BAD_HEADERS, producer_like_payload(4))  # fails on headers
    columns = record_columns(batch)
    expected = decode_batch(columns, "otlp_proto", dictionary_strings=True)
    assert expected.datapoints.num_rows > 10 and [index for index, _ in expected.failures] == [2, 4]

    written = write_natively(columns)
    assert isinstance(written, NeedsReference)
    assert written.decoded.status.tolist()[:4] == [0, 1, 1, 0]  # the header failure's is not read
    assert written.decoded.points_per_record.tolist() == [10, 0, 0, 3, 0]

    def decoded_again(*args: object, **kwargs: object) -> None:
        raise AssertionError("the chunk was decoded natively a second time")

    monkeypatch.setattr(native, "decode_array", decoded_again)
    monkeypatch.setattr(native, "decode_values", decoded_again)
    zone = LandingZone(tmp_path / "zone", "_client_telemetry", fsync=False)
    staged = stage_records(zone, "otlp_proto", columns)
    assert (staged.points, staged.quarantined) == (expected.datapoints.num_rows, 2)
    landed = pa.concat_tables(pq.read_table(path) for path in staged.files if "/datapoints/" in path)
    assert landed.num_rows == expected.datapoints.num_rows
    assert sorted(landed.column("metric_name").to_pylist()) == sorted(
        expected.datapoints.column("metric_name").cast(pa.string()).to_pylist()
    )


def test_pyarrow_is_chosen_by_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(WRITER_ENV, "PyArrow")
    assert not native_writer_available()
    monkeypatch.setenv(WRITER_ENV, "")  # unset or empty: native
    assert native_writer_available()
    # a misspelt attempt to rule the native writer out is refused before landing connects anywhere
    monkeypatch.setenv(WRITER_ENV, "pyaroww")
    with pytest.raises(
        NativeSwitchError,
        match=r"^KIP714_DATAPOINTS_WRITER: must be 'native' or 'pyarrow' \(got 'pyaroww'\)$",
    ):
        land_topic({"bootstrap.servers": "127.0.0.1:1"}, "_client_telemetry", str(tmp_path / "zone"))
    assert not (tmp_path / "zone").exists()
    monkeypatch.setenv(WRITER_ENV, "native")
    monkeypatch.setenv("KIP714_OTLP_DECODER", "python")  # no native decoding, so no native writing
    assert not native_writer_available()


def test_a_raw_file_without_any_header_or_key_reads_as_pyarrows(tmp_path: Path) -> None:
    """No header at all: the map's dictionaries are empty, and no dictionary page is written."""
    batch = PartitionBatch("_client_telemetry", 0)
    for i in range(20):
        batch.append(i, HOURS_MS + i, None, None, None if i % 3 else producer_like_payload(1))
    written = write_raw_natively(record_columns(batch))
    assert written is not None and written.records == 20
    native, reference = tmp_path / "native.parquet", tmp_path / "pyarrow.parquet"
    native.write_bytes(written.data)
    table = raw_table(record_columns(batch))
    pq.write_table(table, reference, **parquet_options(table.schema))
    assert_same_raw_file(str(native), str(reference))


def test_the_writers_rust_unit_tests_pass() -> None:
    """The hybrid RLE/bit-packed encoder against a reference decoder, dates, the 2 GiB page guard, the
    schemas derived from the column tables, the label columns in their declared order."""
    native_dir = Path(__file__).resolve().parents[2] / "native"
    run = subprocess.run(
        ["cargo", "test", "--release", "--no-default-features", "--lib", "parquet::"],
        cwd=native_dir,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "test result: ok. 6 passed" in run.stdout, run.stdout[-2000:]


def test_the_writer_reads_label_rows_in_the_decoders_order() -> None:
    assert list(kip714_native.DATAPOINT_LABELS) == list(LABEL_COLUMNS)
