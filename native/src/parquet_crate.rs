//! A prototype of the landing writers on the arrow-rs `parquet` crate (cargo feature `parquet-crate`):
//! the same two files as `parquet/` (`write_datapoints`, `write_raw`) from the same inputs, the same
//! schema (`DATAPOINT_COLUMNS`, `RAW_COLUMNS`), dictionary pages on the flat string columns (and the raw
//! header map, as `parquet/` writes it), min/max statistics only on `STATISTICS_COLUMNS`, zstd level 1.
//!
//! It exists to measure the crate against the hand-written writer in one run (`bench/bench_landing.py
//! --writers`, `bench/bench_native_writer.py`; the numbers and the decision are in `docs/benchmarks.md`).
//! The crate takes values point by point: each level row (a record's labels, a scope, a metric) is
//! turned into a `ByteArray` once and cloned into every point of its run, and the crate's dictionary
//! encoder hashes each of them.

use std::iter::repeat_n;
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DataType, DoubleType, Int32Type, Int64Type,
};
use parquet::errors::{ParquetError, Result};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::{ColumnPath, Type};

use crate::decode::{Columns, KIND_SUM};
use crate::parquet::{
    label_kind, plan_hours, HourFile, LabelKind, LabelValue, Levels, MapSet, RawInput, RecordInput,
    DATAPOINT_COLUMNS, LABEL_NAMES, RAW_COLUMNS, STATISTICS_COLUMNS,
};
use crate::text::{MapColumn, StringColumn};

type Group<'a> = SerializedRowGroupWriter<'a, Vec<u8>>;

/// The Parquet message type of landing columns (`parquet/schema.rs::schema_of`, in the crate's schema language).
fn message_type(columns: &[(&str, &str)]) -> Result<Type> {
    let mut text = String::from("message schema {\n");
    for &(name, kind) in columns {
        let field = match kind {
            "string" => format!("OPTIONAL BYTE_ARRAY {name} (STRING);"),
            "binary" => format!("OPTIONAL BYTE_ARRAY {name};"),
            "bool" => format!("OPTIONAL BOOLEAN {name};"),
            "int32" => format!("OPTIONAL INT32 {name};"),
            "int64" => format!("OPTIONAL INT64 {name};"),
            "float64" => format!("OPTIONAL DOUBLE {name};"),
            "timestamp_ms" => format!("OPTIONAL INT64 {name} (TIMESTAMP(MILLIS,true));"),
            "timestamp_ns" => format!("OPTIONAL INT64 {name} (TIMESTAMP(NANOS,true));"),
            "string_map" => format!(
                "OPTIONAL group {name} (MAP) {{ REPEATED group key_value {{ \
                 REQUIRED BYTE_ARRAY key (STRING); OPTIONAL BYTE_ARRAY value (STRING); }} }}"
            ),
            "list<int64>" => format!(
                "OPTIONAL group {name} (LIST) {{ REPEATED group list {{ OPTIONAL INT64 element; }} }}"
            ),
            "list<float64>" => format!(
                "OPTIONAL group {name} (LIST) {{ REPEATED group list {{ OPTIONAL DOUBLE element; }} }}"
            ),
            "list<quantile>" => format!(
                "OPTIONAL group {name} (LIST) {{ REPEATED group list {{ OPTIONAL group element {{ \
                 OPTIONAL DOUBLE quantile; OPTIONAL DOUBLE value; }} }} }}"
            ),
            other => {
                return Err(ParquetError::General(format!(
                    "{name}: no Parquet mapping for the landing type {other}"
                )))
            }
        };
        text.push_str(&field);
        text.push('\n');
    }
    text.push('}');
    parse_message_type(&text)
}

