//! Native decoding of OTLP `MetricsData` values into column buffers, for the telemetry landing.
//!
//! This is the fast path of `airflow_provider_kip714.decoding` (`fast_path.py`), not a second reference: it
//! handles the common case only, well-formed payloads whose metrics are gauges and sums with string,
//! int, double and bool attribute values (what librdkafka and the Java client push). Any other
//! record (another point kind, exemplars, an unknown field, array/kvlist/bytes attribute values, no
//! points, bytes that are not protobuf) is marked "fallback" and the Python decoder decides: it
//! decodes the record or quarantines it with a precise reason. So this code never words an error
//! and never accepts a record the reference would reject.
//!
//! Output is one set of columns per level, as the Python side assembles them into Arrow: per point
//! (record, scope and metric index, times, value, attributes), per scope (resource and scope
//! attributes, name, version) and per metric (name, unit, kind, temporality, monotonic flag).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// The record is not on the fast path; the Python decoder takes it.
#[derive(Debug)]
struct Fallback;

type Res<T> = Result<T, Fallback>;

const WT_VARINT: u8 = 0;
const WT_I64: u8 = 1;
const WT_LEN: u8 = 2;

/// A protobuf wire-format reader over one message's bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    #[inline]
    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    fn varint(&mut self) -> Res<u64> {
        let mut result: u64 = 0;
        let mut shift = 0u32;
        loop {
            let byte = *self.buf.get(self.pos).ok_or(Fallback)?;
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(Fallback); // more than 64 bits
            }
            result |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(result);
            }
            shift += 7;
            if shift > 63 {
                return Err(Fallback);
            }
        }
    }

    #[inline]
    fn tag(&mut self) -> Res<(u64, u8)> {
        let key = self.varint()?;
        let field = key >> 3;
        if field == 0 {
            return Err(Fallback);
        }
        Ok((field, (key & 7) as u8))
    }

    #[inline]
    fn fixed64(&mut self) -> Res<u64> {
        let end = self.pos.checked_add(8).ok_or(Fallback)?;
        let bytes = self.buf.get(self.pos..end).ok_or(Fallback)?;
        self.pos = end;
        Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| Fallback)?))
    }

    #[inline]
    fn len_delimited(&mut self) -> Res<&'a [u8]> {
        let len = usize::try_from(self.varint()?).map_err(|_| Fallback)?;
        let end = self.pos.checked_add(len).ok_or(Fallback)?;
        let bytes = self.buf.get(self.pos..end).ok_or(Fallback)?;
        self.pos = end;
        Ok(bytes)
    }

    #[inline]
    fn utf8(&mut self) -> Res<&'a str> {
        std::str::from_utf8(self.len_delimited()?).map_err(|_| Fallback)
    }
}

#[inline]
fn expect(wire_type: u8, wanted: u8) -> Res<()> {
    if wire_type == wanted {
        Ok(())
    } else {
        Err(Fallback) // a known field with the wrong wire type is an unknown field to protobuf
    }
}

/// A nullable Arrow string column under construction (i32 offsets, data, one validity byte per row).
#[derive(Default)]
struct StringColumn {
    offsets: Vec<i32>,
    data: Vec<u8>,
    valid: Vec<u8>,
}

impl StringColumn {
    fn new() -> Self {
        StringColumn { offsets: vec![0], data: Vec::new(), valid: Vec::new() }
    }

    #[inline]
    fn close_row(&mut self, valid: bool) -> Res<()> {
        let end = i32::try_from(self.data.len()).map_err(|_| Fallback)?;
        self.offsets.push(end);
        self.valid.push(u8::from(valid));
        Ok(())
    }

    #[inline]
    fn push(&mut self, text: Option<&str>) -> Res<()> {
        if let Some(text) = text {
            self.data.extend_from_slice(text.as_bytes());
        }
        self.close_row(text.is_some())
    }

    fn len(&self) -> usize {
        self.valid.len()
    }

