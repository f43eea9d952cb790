//! The Parquet schemas of `datapoints/` and `raw/`, derived from their column tables (held equal to the
//! Python declarations by `tests/unit/test_native_writer_schema.py`), and the format's constants.

use super::thrift::Thrift;

pub(super) const T_BOOLEAN: i32 = 0;
pub(super) const T_INT32: i32 = 1;
pub(super) const T_INT64: i32 = 2;
pub(super) const T_DOUBLE: i32 = 5;
pub(super) const T_BYTE_ARRAY: i32 = 6;

const REQUIRED: i32 = 0;
const OPTIONAL: i32 = 1;
const REPEATED: i32 = 2;

const CONV_UTF8: i32 = 0;
const CONV_MAP: i32 = 1;
const CONV_LIST: i32 = 3;
const CONV_TIMESTAMP_MILLIS: i32 = 9;

pub(super) const E_PLAIN: i32 = 0;
pub(super) const E_RLE: i32 = 3;
pub(super) const E_RLE_DICTIONARY: i32 = 8;

pub(super) const CODEC_ZSTD: i32 = 6;

#[derive(Clone, Copy)]
enum Logical {
    None,
    String,
    Map,
    List,
    TimestampMillis,
    TimestampNanos,
}

pub(super) struct Element {
    name: &'static str,
    physical: Option<i32>,
    repetition: i32,
    children: usize,
    converted: Option<i32>,
    logical: Logical,
}

fn prim(name: &'static str, physical: i32, repetition: i32, logical: Logical) -> Element {
    let converted = match logical {
        Logical::String => Some(CONV_UTF8),
        Logical::TimestampMillis => Some(CONV_TIMESTAMP_MILLIS),
        _ => None,
    };
    Element {
        name,
        physical: Some(physical),
        repetition,
        children: 0,
        converted,
        logical,
    }
}

fn group(name: &'static str, repetition: i32, children: usize, logical: Logical) -> Element {
    let converted = match logical {
        Logical::Map => Some(CONV_MAP),
        Logical::List => Some(CONV_LIST),
        _ => None,
    };
    Element {
        name,
        physical: None,
        repetition,
        children,
        converted,
        logical,
    }
}

fn string(name: &'static str) -> Element {
    prim(name, T_BYTE_ARRAY, OPTIONAL, Logical::String)
}

fn map_elements(name: &'static str, out: &mut Vec<Element>) {
    out.push(group(name, OPTIONAL, 1, Logical::Map));
    out.push(group("key_value", REPEATED, 2, Logical::None));
    out.push(prim("key", T_BYTE_ARRAY, REQUIRED, Logical::String));
    out.push(prim("value", T_BYTE_ARRAY, OPTIONAL, Logical::String));
}

fn list_elements(name: &'static str, physical: i32, out: &mut Vec<Element>) {
    out.push(group(name, OPTIONAL, 1, Logical::List));
    out.push(group("list", REPEATED, 1, Logical::None));
    out.push(prim("element", physical, OPTIONAL, Logical::None));
}

/// The `datapoints/` columns in the vocabulary of `spark_apps/kip714_common/landing_contract.py`
/// (`DATAPOINT_COLUMNS`, the one declaration): this copy is exported as `kip714_native.DATAPOINT_COLUMNS`
/// and held equal to it by `tests/unit/test_native_writer_schema.py`; the Parquet schema is derived here.
pub const DATAPOINT_COLUMNS: [(&str, &str); 49] = [
    ("topic", "string"),
    ("partition", "int32"),
    ("offset", "int64"),
    ("record_timestamp", "timestamp_ms"),
    ("record_type", "string"),
    ("client_instance_id", "string"),
    ("client_instance_id_hex", "string"),
    ("client_id", "string"),
    ("client_software_name", "string"),
    ("client_software_version", "string"),
    ("client_source_address", "string"),
    ("client_source_port", "int32"),
    ("principal", "string"),
    ("listener", "string"),
    ("node_id", "int32"),
    ("cluster_id", "string"),
    ("subscription_id", "int64"),
    ("push_interval_ms", "int64"),
    ("terminating", "bool"),
    ("resource_attributes", "string_map"),
    ("scope_name", "string"),
    ("scope_version", "string"),
    ("scope_attributes", "string_map"),
    ("metric_name", "string"),
    ("metric_unit", "string"),
    ("metric_type", "string"),
    ("temporality", "string"),
    ("is_monotonic", "bool"),
    ("attributes", "string_map"),
    ("start_time", "timestamp_ns"),
    ("time", "timestamp_ns"),
    ("value", "float64"),
    ("value_int", "int64"),
    ("count", "int64"),
    ("sum", "float64"),
    ("min", "float64"),
    ("max", "float64"),
    ("bucket_counts", "list<int64>"),
    ("explicit_bounds", "list<float64>"),
    ("exp_scale", "int32"),
    ("exp_zero_count", "int64"),
    ("exp_positive_offset", "int32"),
    ("exp_positive_bucket_counts", "list<int64>"),
    ("exp_negative_offset", "int32"),
    ("exp_negative_bucket_counts", "list<int64>"),
    ("quantiles", "list<quantile>"),
    ("flags", "int32"),
    ("date", "string"),
    ("hour", "int32"),
];