/// What `parquet_options` asks pyarrow for: zstd, dictionaries on the flat string columns (plus
/// `dictionary_maps`), statistics on the pruning columns only, no page index.
fn properties(columns: &[(&str, &str)], dictionary_maps: &[&str]) -> Result<WriterProperties> {
    let mut builder = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::None)
        .set_offset_index_disabled(true)
        .set_max_row_group_row_count(None)
        .set_created_by("kip714-native version 0.1.0 (parquet crate)".into());
    for &(name, kind) in columns {
        if kind == "string" {
            builder = builder.set_column_dictionary_enabled(ColumnPath::from(name), true);
        }
        if STATISTICS_COLUMNS.contains(&name) {
            builder = builder
                .set_column_statistics_enabled(ColumnPath::from(name), EnabledStatistics::Chunk);
        }
    }
    for &map in dictionary_maps {
        for leaf in ["key", "value"] {
            let path = ColumnPath::new(vec![map.into(), "key_value".into(), leaf.into()]);
            builder = builder.set_column_dictionary_enabled(path, true);
        }
    }
    Ok(builder.build())
}

fn writer(
    columns: &[(&str, &str)],
    dictionary_maps: &[&str],
) -> Result<SerializedFileWriter<Vec<u8>>> {
    SerializedFileWriter::new(
        Vec::with_capacity(1 << 20),
        Arc::new(message_type(columns)?),
        Arc::new(properties(columns, dictionary_maps)?),
    )
}