    fn truncate(&mut self, rows: usize) {
        self.data.truncate(self.offsets[rows] as usize);
        self.offsets.truncate(rows + 1);
        self.valid.truncate(rows);
    }
}

/// A map<string, string> column: per-row entry offsets over key and value string columns.
struct MapColumn {
    offsets: Vec<i32>,
    keys: StringColumn,
    values: StringColumn,
}

impl MapColumn {
    fn new() -> Self {
        MapColumn { offsets: vec![0], keys: StringColumn::new(), values: StringColumn::new() }
    }

    #[inline]
    fn close_row(&mut self) -> Res<()> {
        self.offsets.push(i32::try_from(self.keys.len()).map_err(|_| Fallback)?);
        Ok(())
    }

    fn truncate(&mut self, rows: usize) {
        let entries = self.offsets[rows] as usize;
        self.offsets.truncate(rows + 1);
        self.keys.truncate(entries);
        self.values.truncate(entries);
    }

    /// Append a decoded KeyValue message as one entry of the current row.
    fn push_key_value(&mut self, buf: &[u8]) -> Res<()> {
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
    fn push_row_of(&mut self, other: &MapColumn, row: usize) -> Res<()> {
        for entry in other.offsets[row] as usize..other.offsets[row + 1] as usize {
            self.keys.push(Some(string_at(&other.keys, entry)))?;
            let value = if other.values.valid[entry] == 1 { Some(string_at(&other.values, entry)) } else { None };
            self.values.push(value)?;
        }
        self.close_row()
    }
}

fn string_at(column: &StringColumn, row: usize) -> &str {
    let bytes = &column.data[column.offsets[row] as usize..column.offsets[row + 1] as usize];
    // Every byte string in a column was validated as UTF-8 or written from a Rust string.
    std::str::from_utf8(bytes).unwrap_or("")
}

enum AnyKind<'a> {
    Unset,
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
}

