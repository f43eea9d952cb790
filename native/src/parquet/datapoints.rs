//! `datapoints/`: a chunk's points split into one file per UTC hour, row groups of runs of level rows.

use std::collections::HashMap;

use super::columns::string_at;
use super::schema::{schema_of, DATAPOINT_COLUMNS, LABEL_NAMES, T_DOUBLE, T_INT32, T_INT64};
use super::writer::Writer;
use crate::decode::{Columns, KIND_SUM};

#[derive(Clone, Copy, PartialEq)]
pub enum LabelKind {
    Str,
    I32,
    I64,
    Bool,
}

pub fn label_kind(name: &str) -> LabelKind {
    match name {
        "client_source_port" | "node_id" => LabelKind::I32,
        "subscription_id" | "push_interval_ms" => LabelKind::I64,
        "terminating" => LabelKind::Bool,
        _ => LabelKind::Str,
    }
}

/// One label value (a row of `BatchLabels.label_rows()`).
#[derive(Clone, Debug)]
pub enum LabelValue {
    Null,
    Str(String),
    Int(i64),
    Bool(bool),
}

/// What the decoder does not see: per-record lineage and labels.
pub struct RecordInput<'a> {
    pub topic: String,
    pub partitions: &'a [i32],
    pub offsets: &'a [i64],
    pub timestamps_ms: &'a [i64],
    pub label_slots: Vec<u32>,
    /// One row per distinct label set, 15 values in `LABEL_NAMES` order.
    pub label_rows: Vec<Vec<LabelValue>>,
}

const MS_PER_HOUR: i64 = 3_600_000;

/// `YYYY-MM-DD` of a day since the epoch (proleptic Gregorian).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

/// Runs of equal consecutive values of a per-point level index: `(level row, points)`.
fn runs_of(index: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for row in index {
        match runs.last_mut() {
            Some((last, count)) if *last == row => *count += 1,
            _ => runs.push((row, 1)),
        }
    }
    runs
}

pub struct HourFile {
    pub date: String,
    pub hour: i32,
    pub bytes: Vec<u8>,
}

/// Which points go to which file and row group: one entry per UTC hour of `record_timestamp`, in
/// ascending order (as landing's `_split_by_hour` splits the table), each with its row groups of at most
/// `group_rows` points, a row group as ranges of points in order.
pub(crate) struct HourPlan {
    pub(crate) hour: i64,
    pub(crate) groups: Vec<Vec<(usize, usize)>>,
}

impl HourPlan {
    pub(crate) fn date(&self) -> String {
        civil_date(self.hour.div_euclid(24))
    }

    pub(crate) fn hour_of_day(&self) -> i32 {
        self.hour.rem_euclid(24) as i32
    }
}

pub(crate) fn plan_hours(
    columns: &Columns,
    records: &RecordInput,
    group_rows: usize,
) -> Vec<HourPlan> {
    let group_rows = group_rows.max(1);
    let mut start = 0usize;
    let mut record_ranges: Vec<(i64, usize, usize)> = Vec::new(); // (hour, first point, end)
    for (record, &points) in columns.points_per_record.iter().enumerate() {
        let end = start + points as usize;
        if points > 0 {
            record_ranges.push((
                records.timestamps_ms[record].div_euclid(MS_PER_HOUR),
                start,
                end,
            ));
        }
        start = end;
    }
    let mut hours: Vec<i64> = record_ranges.iter().map(|r| r.0).collect();
    hours.sort_unstable();
    hours.dedup();
    let single = hours_single(&record_ranges);
    let mut plans = Vec::with_capacity(hours.len());
    for hour in hours {
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        if single {
            ranges.push((0, start));
        } else {
            for &(h, a, b) in &record_ranges {
                if h != hour {
                    continue;
                }
                match ranges.last_mut() {
                    Some((_, end)) if *end == a => *end = b,
                    _ => ranges.push((a, b)),
                }
            }
        }
        let total: usize = ranges.iter().map(|&(a, b)| b - a).sum();
        let mut groups = Vec::new();
        let mut group: Vec<(usize, usize)> = Vec::new();
        let mut in_group = 0usize;
        let mut written = 0usize;
        for &(mut a, b) in &ranges {
            while a < b {
                let take = (group_rows - in_group).min(b - a);
                group.push((a, a + take));
                in_group += take;
                a += take;
                if in_group == group_rows || written + in_group == total {
                    groups.push(std::mem::take(&mut group));
                    written += in_group;
                    in_group = 0;
                }
            }
        }
        plans.push(HourPlan { hour, groups });
    }
    plans
}

