//! `raw/`: a chunk's records as received, header maps dictionary-encoded (each distinct set once).

use super::columns::MapSet;
use super::schema::{schema_of, RAW_COLUMNS};
use super::writer::Writer;

/// A chunk's records as the raw table keeps them (`RAW_SCHEMA`): bytes as received.
pub struct RawInput<'a> {
    pub topic: String,
    pub partitions: &'a [i32],
    pub offsets: &'a [i64],
    pub timestamps_ms: &'a [i64],
    pub keys: Vec<Option<&'a [u8]>>,
    /// Each distinct header set once (header values already text, as the raw table keeps them).
    pub header_sets: Vec<MapSet>,
    /// Per record, its header set.
    pub header_index: &'a [u32],
    pub values: Vec<Option<&'a [u8]>>,
}

/// The raw file of a chunk: what `pq.write_table(raw_table(...), **parquet_options(RAW_SCHEMA))` writes
/// (the same schema and statistics columns), with the header maps dictionary-encoded: a chunk has a few
/// distinct header sets of 14 headers, each written once into the dictionaries.
pub fn write_raw(input: &RawInput) -> std::io::Result<Vec<u8>> {
    let rows = input.partitions.len();
    let mut w = Writer::new(rows)?;
    w.begin_group(rows);
    w.dictionary_strings(
        "topic",
        &[Some(input.topic.as_bytes())],
        &[(0, rows as u32)],
    )?;
    w.fixed::<i32>("partition", input.partitions.iter().map(|&p| (Some(p), 1)))?;
    w.fixed::<i64>("offset", input.offsets.iter().map(|&o| (Some(o), 1)))?;
    w.fixed::<i64>(
        "timestamp",
        input.timestamps_ms.iter().map(|&t| (Some(t), 1)),
    )?;
    w.plain_binary("key", &input.keys)?;
    w.map_of_sets("headers", &input.header_sets, input.header_index)?;
    w.plain_binary("value", &input.values)?;
    w.end_group();
    Ok(w.finish(&schema_of(&RAW_COLUMNS)))
}