/// Render an AnyValue as the reference does: strings as-is, scalars as JSON text.
fn render_any_value(buf: &[u8], out: &mut StringColumn) -> Res<()> {
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
fn write_python_float(number: f64, out: &mut Vec<u8>) {
    if number.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if number.is_infinite() {
        out.extend_from_slice(if number > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    if number == 0.0 {
        out.extend_from_slice(if number.is_sign_negative() { b"-0.0" } else { b"0.0" });
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. "-1.2345e-5", but breaks ties away
    // from Python: at that many digits, Python picks the one nearest the exact binary value (ties to
    // even), which is what the exact `{:.N$e}` form gives, whenever that one also round-trips.
    let shortest = format!("{number:e}");
    let digit_count = shortest.split('e').next().unwrap_or("").chars().filter(char::is_ascii_digit).count();
    let nearest = format!("{number:.prec$e}", prec = digit_count.saturating_sub(1));
    let scientific = if nearest.parse::<f64>() == Ok(number) { nearest } else { shortest };
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
            out.extend(std::iter::repeat(b'0').take((-exponent - 1) as usize));
            out.extend_from_slice(digits.as_bytes());
        } else {
            let integer_len = exponent as usize + 1;
            if digits.len() <= integer_len {
                out.extend_from_slice(digits.as_bytes());
                out.extend(std::iter::repeat(b'0').take(integer_len - digits.len()));
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

const KIND_GAUGE: u8 = 0;
const KIND_SUM: u8 = 1;
const TEMPORALITY_NONE: u8 = 0;
const MONOTONIC_NONE: u8 = 2;

/// Every column of one batch, at the three levels.
struct Columns {
    // per point
    point_record: Vec<u32>,
    point_scope: Vec<u32>,
    point_metric: Vec<u32>,
    start_time: Vec<i64>,
    time: Vec<i64>,
    value: Vec<f64>,
    value_int: Vec<i64>,
    value_int_valid: Vec<u8>,
    flags: Vec<i32>,
    attributes: MapColumn,
    // per scope
    scope_record: Vec<u32>,
    resource_attributes: MapColumn,
    scope_name: StringColumn,
    scope_version: StringColumn,
    scope_attributes: MapColumn,
    // per metric
    metric_name: StringColumn,
    metric_unit: StringColumn,
    metric_kind: Vec<u8>,
    temporality: Vec<u8>,
    is_monotonic: Vec<u8>,
    // per record
    status: Vec<u8>,
    points_per_record: Vec<u32>,
}

/// Row counts of each level, to roll a record back when it turns out to need the fallback.
struct Mark {
    points: usize,
    scopes: usize,
    metrics: usize,
}

impl Columns {
    fn new() -> Self {
        Columns {
            point_record: Vec::new(),
            point_scope: Vec::new(),
            point_metric: Vec::new(),
            start_time: Vec::new(),
            time: Vec::new(),
            value: Vec::new(),
            value_int: Vec::new(),
            value_int_valid: Vec::new(),
            flags: Vec::new(),
            attributes: MapColumn::new(),
            scope_record: Vec::new(),
            resource_attributes: MapColumn::new(),
            scope_name: StringColumn::new(),
            scope_version: StringColumn::new(),
            scope_attributes: MapColumn::new(),
            metric_name: StringColumn::new(),
            metric_unit: StringColumn::new(),
            metric_kind: Vec::new(),
            temporality: Vec::new(),
            is_monotonic: Vec::new(),
            status: Vec::new(),
            points_per_record: Vec::new(),
        }
    }

    fn mark(&self) -> Mark {
        Mark { points: self.point_record.len(), scopes: self.scope_record.len(), metrics: self.metric_kind.len() }
    }

    fn rollback(&mut self, mark: &Mark) {
        self.point_record.truncate(mark.points);
        self.point_scope.truncate(mark.points);
        self.point_metric.truncate(mark.points);
        self.start_time.truncate(mark.points);
        self.time.truncate(mark.points);
        self.value.truncate(mark.points);
        self.value_int.truncate(mark.points);
        self.value_int_valid.truncate(mark.points);
        self.flags.truncate(mark.points);
        self.attributes.truncate(mark.points);
        self.scope_record.truncate(mark.scopes);
        self.resource_attributes.truncate(mark.scopes);
        self.scope_name.truncate(mark.scopes);
        self.scope_version.truncate(mark.scopes);
        self.scope_attributes.truncate(mark.scopes);
        self.metric_name.truncate(mark.metrics);
        self.metric_unit.truncate(mark.metrics);
        self.metric_kind.truncate(mark.metrics);
        self.temporality.truncate(mark.metrics);
        self.is_monotonic.truncate(mark.metrics);
    }

    /// Decode one record's value, or roll back and mark it for the fallback.
    fn add_record(&mut self, record: u32, value: Option<&[u8]>) {
        let mark = self.mark();
        let decoded = match value {
            Some(bytes) if !bytes.is_empty() => self.decode_metrics_data(record, bytes),
            _ => Err(Fallback),
        };
        match decoded {
            Ok(points) if points > 0 => {
                self.status.push(0);
                self.points_per_record.push(points as u32);
            }
            _ => {
                // no points: the reference checks whether it is another message type at all
                self.rollback(&mark);
                self.status.push(1);
                self.points_per_record.push(0);
            }
        }
    }

    fn decode_metrics_data(&mut self, record: u32, buf: &[u8]) -> Res<usize> {
        let before = self.point_record.len();
        let mut reader = Reader::new(buf);
        let mut resources = 0;
        while !reader.done() {
            let (field, wire_type) = reader.tag()?;
            if field != 1 {
                return Err(Fallback);
            }
            expect(wire_type, WT_LEN)?;
            self.decode_resource_metrics(record, reader.len_delimited()?)?;
            resources += 1;
        }
        if resources == 0 {
            return Err(Fallback);
        }
        Ok(self.point_record.len() - before)
    }

    fn decode_resource_metrics(&mut self, record: u32, buf: &[u8]) -> Res<()> {
        let mut reader = Reader::new(buf);
        let mut resource: Option<&[u8]> = None;
        let mut scopes: Vec<&[u8]> = Vec::new();
        while !reader.done() {
            let (field, wire_type) = reader.tag()?;
            expect(wire_type, WT_LEN)?;
            match field {
                1 if resource.is_none() => resource = Some(reader.len_delimited()?),
                2 => scopes.push(reader.len_delimited()?),
                3 => {
                    reader.utf8()?;
                }
                _ => return Err(Fallback),
            }
        }
        // The resource's attributes, once, in a one-row map copied onto each scope row.
        let mut resource_map = MapColumn::new();
        if let Some(resource) = resource {
            let mut reader = Reader::new(resource);
            while !reader.done() {
                let (field, wire_type) = reader.tag()?;
                match field {
                    1 => {
                        expect(wire_type, WT_LEN)?;
                        resource_map.push_key_value(reader.len_delimited()?)?;
                    }
                    2 => {
                        expect(wire_type, WT_VARINT)?;
                        reader.varint()?;
                    }
                    _ => return Err(Fallback),
                }
            }
        }
        resource_map.close_row()?;
        for scope in scopes {
            self.decode_scope_metrics(record, &resource_map, scope)?;
        }
        Ok(())
    }

    fn decode_scope_metrics(&mut self, record: u32, resource_map: &MapColumn, buf: &[u8]) -> Res<()> {
        let mut reader = Reader::new(buf);
        let mut scope: Option<&[u8]> = None;
        let mut metrics: Vec<&[u8]> = Vec::new();
        while !reader.done() {
            let (field, wire_type) = reader.tag()?;
            expect(wire_type, WT_LEN)?;
            match field {
                1 if scope.is_none() => scope = Some(reader.len_delimited()?),
                2 => metrics.push(reader.len_delimited()?),
                3 => {
                    reader.utf8()?;
                }
                _ => return Err(Fallback),
            }
        }
        let mut name: &str = "";
        let mut version: &str = "";
        if let Some(scope) = scope {
            let mut reader = Reader::new(scope);
            while !reader.done() {
                let (field, wire_type) = reader.tag()?;
                match field {
                    1 => {
                        expect(wire_type, WT_LEN)?;
                        name = reader.utf8()?;
                    }
                    2 => {
                        expect(wire_type, WT_LEN)?;
                        version = reader.utf8()?;
                    }
                    3 => {
                        expect(wire_type, WT_LEN)?;
                        self.scope_attributes.push_key_value(reader.len_delimited()?)?;
                    }
                    4 => {
                        expect(wire_type, WT_VARINT)?;
                        reader.varint()?;
                    }
                    _ => return Err(Fallback),
                }
            }
        }
        self.scope_attributes.close_row()?;
        self.resource_attributes.push_row_of(resource_map, 0)?;
        // empty name or version: null, as the reference does
        self.scope_name.push(Some(name).filter(|text| !text.is_empty()))?;
        self.scope_version.push(Some(version).filter(|text| !text.is_empty()))?;
        self.scope_record.push(record);
        let scope_index = u32::try_from(self.scope_record.len() - 1).map_err(|_| Fallback)?;
        for metric in metrics {
            self.decode_metric(record, scope_index, metric)?;
        }
        Ok(())
    }

    fn decode_metric(&mut self, record: u32, scope: u32, buf: &[u8]) -> Res<()> {
        let mut reader = Reader::new(buf);
        let mut name: &str = "";
        let mut unit: &str = "";
        let mut data: Option<(u8, &[u8])> = None;
        while !reader.done() {
            let (field, wire_type) = reader.tag()?;
            expect(wire_type, WT_LEN)?;
            match field {
                1 => name = reader.utf8()?,
                2 => {
                    reader.utf8()?; // description: validated, not kept
                }
                3 => unit = reader.utf8()?,
                5 | 7 if data.is_none() => {
                    let kind = if field == 5 { KIND_GAUGE } else { KIND_SUM };
                    data = Some((kind, reader.len_delimited()?));
                }
                // histograms, summaries, metadata, a repeated data field: the reference decodes them
                _ => return Err(Fallback),
            }
        }
        let (kind, data) = data.ok_or(Fallback)?;
        if name.is_empty() {
            return Err(Fallback);
        }
        let mut points: Vec<&[u8]> = Vec::new();
        let mut temporality: u64 = 0;
        let mut monotonic = false;
        let mut reader = Reader::new(data);
        while !reader.done() {
            let (field, wire_type) = reader.tag()?;
            match (kind, field) {
                (_, 1) => {
                    expect(wire_type, WT_LEN)?;
                    points.push(reader.len_delimited()?);
                }
                (KIND_SUM, 2) => {
                    expect(wire_type, WT_VARINT)?;
                    temporality = reader.varint()?;
                }
                (KIND_SUM, 3) => {
                    expect(wire_type, WT_VARINT)?;
                    monotonic = reader.varint()? != 0;
                }
                _ => return Err(Fallback),
            }
        }
        self.metric_name.push(Some(name))?;
        self.metric_unit.push(Some(unit).filter(|text| !text.is_empty()))?;
        self.metric_kind.push(kind);
        if kind == KIND_SUM {
            // enum values other than delta (1) and cumulative (2) have no name: null
            self.temporality.push(if temporality == 1 || temporality == 2 { temporality as u8 } else { TEMPORALITY_NONE });
            self.is_monotonic.push(u8::from(monotonic));
        } else {
            self.temporality.push(TEMPORALITY_NONE);
            self.is_monotonic.push(MONOTONIC_NONE);
        }
        let metric = u32::try_from(self.metric_kind.len() - 1).map_err(|_| Fallback)?;
        for point in points {
            self.decode_number_point(record, scope, metric, point)?;
        }
        Ok(())
    }

    fn decode_number_point(&mut self, record: u32, scope: u32, metric: u32, buf: &[u8]) -> Res<()> {
        let mut reader = Reader::new(buf);
        let mut start: u64 = 0;
        let mut time: u64 = 0;
        let mut double: Option<f64> = None;
        let mut integer: Option<i64> = None;
        let mut flags: u64 = 0;
        while !reader.done() {
            let (field, wire_type) = reader.tag()?;
            match field {
                7 => {
                    expect(wire_type, WT_LEN)?;
                    self.attributes.push_key_value(reader.len_delimited()?)?;
                }
                2 => {
                    expect(wire_type, WT_I64)?;
                    start = reader.fixed64()?;
                }
                3 => {
                    expect(wire_type, WT_I64)?;
                    time = reader.fixed64()?;
                }
                4 => {
                    expect(wire_type, WT_I64)?;
                    double = Some(f64::from_bits(reader.fixed64()?));
                    integer = None; // oneof: the last member wins
                }
                6 => {
                    expect(wire_type, WT_I64)?;
                    integer = Some(reader.fixed64()? as i64);
                    double = None;
                }
                8 => {
                    expect(wire_type, WT_VARINT)?;
                    flags = reader.varint()?;
                }
                _ => return Err(Fallback), // exemplars and unknown fields
            }
        }
        // Values the landing columns cannot hold (flags is int32, times int64 ns): the reference
        // quarantines the record with the reason, so the batch's conversions never see them.
        if flags > i32::MAX as u64 || start > i64::MAX as u64 || time > i64::MAX as u64 {
            return Err(Fallback);
        }
        self.attributes.close_row()?;
        self.point_record.push(record);
        self.point_scope.push(scope);
        self.point_metric.push(metric);
        // OTLP's 0 means "unset"; Python turns 0 into null
        self.start_time.push(start as i64);
        self.time.push(time as i64);
        match integer {
            Some(number) => {
                self.value.push(number as f64);
                self.value_int.push(number);
                self.value_int_valid.push(1);
            }
            None => {
                self.value.push(double.unwrap_or(0.0));
                self.value_int.push(0);
                self.value_int_valid.push(0);
            }
        }
        self.flags.push(flags as i32);
        Ok(())
    }
}

fn as_bytes<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: plain-old-data numbers viewed as their native-endian bytes, same length in bytes.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) }
}

fn put<'py>(dict: &Bound<'py, PyDict>, name: &str, bytes: &[u8]) -> PyResult<()> {
    dict.set_item(name, PyBytes::new(dict.py(), bytes))
}

fn put_strings<'py>(dict: &Bound<'py, PyDict>, name: &str, column: &StringColumn) -> PyResult<()> {
    put(dict, &format!("{name}.offsets"), as_bytes(&column.offsets))?;
    put(dict, &format!("{name}.data"), &column.data)?;
    put(dict, &format!("{name}.valid"), &column.valid)
}

fn put_map<'py>(dict: &Bound<'py, PyDict>, name: &str, column: &MapColumn) -> PyResult<()> {
    put(dict, &format!("{name}.offsets"), as_bytes(&column.offsets))?;
    put_strings(dict, &format!("{name}.keys"), &column.keys)?;
    put_strings(dict, &format!("{name}.values"), &column.values)
}

