//! Arrow string and map columns under construction, and attribute values rendered as the
//! Python reference renders them.

use crate::wire::{expect, Fallback, Reader, Res, WT_I64, WT_LEN, WT_VARINT};

/// A nullable Arrow string column under construction (i32 offsets, data, one validity byte per row).
#[derive(Default)]
pub(crate) struct StringColumn {
    pub(crate) offsets: Vec<i32>,
    pub(crate) data: Vec<u8>,
    pub(crate) valid: Vec<u8>,
}

impl StringColumn {
    pub(crate) fn new() -> Self {
        StringColumn {
            offsets: vec![0],
            data: Vec::new(),
            valid: Vec::new(),
        }
    }

    #[inline]
    pub(crate) fn close_row(&mut self, valid: bool) -> Res<()> {
        let end = i32::try_from(self.data.len()).map_err(|_| Fallback)?;
        self.offsets.push(end);
        self.valid.push(u8::from(valid));
        Ok(())
    }

    #[inline]
    pub(crate) fn push(&mut self, text: Option<&str>) -> Res<()> {
        if let Some(text) = text {
            self.data.extend_from_slice(text.as_bytes());
        }
        self.close_row(text.is_some())
    }

    pub(crate) fn len(&self) -> usize {
        self.valid.len()
    }

    pub(crate) fn truncate(&mut self, rows: usize) {
        self.data.truncate(self.offsets[rows] as usize);
        self.offsets.truncate(rows + 1);
        self.valid.truncate(rows);
    }
}

/// A map<string, string> column: per-row entry offsets over key and value string columns.
pub(crate) struct MapColumn {
    pub(crate) offsets: Vec<i32>,
    pub(crate) keys: StringColumn,
    pub(crate) values: StringColumn,
}

impl MapColumn {
    pub(crate) fn new() -> Self {
        MapColumn {
            offsets: vec![0],
            keys: StringColumn::new(),
            values: StringColumn::new(),
        }
    }

    #[inline]
    pub(crate) fn close_row(&mut self) -> Res<()> {
        self.offsets
            .push(i32::try_from(self.keys.len()).map_err(|_| Fallback)?);
        Ok(())
    }

    pub(crate) fn truncate(&mut self, rows: usize) {
        let entries = self.offsets[rows] as usize;
        self.offsets.truncate(rows + 1);
        self.keys.truncate(entries);
        self.values.truncate(entries);
    }

    /// Append a decoded KeyValue message as one entry of the current row.
    pub(crate) fn push_key_value(&mut self, buf: &[u8]) -> Res<()> {
        let mut reader = Reader::new(buf);
        let mut key: &str = "";
        let mut value: Option<&[u8]> = None;
        while !reader.done() {
            let (field, wire_type) = reader.tag()?;
            match field {
                1 => {
                    expect(wire_type, WT_LEN)?;
                    key = reader.utf8()?;
                }
                2 => {
                    expect(wire_type, WT_LEN)?;
                    if value.is_some() {
                        return Err(Fallback); // two AnyValues merge field by field: leave it to protobuf
                    }
                    value = Some(reader.len_delimited()?);
                }
                _ => return Err(Fallback),
            }
        }
        self.keys.push(Some(key))?;
        match value {
            None => self.values.push(None),
            Some(any) => render_any_value(any, &mut self.values),
        }
    }

    /// Copy every entry of row `row` of `other` as the entries of a new row here.
    pub(crate) fn push_row_of(&mut self, other: &MapColumn, row: usize) -> Res<()> {
        for entry in other.offsets[row] as usize..other.offsets[row + 1] as usize {
            self.keys.push(Some(string_at(&other.keys, entry)))?;
            let value = if other.values.valid[entry] == 1 {
                Some(string_at(&other.values, entry))
            } else {
                None
            };
            self.values.push(value)?;
        }
        self.close_row()
    }
}

pub(crate) fn string_at(column: &StringColumn, row: usize) -> &str {
    let bytes = &column.data[column.offsets[row] as usize..column.offsets[row + 1] as usize];
    // Every byte string in a column was validated as UTF-8 or written from a Rust string.
    std::str::from_utf8(bytes).unwrap_or("")
}

pub(crate) enum AnyKind<'a> {
    Unset,
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
}

