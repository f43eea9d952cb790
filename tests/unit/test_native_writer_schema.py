"""The native writers' schemas against the one landing-column declaration: any drift fails here.

``native/src/parquet/`` derives its Parquet schemas from its own column tables (``schema.rs``; Rust
cannot import Python); the extension exports them, and they must equal
``landing_contract.DATAPOINT_COLUMNS`` and ``landing_schema.RAW_SCHEMA``. The written files must then
be what pyarrow writes for those schemas with ``parquet_options``: the same Parquet schema,
dictionaries on the same columns, min/max statistics on the same columns (``_STATISTICS_COLUMNS``).
"""

from __future__ import annotations

import io

import kip714_native
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from otlp_payloads import client_headers, producer_like_payload

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA, RAW_SCHEMA, _arrow_type
from airflow_provider_kip714.decoding.header_sets import HeaderSets
from airflow_provider_kip714.decoding.native_writer import write_natively, write_raw_natively
from airflow_provider_kip714.decoding.records import RecordColumns
from airflow_provider_kip714.telemetry.landing_zone import _STATISTICS_COLUMNS, parquet_options
from spark_apps.kip714_common.landing_contract import DATAPOINT_COLUMNS


def test_the_datapoint_columns_are_the_declared_ones() -> None:
    assert [tuple(column) for column in kip714_native.DATAPOINT_COLUMNS] == list(DATAPOINT_COLUMNS)


def test_the_raw_columns_are_raw_schemas() -> None:
    native = pa.schema([(name, _arrow_type(kind)) for name, kind in kip714_native.RAW_COLUMNS])
    assert native.equals(RAW_SCHEMA), (native, RAW_SCHEMA)


def test_the_statistics_columns_are_landings() -> None:
    names = {name for name, _ in DATAPOINT_COLUMNS} | set(RAW_SCHEMA.names)
    assert set(kip714_native.STATISTICS_COLUMNS) == _STATISTICS_COLUMNS & names


def chunk(records: int = 40) -> RecordColumns:
    sets = HeaderSets()
    slot = sets.slots([client_headers()])[0]
    offsets = list(range(records))
    return RecordColumns(
        ["_client_telemetry"] * records,
        [3] * records,
        offsets,
        [1_763_856_000_000 + 1_000 * o for o in offsets],
        [b"k%d" % o for o in offsets],
        sets.sets,
        [slot] * records,
        [producer_like_payload(4, seed=o) for o in offsets],
    )


def pyarrows_file(schema: pa.Schema) -> pq.ParquetFile:
    """What pyarrow writes for an (empty) table of the declared schema with landing's options."""
    out = io.BytesIO()
    pq.write_table(schema.empty_table(), out, **parquet_options(schema))
    return pq.ParquetFile(io.BytesIO(out.getvalue()))


def chunk_properties(file: pq.ParquetFile) -> tuple[set[str], set[str]]:
    """The leaves with a dictionary page and the leaves with min/max statistics, over all row groups."""
    dictionary, statistics = set(), set()
    for group in range(file.metadata.num_row_groups):
        for index in range(file.metadata.num_columns):
            column = file.metadata.row_group(group).column(index)
            if column.dictionary_page_offset is not None:
                dictionary.add(column.path_in_schema)
            if column.is_stats_set:
                statistics.add(column.path_in_schema)
    return dictionary, statistics


@pytest.mark.parametrize(
    ("name", "schema", "dictionary_maps"),
    [
        ("datapoints", DATAPOINT_SCHEMA, set()),
        ("raw", RAW_SCHEMA, {"headers.key_value.key", "headers.key_value.value"}),
    ],
)
def test_the_written_files_are_pyarrows_for_the_declared_schema(
    name: str, schema: pa.Schema, dictionary_maps: set[str]
) -> None:
    columns = chunk()
    if name == "datapoints":
        written = write_natively(columns)
        assert written is not None and len(written.files) == 1
        data = written.files[0].data
    else:
        raw = write_raw_natively(columns)
        assert raw is not None
        data = raw.data
    native = pq.ParquetFile(io.BytesIO(data))
    reference = pyarrows_file(schema)
    assert native.schema.equals(reference.schema), (native.schema, reference.schema)
    assert native.schema_arrow.equals(schema), (native.schema_arrow, schema)
    options = parquet_options(schema)
    dictionary, statistics = chunk_properties(native)
    assert dictionary == set(options["use_dictionary"]) | dictionary_maps  # type: ignore[arg-type]
    assert statistics == set(options["write_statistics"])  # type: ignore[arg-type]