/// Decode a list of record values (bytes or None) into column buffers.
///
/// Returns a dict of little-endian buffers named `<column>` or `<column>.offsets|data|valid|keys...`;
/// `status` has one byte per record: 0 decoded here, 1 for the Python decoder. The GIL is released
/// while decoding, so landing threads decode in parallel.
#[pyfunction]
fn decode_metrics<'py>(py: Python<'py>, values: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyDict>> {
    let owned: Vec<Option<Py<PyBytes>>> = values
        .iter()
        .map(|item| item.downcast_into::<PyBytes>().ok().map(Bound::unbind))
        .collect();
    let slices: Vec<Option<&[u8]>> = owned.iter().map(|item| item.as_ref().map(|bytes| bytes.as_bytes(py))).collect();
    let columns = py.allow_threads(|| {
        let mut columns = Columns::new();
        for (index, value) in slices.iter().enumerate() {
            columns.add_record(index as u32, *value);
        }
        columns
    });
    let dict = PyDict::new(py);
    put(&dict, "status", &columns.status)?;
    put(&dict, "points_per_record", as_bytes(&columns.points_per_record))?;
    put(&dict, "point_record", as_bytes(&columns.point_record))?;
    put(&dict, "point_scope", as_bytes(&columns.point_scope))?;
    put(&dict, "point_metric", as_bytes(&columns.point_metric))?;
    put(&dict, "start_time", as_bytes(&columns.start_time))?;
    put(&dict, "time", as_bytes(&columns.time))?;
    put(&dict, "value", as_bytes(&columns.value))?;
    put(&dict, "value_int", as_bytes(&columns.value_int))?;
    put(&dict, "value_int.valid", &columns.value_int_valid)?;
    put(&dict, "flags", as_bytes(&columns.flags))?;
    put_map(&dict, "attributes", &columns.attributes)?;
    put(&dict, "scope_record", as_bytes(&columns.scope_record))?;
    put_map(&dict, "resource_attributes", &columns.resource_attributes)?;
    put_strings(&dict, "scope_name", &columns.scope_name)?;
    put_strings(&dict, "scope_version", &columns.scope_version)?;
    put_map(&dict, "scope_attributes", &columns.scope_attributes)?;
    put_strings(&dict, "metric_name", &columns.metric_name)?;
    put_strings(&dict, "metric_unit", &columns.metric_unit)?;
    put(&dict, "metric_kind", &columns.metric_kind)?;
    put(&dict, "temporality", &columns.temporality)?;
    put(&dict, "is_monotonic", &columns.is_monotonic)?;
    Ok(dict)
}

/// Python's float repr as this module writes it (exposed so tests can compare with `repr`).
#[pyfunction]
fn python_float_repr(number: f64) -> String {
    let mut out = Vec::new();
    write_python_float(number, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

#[pymodule]
fn kip714_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(decode_metrics, module)?)?;
    module.add_function(wrap_pyfunction!(python_float_repr, module)?)?;
    module.add("FORMAT_VERSION", 1)?;
    Ok(())
}