/// Render an AnyValue as the reference does: strings as-is, scalars as JSON text.
pub(crate) fn render_any_value(buf: &[u8], out: &mut StringColumn) -> Res<()> {
    let mut reader = Reader::new(buf);
    let mut kind = AnyKind::Unset;
    while !reader.done() {
        let (field, wire_type) = reader.tag()?;
        // A oneof: the last member on the wire wins.
        kind = match field {
            1 => {
                expect(wire_type, WT_LEN)?;
                AnyKind::Str(reader.utf8()?)
            }
            2 => {
                expect(wire_type, WT_VARINT)?;
                AnyKind::Bool(reader.varint()? != 0)
            }
            3 => {
                expect(wire_type, WT_VARINT)?;
                AnyKind::Int(reader.varint()? as i64)
            }
            4 => {
                expect(wire_type, WT_I64)?;
                AnyKind::Double(f64::from_bits(reader.fixed64()?))
            }
            _ => return Err(Fallback), // arrays, kvlists, bytes, string indexes: the reference renders them
        };
    }
    match kind {
        AnyKind::Unset => out.push(None),
        AnyKind::Str(text) => out.push(Some(text)),
        AnyKind::Bool(flag) => out.push(Some(if flag { "true" } else { "false" })),
        AnyKind::Int(number) => {
            out.data.extend_from_slice(number.to_string().as_bytes());
            out.close_row(true)
        }
        AnyKind::Double(number) => {
            write_python_float(number, &mut out.data);
            out.close_row(true)
        }
    }
}

/// Python's `repr(float)` (what `json.dumps` writes; `str` for inf and nan): the shortest digits
/// that round-trip, positional for exponents -4..15, else scientific with a signed 2+ digit exponent.
pub(crate) fn write_python_float(number: f64, out: &mut Vec<u8>) {
    if number.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if number.is_infinite() {
        out.extend_from_slice(if number > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    if number == 0.0 {
        out.extend_from_slice(if number.is_sign_negative() {
            b"-0.0"
        } else {
            b"0.0"
        });
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. "-1.2345e-5", but breaks ties away
    // from Python: at that many digits, Python picks the one nearest the exact binary value (ties to
    // even), which is what the exact `{:.N$e}` form gives, whenever that one also round-trips.
    let shortest = format!("{number:e}");
    let digit_count = shortest
        .split('e')
        .next()
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_digit)
        .count();
    let nearest = format!("{number:.prec$e}", prec = digit_count.saturating_sub(1));
    let scientific = if nearest.parse::<f64>() == Ok(number) {
        nearest
    } else {
        shortest
    };
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if negative {
        out.push(b'-');
    }
    if (-4..16).contains(&exponent) {
        if exponent < 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exponent - 1) as usize));
            out.extend_from_slice(digits.as_bytes());
        } else {
            let integer_len = exponent as usize + 1;
            if digits.len() <= integer_len {
                out.extend_from_slice(digits.as_bytes());
                out.extend(std::iter::repeat_n(b'0', integer_len - digits.len()));
                out.extend_from_slice(b".0");
            } else {
                out.extend_from_slice(&digits.as_bytes()[..integer_len]);
                out.push(b'.');
                out.extend_from_slice(&digits.as_bytes()[integer_len..]);
            }
        }
    } else {
        out.push(digits.as_bytes()[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits.as_bytes()[1..]);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        out.extend_from_slice(format!("e{sign}{:02}", exponent.abs()).as_bytes());
    }
}

impl StringColumn {
    /// Monotone offsets within the data, UTF-8 rows (for fuzzing).
    pub(crate) fn check_consistent(&self) -> Result<(), String> {
        if self.offsets.len() != self.valid.len() + 1
            || self.offsets.windows(2).any(|w| w[0] > w[1])
        {
            return Err("string column offsets are not monotone or not one per row".into());
        }
        if *self.offsets.last().unwrap_or(&0) as usize != self.data.len()
            || std::str::from_utf8(&self.data).is_err()
        {
            return Err("string column data does not match its offsets or is not UTF-8".into());
        }
        Ok(())
    }
}

impl MapColumn {
    pub(crate) fn check_consistent(&self) -> Result<(), String> {
        self.keys.check_consistent()?;
        self.values.check_consistent()?;
        if self.offsets.windows(2).any(|w| w[0] > w[1])
            || *self.offsets.last().unwrap_or(&0) as usize != self.keys.len()
        {
            return Err("map column offsets do not match its entries".into());
        }
        Ok(())
    }
}

/// Python's float repr as this crate writes it.
pub fn python_float_repr(number: f64) -> String {
    let mut out = Vec::new();
    write_python_float(number, &mut out);
    String::from_utf8(out).unwrap_or_default()
}