/// The `raw/` columns (`RAW_SCHEMA` of `airflow_provider_kip714/contract/landing_schema.py`), in the same
/// vocabulary; exported as `kip714_native.RAW_COLUMNS` and held equal to it by the same test.
pub const RAW_COLUMNS: [(&str, &str); 7] = [
    ("topic", "string"),
    ("partition", "int32"),
    ("offset", "int64"),
    ("timestamp", "timestamp_ms"),
    ("key", "binary"),
    ("headers", "string_map"),
    ("value", "binary"),
];

/// The columns with min/max statistics (readers prune files and row groups with them): landing's
/// `_STATISTICS_COLUMNS` (`telemetry/landing_zone.py`) among these schemas, held equal by the same test.
pub const STATISTICS_COLUMNS: [&str; 7] = [
    "partition",
    "offset",
    "record_timestamp",
    "timestamp",
    "start_time",
    "time",
    "hour",
];

pub(super) fn statistics(name: &str) -> bool {
    STATISTICS_COLUMNS.contains(&name)
}

/// The Parquet schema pyarrow writes for these columns (depth first, root first).
pub(super) fn schema_of(columns: &[(&'static str, &'static str)]) -> Vec<Element> {
    let mut s = vec![group("schema", REQUIRED, columns.len(), Logical::None)];
    for &(name, kind) in columns {
        match kind {
            "string" => s.push(string(name)),
            "binary" => s.push(prim(name, T_BYTE_ARRAY, OPTIONAL, Logical::None)),
            "bool" => s.push(prim(name, T_BOOLEAN, OPTIONAL, Logical::None)),
            "int32" => s.push(prim(name, T_INT32, OPTIONAL, Logical::None)),
            "int64" => s.push(prim(name, T_INT64, OPTIONAL, Logical::None)),
            "float64" => s.push(prim(name, T_DOUBLE, OPTIONAL, Logical::None)),
            "timestamp_ms" => s.push(prim(name, T_INT64, OPTIONAL, Logical::TimestampMillis)),
            "timestamp_ns" => s.push(prim(name, T_INT64, OPTIONAL, Logical::TimestampNanos)),
            "string_map" => map_elements(name, &mut s),
            "list<int64>" => list_elements(name, T_INT64, &mut s),
            "list<float64>" => list_elements(name, T_DOUBLE, &mut s),
            "list<quantile>" => {
                s.push(group(name, OPTIONAL, 1, Logical::List));
                s.push(group("list", REPEATED, 1, Logical::None));
                s.push(group("element", OPTIONAL, 2, Logical::None));
                s.push(prim("quantile", T_DOUBLE, OPTIONAL, Logical::None));
                s.push(prim("value", T_DOUBLE, OPTIONAL, Logical::None));
            }
            other => unreachable!("{name}: no Parquet mapping for the landing type {other}"),
        }
    }
    s
}

pub(super) fn write_schema_element(t: &mut Thrift, e: &Element) {
    t.begin_element();
    if let Some(physical) = e.physical {
        t.i32(1, physical);
    }
    t.i32(3, e.repetition);
    t.binary(4, e.name.as_bytes());
    if e.physical.is_none() {
        t.i32(5, e.children as i32);
    }
    if let Some(converted) = e.converted {
        t.i32(6, converted);
    }
    let logical_field = match e.logical {
        Logical::None => None,
        Logical::String => Some(1),
        Logical::Map => Some(2),
        Logical::List => Some(3),
        Logical::TimestampMillis | Logical::TimestampNanos => Some(8),
    };
    if let Some(field) = logical_field {
        t.begin(10);
        t.begin(field);
        match e.logical {
            Logical::TimestampMillis | Logical::TimestampNanos => {
                t.bool(1, true);
                t.begin(2);
                t.begin(if matches!(e.logical, Logical::TimestampMillis) {
                    1
                } else {
                    3
                });
                t.end();
                t.end();
            }
            _ => {}
        }
        t.end();
        t.end();
    }
    t.end();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(schema: &[Element]) -> Vec<&'static str> {
        schema
            .iter()
            .filter(|e| e.physical.is_some())
            .map(|e| e.name)
            .collect()
    }

    #[test]
    fn every_landing_column_has_its_parquet_elements() {
        let datapoints = schema_of(&DATAPOINT_COLUMNS);
        assert_eq!(datapoints[0].children, DATAPOINT_COLUMNS.len());
        // 41 flat columns, 3 maps of two leaves, 4 lists of one, the quantiles list of two
        assert_eq!(leaves(&datapoints).len(), 41 + 3 * 2 + 4 + 2);
        let raw = schema_of(&RAW_COLUMNS);
        assert_eq!(raw[0].children, RAW_COLUMNS.len());
        assert_eq!(
            leaves(&raw),
            [
                "topic",
                "partition",
                "offset",
                "timestamp",
                "key",
                "key",
                "value",
                "value"
            ]
        );
    }

    #[test]
    fn statistics_columns_are_flat_columns_of_the_schemas() {
        for name in STATISTICS_COLUMNS {
            let kind = DATAPOINT_COLUMNS
                .iter()
                .chain(RAW_COLUMNS.iter())
                .find(|(column, _)| *column == name)
                .map(|(_, kind)| *kind);
            assert!(
                matches!(
                    kind,
                    Some("int32" | "int64" | "timestamp_ms" | "timestamp_ns")
                ),
                "{name}: {kind:?}"
            );
        }
    }
}