/// The datapoints files of a gauge/sum-only chunk (every record decoded natively), one per UTC hour
/// (`plan_hours`).
///
/// Row groups hold at most `group_rows` points (pyarrow writes one row group of up to 1Mi rows, cut in
/// ~1 MB pages; this writes one page per column chunk, so it bounds the page with the row group).
pub fn write_datapoints(
    columns: &Columns,
    records: &RecordInput,
    group_rows: usize,
) -> std::io::Result<Vec<HourFile>> {
    let plans = plan_hours(columns, records, group_rows);
    let mut files = Vec::with_capacity(plans.len());
    for plan in plans {
        let mut w = Writer::new(0)?;
        for ranges in &plan.groups {
            write_group(&mut w, columns, records, ranges)?;
        }
        files.push(HourFile {
            date: plan.date(),
            hour: plan.hour_of_day(),
            bytes: w.finish(&schema_of(&DATAPOINT_COLUMNS)),
        });
    }
    Ok(files)
}

fn hours_single(record_ranges: &[(i64, usize, usize)]) -> bool {
    record_ranges.windows(2).all(|pair| pair[0].0 == pair[1].0)
}

/// A row group's points as runs of each level's rows: what is constant over a record, a label set, a
/// scope, a metric or an hour is written once per run, not once per point.
pub(crate) struct Levels {
    pub(crate) rows: usize,
    pub(crate) records: Vec<(u32, u32)>,
    pub(crate) labels: Vec<(u32, u32)>,
    pub(crate) scopes: Vec<(u32, u32)>,
    pub(crate) metrics: Vec<(u32, u32)>,
    /// Runs of `(index into dates and hours, points)`.
    pub(crate) hours: Vec<(u32, u32)>,
    pub(crate) dates: Vec<String>,
    pub(crate) hour_values: Vec<i32>,
}

impl Levels {
    pub(crate) fn of(
        columns: &Columns,
        records: &RecordInput,
        ranges: &[(usize, usize)],
    ) -> Levels {
        let selected = || ranges.iter().flat_map(|&(a, b)| a..b);
        let record_runs = runs_of(selected().map(|p| columns.point_record[p]));
        let mut label_runs: Vec<(u32, u32)> = Vec::new();
        for &(record, count) in &record_runs {
            let slot = records.label_slots[record as usize];
            match label_runs.last_mut() {
                Some((last, n)) if *last == slot => *n += count,
                _ => label_runs.push((slot, count)),
            }
        }
        let mut hours: HashMap<i64, u32> = HashMap::new();
        let mut dates: Vec<String> = Vec::new();
        let mut hour_values: Vec<i32> = Vec::new();
        let record_hour: Vec<u32> = records
            .timestamps_ms
            .iter()
            .map(|&ts| {
                let hour = ts.div_euclid(MS_PER_HOUR);
                *hours.entry(hour).or_insert_with(|| {
                    dates.push(civil_date(hour.div_euclid(24)));
                    hour_values.push(hour.rem_euclid(24) as i32);
                    (dates.len() - 1) as u32
                })
            })
            .collect();
        let hour_runs = record_runs
            .iter()
            .map(|&(r, c)| (record_hour[r as usize], c))
            .collect();
        Levels {
            rows: ranges.iter().map(|&(a, b)| b - a).sum(),
            labels: label_runs,
            scopes: runs_of(selected().map(|p| columns.point_scope[p])),
            metrics: runs_of(selected().map(|p| columns.point_metric[p])),
            records: record_runs,
            hours: hour_runs,
            dates,
            hour_values,
        }
    }
}

