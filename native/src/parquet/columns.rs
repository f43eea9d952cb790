//! The column encoders: each writes one column chunk (one data page, and a dictionary page for
//! dictionary-encoded columns) from level rows and runs of points, or from a few distinct maps.

use rustc_hash::FxHashMap;

use super::rle::{bit_width, levels_section, Rle};
use super::schema::{statistics, T_BOOLEAN, T_BYTE_ARRAY, T_DOUBLE, T_INT32, T_INT64};
use super::writer::{Stats, Writer};
use crate::text::{MapColumn, StringColumn};

/// One distinct map of a `map_of_sets` column: (key, value or null) entries in order.
pub type MapSet = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// A `MapSet` coded once: repetition levels, key codes, value codes of the non-null values, and
/// whether no value is null.
type CodedSet = (Vec<u32>, Vec<u32>, Vec<u32>, bool);

pub(super) trait Fixed: Copy + PartialOrd {
    const PHYSICAL: i32;
    fn put(self, out: &mut Vec<u8>);
    fn le(self) -> Vec<u8>;
}

impl Fixed for i32 {
    const PHYSICAL: i32 = T_INT32;
    #[inline]
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn le(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

impl Fixed for i64 {
    const PHYSICAL: i32 = T_INT64;
    #[inline]
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn le(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

impl Fixed for f64 {
    const PHYSICAL: i32 = T_DOUBLE;
    #[inline]
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn le(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

#[inline]
pub(super) fn string_at(column: &StringColumn, row: usize) -> Option<&[u8]> {
    if column.valid[row] == 1 {
        Some(&column.data[column.offsets[row] as usize..column.offsets[row + 1] as usize])
    } else {
        None
    }
}

/// A column's dictionary: each distinct byte string once, in first-seen order, with its code.
#[derive(Default)]
struct Dictionary<'a> {
    lookup: FxHashMap<&'a [u8], u32>,
    entries: Vec<&'a [u8]>,
}

impl<'a> Dictionary<'a> {
    fn code(&mut self, text: &'a [u8]) -> u32 {
        let entries = &mut self.entries;
        *self.lookup.entry(text).or_insert_with(|| {
            entries.push(text);
            (entries.len() - 1) as u32
        })
    }

    /// Bits per code (at least 1, as pyarrow writes a one-entry dictionary).
    fn width(&self) -> u32 {
        bit_width(self.entries.len().saturating_sub(1) as u64).max(1)
    }

    /// The dictionary page: (entries, PLAIN byte arrays).
    fn page(&self) -> (usize, Vec<u8>) {
        let mut page = Vec::new();
        for text in &self.entries {
            page.extend_from_slice(&(text.len() as u32).to_le_bytes());
            page.extend_from_slice(text);
        }
        (self.entries.len(), page)
    }
}

impl Writer {
    pub(super) fn dictionary_strings(
        &mut self,
        name: &'static str,
        rows: &[Option<&[u8]>],
        runs: &[(u32, u32)],
    ) -> std::io::Result<()> {
        let mut lookup: FxHashMap<&[u8], u32> = FxHashMap::default();
        let mut entries: Vec<&[u8]> = Vec::new();
        // Level rows repeat in the same order (each record pushes the same metrics): predict a row's
        // code as the one that followed the previous row's code last time, and hash only on a miss.
        let mut follows: Vec<u32> = Vec::new();
        let mut previous: Option<usize> = None;
        let codes: Vec<i64> = rows
            .iter()
            .map(|value| match value {
                None => -1,
                Some(text) => {
                    if let Some(last) = previous {
                        let predicted = follows[last];
                        if predicted != u32::MAX && entries[predicted as usize] == *text {
                            previous = Some(predicted as usize);
                            return predicted as i64;
                        }
                        if entries[last] == *text {
                            return last as i64;
                        }
                    }
                    let code = *lookup.entry(text).or_insert_with(|| {
                        entries.push(text);
                        follows.push(u32::MAX);
                        (entries.len() - 1) as u32
                    }) as usize;
                    if let Some(last) = previous {
                        follows[last] = code as u32;
                    }
                    previous = Some(code);
                    code as i64
                }
            })
            .collect();
        self.dictionary_codes(name, &entries, &codes, runs)
    }

    /// A flat optional binary column, values as they are (PLAIN), one row per value.
    pub(super) fn plain_binary(
        &mut self,
        name: &'static str,
        rows: &[Option<&[u8]>],
    ) -> std::io::Result<()> {
        let mut defs = Rle::new(1);
        let mut data = self.buffer();
        for value in rows {
            match value {
                Some(bytes) => {
                    defs.put(1, 1);
                    data.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    data.extend_from_slice(bytes);
                }
                None => defs.put(0, 1),
            }
        }
        let mut body = self.buffer();
        levels_section(&mut body, defs);
        body.extend_from_slice(&data);
        self.give(data);
        self.chunk(vec![name], T_BYTE_ARRAY, None, rows.len(), body, None)
    }

    /// A `map<string, string>` column whose rows are taken from a few distinct maps (`sets[index[row]]`,
    /// a record's header set): keys and values dictionary-encoded, each set's codes computed once.
    pub(super) fn map_of_sets(
        &mut self,
        name: &'static str,
        sets: &[MapSet],
        index: &[u32],
    ) -> std::io::Result<()> {
        let (mut key_dictionary, mut value_dictionary) =
            (Dictionary::default(), Dictionary::default());
        let coded: Vec<CodedSet> = sets
            .iter()
            .map(|set| {
                let reps = (0..set.len()).map(|entry| u32::from(entry != 0)).collect();
                let keys = set
                    .iter()
                    .map(|(key, _)| key_dictionary.code(key))
                    .collect();
                let values = set
                    .iter()
                    .filter_map(|(_, value)| value.as_deref())
                    .map(|v| value_dictionary.code(v));
                let complete = set.iter().all(|(_, value)| value.is_some());
                (reps, keys, values.collect(), complete)
            })
            .collect();
        let key_width = key_dictionary.width();
        let value_width = value_dictionary.width();
        let (mut reps, mut key_defs, mut value_defs) = (Rle::new(1), Rle::new(2), Rle::new(2));
        let (mut keys, mut values) = (Rle::new(key_width), Rle::new(value_width));
        let mut levels = 0usize;
        for &set in index {
            let (set_reps, set_keys, set_values, complete) = &coded[set as usize];
            if set_reps.is_empty() {
                // an empty map (a record without headers): one level, defined down to the map
                reps.put(0, 1);
                key_defs.put(1, 1);
                value_defs.put(1, 1);
                levels += 1;
                continue;
            }
            reps.extend(set_reps);
            key_defs.put(2, set_reps.len());
            keys.extend(set_keys);
            if *complete {
                value_defs.put(3, set_reps.len());
            } else {
                for (_, value) in &sets[set as usize] {
                    value_defs.put(if value.is_some() { 3 } else { 2 }, 1);
                }
            }
            values.extend(set_values);
            levels += set_reps.len();
        }
        let reps = reps.finish();
        let leaves = [
            ("key", key_defs, keys, key_width, key_dictionary.page()),
            (
                "value",
                value_defs,
                values,
                value_width,
                value_dictionary.page(),
            ),
        ];
        for (leaf, defs, codes, width, dictionary) in leaves {
            let mut body = self.buffer();
            body.extend_from_slice(&(reps.len() as u32).to_le_bytes());
            body.extend_from_slice(&reps);
            levels_section(&mut body, defs);
            // no entry at all (no record has headers): no dictionary, and no values to encode
            let dictionary = (dictionary.0 > 0).then_some(dictionary);
            if dictionary.is_some() {
                body.push(width as u8);
                body.extend_from_slice(&codes.finish());
            }
            self.chunk(
                vec![name, "key_value", leaf],
                T_BYTE_ARRAY,
                dictionary,
                levels,
                body,
                None,
            )?;
        }
        Ok(())
    }

    /// A dictionary-encoded string column from its dictionary and each level row's code (-1: null).
    pub(super) fn dictionary_codes(
        &mut self,
        name: &'static str,
        entries: &[&[u8]],
        codes: &[i64],
        runs: &[(u32, u32)],
    ) -> std::io::Result<()> {
        let mut dictionary = Vec::new();
        for text in entries {
            dictionary.extend_from_slice(&(text.len() as u32).to_le_bytes());
            dictionary.extend_from_slice(text);
        }
        let width = bit_width(entries.len().saturating_sub(1) as u64).max(1);
        let mut defs = Rle::new(1);
        let mut indices = Rle::new(width);
        for &(row, count) in runs {
            let code = codes[row as usize];
            if code < 0 {
                defs.put(0, count as usize);
            } else {
                defs.put(1, count as usize);
                indices.put(code as u32, count as usize);
            }
        }
        let mut body = self.buffer();
        levels_section(&mut body, defs);
        body.push(width as u8);
        body.extend_from_slice(&indices.finish());
        self.chunk(
            vec![name],
            T_BYTE_ARRAY,
            Some((entries.len(), dictionary)),
            self.rows,
            body,
            None,
        )
    }

    /// A flat optional fixed-width column from runs of `(value or null, points)`.
    pub(super) fn fixed<T: Fixed>(
        &mut self,
        name: &'static str,
        runs: impl Iterator<Item = (Option<T>, u32)>,
    ) -> std::io::Result<()> {
        let with_statistics = statistics(name);
        let mut defs = Rle::new(1);
        let mut values = self.buffer();
        let mut nulls = 0i64;
        let mut bounds: Option<(T, T)> = None;
        for (value, count) in runs {
            match value {
                None => {
                    defs.put(0, count as usize);
                    nulls += count as i64;
                }
                Some(v) => {
                    defs.put(1, count as usize);
                    for _ in 0..count {
                        v.put(&mut values);
                    }
                    if with_statistics {
                        bounds = Some(match bounds {
                            None => (v, v),
                            Some((lo, hi)) => {
                                (if v < lo { v } else { lo }, if v > hi { v } else { hi })
                            }
                        });
                    }
                }
            }
        }
        let mut body = self.buffer();
        levels_section(&mut body, defs);
        body.extend_from_slice(&values);
        self.give(values);
        let stats = if with_statistics {
            Some(match bounds {
                Some((lo, hi)) => Stats {
                    null_count: nulls,
                    min: lo.le(),
                    max: hi.le(),
                },
                None => Stats {
                    null_count: nulls,
                    min: Vec::new(),
                    max: Vec::new(),
                },
            })
        } else {
            None
        };
        self.chunk(vec![name], T::PHYSICAL, None, self.rows, body, stats)
    }

    pub(super) fn booleans(
        &mut self,
        name: &'static str,
        runs: impl Iterator<Item = (Option<bool>, u32)>,
    ) -> std::io::Result<()> {
        let mut defs = Rle::new(1);
        let mut values = self.buffer();
        let (mut acc, mut bits) = (0u8, 0u32);
        for (value, count) in runs {
            match value {
                None => defs.put(0, count as usize),
                Some(v) => {
                    defs.put(1, count as usize);
                    for _ in 0..count {
                        acc |= u8::from(v) << bits;
                        bits += 1;
                        if bits == 8 {
                            values.push(acc);
                            acc = 0;
                            bits = 0;
                        }
                    }
                }
            }
        }
        if bits > 0 {
            values.push(acc);
        }
        let mut body = self.buffer();
        levels_section(&mut body, defs);
        body.extend_from_slice(&values);
        self.give(values);
        self.chunk(vec![name], T_BOOLEAN, None, self.rows, body, None)
    }

    /// A map<string, string> column (two leaves) from map rows and runs of points.
    pub(super) fn map(
        &mut self,
        name: &'static str,
        map: &MapColumn,
        runs: impl Iterator<Item = (u32, u32)>,
    ) -> std::io::Result<()> {
        let mut reps = Rle::new(1);
        let mut key_defs = Rle::new(2);
        let mut value_defs = Rle::new(2);
        let mut keys = self.buffer();
        let mut values = self.buffer();
        let mut levels = 0usize;
        for (row, count) in runs {
            let (first, last) = (
                map.offsets[row as usize] as usize,
                map.offsets[row as usize + 1] as usize,
            );
            if first == last {
                reps.put(0, count as usize);
                key_defs.put(1, count as usize);
                value_defs.put(1, count as usize);
                levels += count as usize;
                continue;
            }
            for _ in 0..count {
                for entry in first..last {
                    reps.put(u32::from(entry != first), 1);
                    key_defs.put(2, 1);
                    let key = string_at(&map.keys, entry).unwrap_or(b"");
                    keys.extend_from_slice(&(key.len() as u32).to_le_bytes());
                    keys.extend_from_slice(key);
                    match string_at(&map.values, entry) {
                        Some(value) => {
                            value_defs.put(3, 1);
                            values.extend_from_slice(&(value.len() as u32).to_le_bytes());
                            values.extend_from_slice(value);
                        }
                        None => value_defs.put(2, 1),
                    }
                }
                levels += last - first;
            }
        }
        let reps = reps.finish();
        for (leaf, defs, data) in [("key", key_defs, keys), ("value", value_defs, values)] {
            let mut body = self.buffer();
            body.extend_from_slice(&(reps.len() as u32).to_le_bytes());
            body.extend_from_slice(&reps);
            levels_section(&mut body, defs);
            body.extend_from_slice(&data);
            self.give(data);
            self.chunk(
                vec![name, "key_value", leaf],
                T_BYTE_ARRAY,
                None,
                levels,
                body,
                None,
            )?;
        }
        Ok(())
    }

    /// An all-null leaf: one run of definition level 0 (and of repetition level 0 when nested).
    pub(super) fn nulls(
        &mut self,
        path: Vec<&'static str>,
        physical: i32,
        max_def: u64,
        nested: bool,
    ) -> std::io::Result<()> {
        let mut body = self.buffer();
        if nested {
            let mut reps = Rle::new(1);
            reps.put(0, self.rows);
            levels_section(&mut body, reps);
        }
        let mut defs = Rle::new(bit_width(max_def));
        defs.put(0, self.rows);
        levels_section(&mut body, defs);
        self.chunk(path, physical, None, self.rows, body, None)
    }
}
