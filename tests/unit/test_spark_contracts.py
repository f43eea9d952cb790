"""The Spark apps' landing schema agrees with the provider's Arrow schema (no JVM needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA as ARROW_DATAPOINTS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark_apps"))

from kip714_common.schemas import DATAPOINT_SCHEMA, NANOS_AS_LONG_COLUMNS

pytestmark = pytest.mark.spark


def _spark_type_for(arrow: pa.DataType, column: str) -> T.DataType:
    """The Spark type a landing column must have, given its Arrow type."""
    if pa.types.is_timestamp(arrow):
        return T.LongType() if column in NANOS_AS_LONG_COLUMNS else T.TimestampType()
    if pa.types.is_map(arrow):
        return T.MapType(_spark_type_for(arrow.key_type, column), _spark_type_for(arrow.item_type, column))
    if pa.types.is_list(arrow):
        return T.ArrayType(_spark_type_for(arrow.value_type, column))
    if pa.types.is_struct(arrow):
        return T.StructType([T.StructField(f.name, _spark_type_for(f.type, column)) for f in arrow])
    simple = {
        pa.string(): T.StringType(),
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.float64(): T.DoubleType(),
        pa.bool_(): T.BooleanType(),
    }
    return simple[arrow]


def test_spark_datapoint_schema_matches_the_landing_schema_column_by_column():
    assert [f.name for f in DATAPOINT_SCHEMA.fields] == ARROW_DATAPOINTS.names
    for arrow_field in ARROW_DATAPOINTS:
        spark_field = DATAPOINT_SCHEMA[arrow_field.name]
        assert spark_field.dataType == _spark_type_for(arrow_field.type, arrow_field.name), arrow_field.name


def test_nanosecond_columns_are_the_landing_zones_nanosecond_timestamps():
    nanos = {f.name for f in ARROW_DATAPOINTS if pa.types.is_timestamp(f.type) and f.type.unit == "ns"}
    assert nanos == set(NANOS_AS_LONG_COLUMNS)