/// One row group of the points in `ranges` (in order).
fn write_group(
    w: &mut Writer,
    columns: &Columns,
    records: &RecordInput,
    ranges: &[(usize, usize)],
) -> std::io::Result<()> {
    let selected = || ranges.iter().flat_map(|&(a, b)| a..b);
    let levels = Levels::of(columns, records, ranges);
    let rows = levels.rows;
    w.begin_group(rows);
    let (record_runs, label_runs, scope_runs, metric_runs) = (
        &levels.records,
        &levels.labels,
        &levels.scopes,
        &levels.metrics,
    );
    let rec = |f: &dyn Fn(usize) -> Option<i64>| -> Vec<(Option<i64>, u32)> {
        record_runs
            .iter()
            .map(|&(r, c)| (f(r as usize), c))
            .collect()
    };

    // lineage
    w.dictionary_strings(
        "topic",
        &[Some(records.topic.as_bytes())],
        &[(0, rows as u32)],
    )?;
    w.fixed::<i32>(
        "partition",
        record_runs
            .iter()
            .map(|&(r, c)| (Some(records.partitions[r as usize]), c)),
    )?;
    w.fixed::<i64>("offset", rec(&|r| Some(records.offsets[r])).into_iter())?;
    w.fixed::<i64>(
        "record_timestamp",
        rec(&|r| Some(records.timestamps_ms[r])).into_iter(),
    )?;

    // labels
    for (position, name) in LABEL_NAMES.iter().enumerate() {
        let value = |slot: u32| &records.label_rows[slot as usize][position];
        match label_kind(name) {
            LabelKind::Str => {
                let level: Vec<Option<&[u8]>> = records
                    .label_rows
                    .iter()
                    .map(|row| match &row[position] {
                        LabelValue::Str(s) => Some(s.as_bytes()),
                        _ => None,
                    })
                    .collect();
                w.dictionary_strings(name, &level, label_runs)?;
            }
            LabelKind::I32 => w.fixed::<i32>(
                name,
                label_runs.iter().map(|&(s, c)| match value(s) {
                    LabelValue::Int(v) => (Some(*v as i32), c),
                    _ => (None, c),
                }),
            )?,
            LabelKind::I64 => w.fixed::<i64>(
                name,
                label_runs.iter().map(|&(s, c)| match value(s) {
                    LabelValue::Int(v) => (Some(*v), c),
                    _ => (None, c),
                }),
            )?,
            LabelKind::Bool => w.booleans(
                name,
                label_runs.iter().map(|&(s, c)| match value(s) {
                    LabelValue::Bool(v) => (Some(*v), c),
                    _ => (None, c),
                }),
            )?,
        }
    }

    // scope level
    w.map(
        "resource_attributes",
        &columns.resource_attributes,
        scope_runs.iter().copied(),
    )?;
    let level: Vec<Option<&[u8]>> = (0..columns.scope_name.len())
        .map(|r| string_at(&columns.scope_name, r))
        .collect();
    w.dictionary_strings("scope_name", &level, scope_runs)?;
    let level: Vec<Option<&[u8]>> = (0..columns.scope_version.len())
        .map(|r| string_at(&columns.scope_version, r))
        .collect();
    w.dictionary_strings("scope_version", &level, scope_runs)?;
    w.map(
        "scope_attributes",
        &columns.scope_attributes,
        scope_runs.iter().copied(),
    )?;

    // metric level
    let level: Vec<Option<&[u8]>> = (0..columns.metric_name.len())
        .map(|r| string_at(&columns.metric_name, r))
        .collect();
    w.dictionary_strings("metric_name", &level, metric_runs)?;
    let level: Vec<Option<&[u8]>> = (0..columns.metric_unit.len())
        .map(|r| string_at(&columns.metric_unit, r))
        .collect();
    w.dictionary_strings("metric_unit", &level, metric_runs)?;
    let codes: Vec<i64> = columns
        .metric_kind
        .iter()
        .map(|&k| i64::from(k == KIND_SUM))
        .collect();
    w.dictionary_codes("metric_type", &[b"gauge", b"sum"], &codes, metric_runs)?;
    let codes: Vec<i64> = columns
        .temporality
        .iter()
        .map(|&t| if t == 0 { -1 } else { i64::from(t) - 1 })
        .collect();
    w.dictionary_codes(
        "temporality",
        &[b"delta", b"cumulative"],
        &codes,
        metric_runs,
    )?;
    w.booleans(
        "is_monotonic",
        metric_runs
            .iter()
            .map(|&(m, c)| match columns.is_monotonic[m as usize] {
                2 => (None, c),
                v => (Some(v == 1), c),
            }),
    )?;

    // point level
    w.map(
        "attributes",
        &columns.attributes,
        selected().map(|p| (p as u32, 1)),
    )?;
    let start_time = &columns.start_time;
    w.fixed::<i64>(
        "start_time",
        selected().map(|p| (Some(start_time[p]).filter(|&t| t != 0), 1)),
    )?;
    let time = &columns.time;
    w.fixed::<i64>(
        "time",
        selected().map(|p| (Some(time[p]).filter(|&t| t != 0), 1)),
    )?;
    w.fixed::<f64>("value", selected().map(|p| (Some(columns.value[p]), 1)))?;
    w.fixed::<i64>(
        "value_int",
        selected().map(|p| {
            (
                Some(columns.value_int[p]).filter(|_| columns.value_int_valid[p] == 1),
                1,
            )
        }),
    )?;

    // distribution columns: all null
    w.nulls(vec!["count"], T_INT64, 1, false)?;
    for name in ["sum", "min", "max"] {
        w.nulls(vec![name], T_DOUBLE, 1, false)?;
    }
    w.nulls(vec!["bucket_counts", "list", "element"], T_INT64, 3, true)?;
    w.nulls(
        vec!["explicit_bounds", "list", "element"],
        T_DOUBLE,
        3,
        true,
    )?;
    w.nulls(vec!["exp_scale"], T_INT32, 1, false)?;
    w.nulls(vec!["exp_zero_count"], T_INT64, 1, false)?;
    w.nulls(vec!["exp_positive_offset"], T_INT32, 1, false)?;
    w.nulls(
        vec!["exp_positive_bucket_counts", "list", "element"],
        T_INT64,
        3,
        true,
    )?;
    w.nulls(vec!["exp_negative_offset"], T_INT32, 1, false)?;
    w.nulls(
        vec!["exp_negative_bucket_counts", "list", "element"],
        T_INT64,
        3,
        true,
    )?;
    w.nulls(
        vec!["quantiles", "list", "element", "quantile"],
        T_DOUBLE,
        4,
        true,
    )?;
    w.nulls(
        vec!["quantiles", "list", "element", "value"],
        T_DOUBLE,
        4,
        true,
    )?;

    w.fixed::<i32>("flags", selected().map(|p| (Some(columns.flags[p]), 1)))?;

    // partition columns, from record_timestamp
    let level: Vec<Option<&[u8]>> = levels.dates.iter().map(|d| Some(d.as_bytes())).collect();
    let hour_runs = &levels.hours;
    let hour_values = &levels.hour_values;
    w.dictionary_strings("date", &level, hour_runs)?;
    w.fixed::<i32>(
        "hour",
        hour_runs
            .iter()
            .map(|&(h, c)| (Some(hour_values[h as usize]), c)),
    )?;

    w.end_group();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_labels_are_the_declared_columns_in_order() {
        let first = DATAPOINT_COLUMNS
            .iter()
            .position(|(name, _)| *name == LABEL_NAMES[0])
            .expect("record_type");
        for (offset, name) in LABEL_NAMES.iter().enumerate() {
            let (column, kind) = DATAPOINT_COLUMNS[first + offset];
            assert_eq!(column, *name);
            let expected = match kind {
                "string" => LabelKind::Str,
                "int32" => LabelKind::I32,
                "int64" => LabelKind::I64,
                "bool" => LabelKind::Bool,
                other => panic!("{name}: a label of type {other}"),
            };
            assert!(label_kind(name) == expected, "{name}");
        }
    }

    #[test]
    fn dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_415), "2025-11-23");
        assert_eq!(civil_date(-1), "1969-12-31");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }
}