/// Write the next leaf of the row group with `write`, then close it.
fn leaf(
    group: &mut Group<'_>,
    write: impl FnOnce(&mut ColumnWriter<'_>) -> Result<()>,
) -> Result<()> {
    let mut column = group
        .next_column()?
        .ok_or_else(|| ParquetError::General("more leaves written than the schema has".into()))?;
    write(column.untyped())?;
    column.close()
}

fn typed<'a, 'b, T: DataType>(
    column: &'a mut ColumnWriter<'b>,
) -> &'a mut parquet::column::writer::ColumnWriterImpl<'b, T> {
    parquet::column::writer::get_typed_column_writer_mut::<T>(column)
}

/// A flat optional column from runs of `(value or null, points)`.
fn flat<T: DataType>(
    group: &mut Group<'_>,
    runs: impl Iterator<Item = (Option<T::T>, u32)>,
) -> Result<()>
where
    T::T: Clone,
{
    let mut values: Vec<T::T> = Vec::new();
    let mut defs: Vec<i16> = Vec::new();
    for (value, count) in runs {
        let count = count as usize;
        match value {
            Some(value) => {
                defs.extend(repeat_n(1, count));
                values.extend(repeat_n(value, count));
            }
            None => defs.extend(repeat_n(0, count)),
        }
    }
    leaf(group, |column| {
        typed::<T>(column).write_batch(&values, Some(&defs), None)?;
        Ok(())
    })
}

fn string_at(column: &StringColumn, row: usize) -> Option<ByteArray> {
    (column.valid[row] == 1).then(|| {
        ByteArray::from(
            &column.data[column.offsets[row] as usize..column.offsets[row + 1] as usize],
        )
    })
}

/// A string column's level rows as `ByteArray`s (each copied once, then cloned per point).
fn level_strings(column: &StringColumn) -> Vec<Option<ByteArray>> {
    (0..column.len())
        .map(|row| string_at(column, row))
        .collect()
}

fn strings(group: &mut Group<'_>, level: &[Option<ByteArray>], runs: &[(u32, u32)]) -> Result<()> {
    flat::<ByteArrayType>(
        group,
        runs.iter()
            .map(|&(row, count)| (level[row as usize].clone(), count)),
    )
}

/// A map<string, string> column's two leaves, filled entry by entry (the crate takes every level).
#[derive(Default)]
struct MapLeaves {
    reps: Vec<i16>,
    key_defs: Vec<i16>,
    value_defs: Vec<i16>,
    keys: Vec<ByteArray>,
    values: Vec<ByteArray>,
}

impl MapLeaves {
    /// `count` rows holding an empty map.
    fn empty(&mut self, count: usize) {
        self.reps.extend(repeat_n(0, count));
        self.key_defs.extend(repeat_n(1, count));
        self.value_defs.extend(repeat_n(1, count));
    }

    fn entry(&mut self, first: bool, key: ByteArray, value: Option<ByteArray>) {
        self.reps.push(i16::from(!first));
        self.key_defs.push(2);
        self.keys.push(key);
        match value {
            Some(value) => {
                self.value_defs.push(3);
                self.values.push(value);
            }
            None => self.value_defs.push(2),
        }
    }

    fn write(self, group: &mut Group<'_>) -> Result<()> {
        let (reps, keys, values) = (&self.reps, &self.keys, &self.values);
        leaf(group, |column| {
            typed::<ByteArrayType>(column).write_batch(keys, Some(&self.key_defs), Some(reps))?;
            Ok(())
        })?;
        leaf(group, |column| {
            typed::<ByteArrayType>(column).write_batch(
                values,
                Some(&self.value_defs),
                Some(reps),
            )?;
            Ok(())
        })
    }
}

/// A map<string, string> column (two leaves) from map rows and runs of points.
fn map(
    group: &mut Group<'_>,
    map: &MapColumn,
    runs: impl Iterator<Item = (u32, u32)>,
) -> Result<()> {
    let mut leaves = MapLeaves::default();
    for (row, count) in runs {
        let (first, last) = (
            map.offsets[row as usize] as usize,
            map.offsets[row as usize + 1] as usize,
        );
        if first == last {
            leaves.empty(count as usize);
            continue;
        }
        for _ in 0..count {
            for entry in first..last {
                let key = string_at(&map.keys, entry).unwrap_or_else(|| ByteArray::from(&b""[..]));
                leaves.entry(entry == first, key, string_at(&map.values, entry));
            }
        }
    }
    leaves.write(group)
}

/// An all-null leaf of `rows` rows, flat or nested.
fn nulls(group: &mut Group<'_>, rows: usize) -> Result<()> {
    leaf(group, |column| {
        let defs = vec![0i16; rows];
        let nested = match column {
            ColumnWriter::Int32ColumnWriter(w) => w.get_descriptor().max_rep_level() > 0,
            ColumnWriter::Int64ColumnWriter(w) => w.get_descriptor().max_rep_level() > 0,
            ColumnWriter::DoubleColumnWriter(w) => w.get_descriptor().max_rep_level() > 0,
            _ => {
                return Err(ParquetError::General(
                    "an all-null leaf of another type".into(),
                ))
            }
        };
        let reps = nested.then(|| vec![0i16; rows]);
        let reps = reps.as_deref();
        match column {
            ColumnWriter::Int32ColumnWriter(w) => w.write_batch(&[], Some(&defs), reps)?,
            ColumnWriter::Int64ColumnWriter(w) => w.write_batch(&[], Some(&defs), reps)?,
            ColumnWriter::DoubleColumnWriter(w) => w.write_batch(&[], Some(&defs), reps)?,
            _ => unreachable!("checked above"),
        };
        Ok(())
    })
}

/// The datapoints files of a chunk, as `parquet::write_datapoints` writes them (same plan of hours and
/// row groups).
pub fn write_datapoints(
    columns: &Columns,
    records: &RecordInput,
    group_rows: usize,
) -> Result<Vec<HourFile>> {
    let plans = plan_hours(columns, records, group_rows);
    let mut files = Vec::with_capacity(plans.len());
    for plan in plans {
        let mut file = writer(&DATAPOINT_COLUMNS, &[])?;
        for ranges in &plan.groups {
            let mut group = file.next_row_group()?;
            write_group(&mut group, columns, records, ranges)?;
            group.close()?;
        }
        files.push(HourFile {
            date: plan.date(),
            hour: plan.hour_of_day(),
            bytes: file.into_inner()?,
        });
    }
    Ok(files)
}

fn write_group(
    group: &mut Group<'_>,
    columns: &Columns,
    records: &RecordInput,
    ranges: &[(usize, usize)],
) -> Result<()> {
    let selected = || ranges.iter().flat_map(|&(a, b)| a..b);
    let levels = Levels::of(columns, records, ranges);
    let per_record = |f: &dyn Fn(usize) -> i64| {
        levels
            .records
            .iter()
            .map(move |&(r, c)| (Some(f(r as usize)), c))
            .collect::<Vec<_>>()
    };

    // lineage
    let topic = [Some(ByteArray::from(records.topic.as_bytes()))];
    strings(group, &topic, &[(0, levels.rows as u32)])?;
    flat::<Int32Type>(
        group,
        levels
            .records
            .iter()
            .map(|&(r, c)| (Some(records.partitions[r as usize]), c)),
    )?;
    flat::<Int64Type>(group, per_record(&|r| records.offsets[r]).into_iter())?;
    flat::<Int64Type>(group, per_record(&|r| records.timestamps_ms[r]).into_iter())?;

    // labels
    for (position, name) in LABEL_NAMES.iter().enumerate() {
        let value = |slot: u32| &records.label_rows[slot as usize][position];
        let runs = levels.labels.iter();
        match label_kind(name) {
            LabelKind::Str => {
                let level: Vec<Option<ByteArray>> = records
                    .label_rows
                    .iter()
                    .map(|row| match &row[position] {
                        LabelValue::Str(s) => Some(ByteArray::from(s.as_bytes())),
                        _ => None,
                    })
                    .collect();
                strings(group, &level, &levels.labels)?;
            }
            LabelKind::I32 => flat::<Int32Type>(
                group,
                runs.map(|&(s, c)| match value(s) {
                    LabelValue::Int(v) => (Some(*v as i32), c),
                    _ => (None, c),
                }),
            )?,
            LabelKind::I64 => flat::<Int64Type>(
                group,
                runs.map(|&(s, c)| match value(s) {
                    LabelValue::Int(v) => (Some(*v), c),
                    _ => (None, c),
                }),
            )?,
            LabelKind::Bool => flat::<BoolType>(
                group,
                runs.map(|&(s, c)| match value(s) {
                    LabelValue::Bool(v) => (Some(*v), c),
                    _ => (None, c),
                }),
            )?,
        }
    }

    // scope level
    map(
        group,
        &columns.resource_attributes,
        levels.scopes.iter().copied(),
    )?;
    strings(group, &level_strings(&columns.scope_name), &levels.scopes)?;
    strings(
        group,
        &level_strings(&columns.scope_version),
        &levels.scopes,
    )?;
    map(
        group,
        &columns.scope_attributes,
        levels.scopes.iter().copied(),
    )?;

    // metric level
    strings(group, &level_strings(&columns.metric_name), &levels.metrics)?;
    strings(group, &level_strings(&columns.metric_unit), &levels.metrics)?;
    let (gauge, sum) = (ByteArray::from(&b"gauge"[..]), ByteArray::from(&b"sum"[..]));
    let kinds: Vec<Option<ByteArray>> = columns
        .metric_kind
        .iter()
        .map(|&k| {
            Some(if k == KIND_SUM {
                sum.clone()
            } else {
                gauge.clone()
            })
        })
        .collect();
    strings(group, &kinds, &levels.metrics)?;
    let (delta, cumulative) = (
        ByteArray::from(&b"delta"[..]),
        ByteArray::from(&b"cumulative"[..]),
    );
    let temporalities: Vec<Option<ByteArray>> = columns
        .temporality
        .iter()
        .map(|&t| match t {
            0 => None,
            1 => Some(delta.clone()),
            _ => Some(cumulative.clone()),
        })
        .collect();
    strings(group, &temporalities, &levels.metrics)?;
    flat::<BoolType>(
        group,
        levels
            .metrics
            .iter()
            .map(|&(m, c)| match columns.is_monotonic[m as usize] {
                2 => (None, c),
                v => (Some(v == 1), c),
            }),
    )?;

    // point level
    map(
        group,
        &columns.attributes,
        selected().map(|p| (p as u32, 1)),
    )?;
    flat::<Int64Type>(
        group,
        selected().map(|p| (Some(columns.start_time[p]).filter(|&t| t != 0), 1)),
    )?;
    flat::<Int64Type>(
        group,
        selected().map(|p| (Some(columns.time[p]).filter(|&t| t != 0), 1)),
    )?;
    flat::<DoubleType>(group, selected().map(|p| (Some(columns.value[p]), 1)))?;
    flat::<Int64Type>(
        group,
        selected().map(|p| {
            (
                Some(columns.value_int[p]).filter(|_| columns.value_int_valid[p] == 1),
                1,
            )
        }),
    )?;

    // distribution columns, all null: count .. quantiles.list.element.value (14 leaves)
    for _ in 0..14 {
        nulls(group, levels.rows)?;
    }
    flat::<Int32Type>(group, selected().map(|p| (Some(columns.flags[p]), 1)))?;

    // partition columns, from record_timestamp
    let dates: Vec<Option<ByteArray>> = levels
        .dates
        .iter()
        .map(|d| Some(ByteArray::from(d.as_bytes())))
        .collect();
    strings(group, &dates, &levels.hours)?;
    flat::<Int32Type>(
        group,
        levels
            .hours
            .iter()
            .map(|&(h, c)| (Some(levels.hour_values[h as usize]), c)),
    )
}

/// The raw file of a chunk, as `parquet::write_raw` writes it (header maps dictionary-encoded).
pub fn write_raw(input: &RawInput) -> Result<Vec<u8>> {
    let rows = input.partitions.len();
    let mut file = writer(&RAW_COLUMNS, &["headers"])?;
    let mut group = file.next_row_group()?;
    let topic = [Some(ByteArray::from(input.topic.as_bytes()))];
    strings(&mut group, &topic, &[(0, rows as u32)])?;
    flat::<Int32Type>(&mut group, input.partitions.iter().map(|&p| (Some(p), 1)))?;
    flat::<Int64Type>(&mut group, input.offsets.iter().map(|&o| (Some(o), 1)))?;
    flat::<Int64Type>(
        &mut group,
        input.timestamps_ms.iter().map(|&t| (Some(t), 1)),
    )?;
    binary(&mut group, &input.keys)?;
    header_maps(&mut group, &input.header_sets, input.header_index)?;
    binary(&mut group, &input.values)?;
    group.close()?;
    file.into_inner()
}

fn binary(group: &mut Group<'_>, rows: &[Option<&[u8]>]) -> Result<()> {
    flat::<ByteArrayType>(group, rows.iter().map(|row| (row.map(ByteArray::from), 1)))
}

/// The raw `headers` map: each distinct set's entries turned into `ByteArray`s once, cloned per record.
fn header_maps(group: &mut Group<'_>, sets: &[MapSet], index: &[u32]) -> Result<()> {
    let arrays: Vec<Vec<(ByteArray, Option<ByteArray>)>> = sets
        .iter()
        .map(|set| {
            set.iter()
                .map(|(key, value)| {
                    (
                        ByteArray::from(key.as_slice()),
                        value.as_deref().map(ByteArray::from),
                    )
                })
                .collect()
        })
        .collect();
    let mut leaves = MapLeaves::default();
    for &set in index {
        let entries = &arrays[set as usize];
        if entries.is_empty() {
            leaves.empty(1);
            continue;
        }
        for (position, (key, value)) in entries.iter().enumerate() {
            leaves.entry(position == 0, key.clone(), value.clone());
        }
    }
    leaves.write(group)
}
