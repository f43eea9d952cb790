//! The three-level columns of one batch and the decoding of `MetricsData` into them.

use crate::text::{MapColumn, StringColumn};
use crate::wire::{expect, Fallback, Reader, Res, WT_I64, WT_LEN, WT_VARINT};

pub(crate) const KIND_GAUGE: u8 = 0;
pub(crate) const KIND_SUM: u8 = 1;
pub(crate) const TEMPORALITY_NONE: u8 = 0;
pub(crate) const MONOTONIC_NONE: u8 = 2;

/// Every column of one batch, at the three levels.
pub struct Columns {
    // per point
    pub(crate) point_record: Vec<u32>,
    pub(crate) point_scope: Vec<u32>,
    pub(crate) point_metric: Vec<u32>,
    pub(crate) start_time: Vec<i64>,
    pub(crate) time: Vec<i64>,
    pub(crate) value: Vec<f64>,
    pub(crate) value_int: Vec<i64>,
    pub(crate) value_int_valid: Vec<u8>,
    pub(crate) flags: Vec<i32>,
    pub(crate) attributes: MapColumn,
    // per scope
    pub(crate) scope_record: Vec<u32>,
    pub(crate) resource_attributes: MapColumn,
    pub(crate) scope_name: StringColumn,
    pub(crate) scope_version: StringColumn,
    pub(crate) scope_attributes: MapColumn,
    // per metric
    pub(crate) metric_name: StringColumn,
    pub(crate) metric_unit: StringColumn,
    pub(crate) metric_kind: Vec<u8>,
    pub(crate) temporality: Vec<u8>,
    pub(crate) is_monotonic: Vec<u8>,
    // per record
    pub(crate) status: Vec<u8>,
    pub(crate) points_per_record: Vec<u32>,
}

/// Row counts of each level, to roll a record back when it turns out to need the fallback.
pub(crate) struct Mark {
    pub(crate) points: usize,
    pub(crate) scopes: usize,
    pub(crate) metrics: usize,
}

impl Columns {
    pub(crate) fn new() -> Self {
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

    pub(crate) fn mark(&self) -> Mark {
        Mark {
            points: self.point_record.len(),
            scopes: self.scope_record.len(),
            metrics: self.metric_kind.len(),
        }
    }

    pub(crate) fn rollback(&mut self, mark: &Mark) {
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
    pub(crate) fn add_record(&mut self, record: u32, value: Option<&[u8]>) {
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

    pub(crate) fn decode_metrics_data(&mut self, record: u32, buf: &[u8]) -> Res<usize> {
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

    pub(crate) fn decode_resource_metrics(&mut self, record: u32, buf: &[u8]) -> Res<()> {
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

    pub(crate) fn decode_scope_metrics(
        &mut self,
        record: u32,
        resource_map: &MapColumn,
        buf: &[u8],
    ) -> Res<()> {
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
                        self.scope_attributes
                            .push_key_value(reader.len_delimited()?)?;
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
        self.scope_name
            .push(Some(name).filter(|text| !text.is_empty()))?;
        self.scope_version
            .push(Some(version).filter(|text| !text.is_empty()))?;
        self.scope_record.push(record);
        let scope_index = u32::try_from(self.scope_record.len() - 1).map_err(|_| Fallback)?;
        for metric in metrics {
            self.decode_metric(record, scope_index, metric)?;
        }
        Ok(())
    }

    pub(crate) fn decode_metric(&mut self, record: u32, scope: u32, buf: &[u8]) -> Res<()> {
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
        self.metric_unit
            .push(Some(unit).filter(|text| !text.is_empty()))?;
        self.metric_kind.push(kind);
        if kind == KIND_SUM {
            // enum values other than delta (1) and cumulative (2) have no name: null
            self.temporality
                .push(if temporality == 1 || temporality == 2 {
                    temporality as u8
                } else {
                    TEMPORALITY_NONE
                });
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

    pub(crate) fn decode_number_point(
        &mut self,
        record: u32,
        scope: u32,
        metric: u32,
        buf: &[u8],
    ) -> Res<()> {
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

/// Decode a batch of record values (None: no value) into columns; never panics on any input.
pub fn decode_values(values: &[Option<&[u8]>]) -> Columns {
    let mut columns = Columns::new();
    decode_into(&mut columns, values);
    columns
}

fn decode_into(columns: &mut Columns, values: &[Option<&[u8]>]) {
    for (index, value) in values.iter().enumerate() {
        columns.add_record(index as u32, *value);
    }
}

thread_local! {
    /// The columns of this thread's last `with_decoded` chunk, emptied and reused by its next one.
    static REUSED: std::cell::RefCell<Option<Columns>> = const { std::cell::RefCell::new(None) };
}

/// What `with_decoded`'s reader made of a chunk's columns: its result, or the columns themselves.
pub enum Decoded<T> {
    Read(T),
    /// The reader asked for the columns (the chunk needs more than it can do with them); they are
    /// handed over instead of being reused, so the caller need not decode the chunk again.
    Kept(Columns),
}

/// `decode_values` into columns this thread reuses from chunk to chunk, for a caller that only reads
/// them (the Parquet writer): the vectors keep their capacity, so a chunk does not grow ~30 of them
/// from empty again (reallocations, copies, fresh pages). When `read` returns None, the columns are
/// returned instead (`Decoded::Kept`), and the next chunk starts from new vectors.
pub fn with_decoded<T>(
    values: &[Option<&[u8]>],
    read: impl FnOnce(&Columns) -> Option<T>,
) -> Decoded<T> {
    let mut columns = REUSED
        .with(|cell| cell.borrow_mut().take())
        .unwrap_or_else(Columns::new);
    columns.rollback(&Mark {
        points: 0,
        scopes: 0,
        metrics: 0,
    });
    columns.status.clear();
    columns.points_per_record.clear();
    decode_into(&mut columns, values);
    match read(&columns) {
        Some(result) => {
            REUSED.with(|cell| *cell.borrow_mut() = Some(columns));
            Decoded::Read(result)
        }
        None => Decoded::Kept(columns),
    }
}
