//! The Python module `kip714_native`: column buffers as a dict of `Buffer`s (moved, not copied).

use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::owned::{put, Buffer};
use crate::parquet::{HourFile, RawInput, RecordInput};
use crate::text::{MapColumn, StringColumn};

fn put_strings<'py>(dict: &Bound<'py, PyDict>, name: &str, column: StringColumn) -> PyResult<()> {
    put(dict, &format!("{name}.offsets"), column.offsets)?;
    put(dict, &format!("{name}.data"), column.data)?;
    put(dict, &format!("{name}.valid"), column.valid)
}

fn put_map<'py>(dict: &Bound<'py, PyDict>, name: &str, column: MapColumn) -> PyResult<()> {
    put(dict, &format!("{name}.offsets"), column.offsets)?;
    put_strings(dict, &format!("{name}.keys"), column.keys)?;
    put_strings(dict, &format!("{name}.values"), column.values)
}

/// The record values of a Python list (bytes or None), kept alive while their slices are read.
fn owned_values(values: &Bound<'_, PyList>) -> Vec<Option<Py<PyBytes>>> {
    values
        .iter()
        .map(|item| item.downcast_into::<PyBytes>().ok().map(Bound::unbind))
        .collect()
}

fn list_slices<'a>(py: Python<'a>, owned: &'a [Option<Py<PyBytes>>]) -> Vec<Option<&'a [u8]>> {
    owned
        .iter()
        .map(|item| item.as_ref().map(|bytes| bytes.as_bytes(py)))
        .collect()
}

/// Decode a list of record values (bytes or None) into column buffers.
///
/// Returns a dict of little-endian buffers named `<column>` or `<column>.offsets|data|valid|keys...`;
/// `status` has one byte per record: 0 decoded here, 1 for the Python decoder. The GIL is released
/// while decoding, so landing threads decode in parallel.
#[pyfunction]
fn decode_metrics<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyList>,
) -> PyResult<Bound<'py, PyDict>> {
    let owned = owned_values(values);
    let slices = list_slices(py, &owned);
    let columns = py.allow_threads(|| crate::decode::decode_values(&slices));
    columns_dict(py, columns)
}

fn contiguous<'a>(py: Python<'a>, buffer: &'a PyBuffer<u8>, name: &str) -> PyResult<&'a [u8]> {
    let cells = buffer
        .as_slice(py)
        .ok_or_else(|| PyValueError::new_err(format!("{name}: must be a contiguous buffer")))?;
    // SAFETY: ReadOnlyCell<u8> is a transparent wrapper of u8; the exporter keeps the memory alive
    // and unchanged while `buffer` is held (Arrow buffers are immutable).
    Ok(unsafe { std::slice::from_raw_parts(cells.as_ptr().cast::<u8>(), cells.len()) })
}

/// A per-record number column from Python: a C-contiguous buffer of `T` (the native reader's
/// memoryviews, a numpy array) read in place, or any other sequence of ints, listed once.
enum Numbers<T: Element> {
    Buffer(PyBuffer<T>),
    Listed(Vec<T>),
}

impl<'py, T: Element + FromPyObject<'py>> FromPyObject<'py> for Numbers<T> {
    fn extract_bound(column: &Bound<'py, PyAny>) -> PyResult<Self> {
        match PyBuffer::<T>::get(column) {
            Ok(buffer) if buffer.is_c_contiguous() => Ok(Numbers::Buffer(buffer)),
            _ => Ok(Numbers::Listed(column.extract()?)),
        }
    }
}

impl<T: Element> Numbers<T> {
    fn values<'a>(&'a self, py: Python<'a>) -> &'a [T] {
        match self {
            Numbers::Buffer(buffer) => {
                let cells = buffer
                    .as_slice(py)
                    .expect("C-contiguous, checked on extraction");
                // SAFETY: ReadOnlyCell<T> is a transparent wrapper of T; the exporter keeps the memory
                // alive and unchanged while `buffer` is held (the reader's buffers are immutable).
                unsafe { std::slice::from_raw_parts(cells.as_ptr().cast::<T>(), cells.len()) }
            }
            Numbers::Listed(values) => values,
        }
    }
}

/// The values of an Arrow binary column given as its buffers, read in place.
///
/// `offsets` has `offset + length + 1` little-endian int32 entries into `data`; `validity` is Arrow's
/// bitmap or None.
fn binary_slices<'a>(
    offsets: &'a [u8],
    data: &'a [u8],
    validity: Option<&'a [u8]>,
    offset: usize,
    length: usize,
) -> PyResult<Vec<Option<&'a [u8]>>> {
    let offset_at = |index: usize| {
        i32::from_le_bytes(
            offsets[4 * index..4 * index + 4]
                .try_into()
                .expect("4 bytes"),
        ) as usize
    };
    if offsets.len() < 4 * (offset + length + 1)
        || validity.is_some_and(|bits| bits.len() * 8 < offset + length)
    {
        return Err(PyValueError::new_err(
            "offsets/validity: shorter than the column",
        ));
    }
    let mut slices: Vec<Option<&[u8]>> = Vec::with_capacity(length);
    for index in offset..offset + length {
        let valid = validity.is_none_or(|bits| bits[index / 8] >> (index % 8) & 1 == 1);
        let (start, end) = (offset_at(index), offset_at(index + 1));
        if !valid {
            slices.push(None);
        } else if start > end || end > data.len() {
            return Err(PyValueError::new_err("offsets: outside the data buffer"));
        } else {
            slices.push(Some(&data[start..end]));
        }
    }
    Ok(slices)
}

/// Records listed in `skip` are not decoded (they fail earlier, on headers or lineage); returns which.
fn skip_records(slices: &mut [Option<&[u8]>], skip: &[usize]) -> Vec<bool> {
    let mut skipped = vec![false; slices.len()];
    for &index in skip {
        if let Some(slot) = slices.get_mut(index) {
            *slot = None;
            skipped[index] = true;
        }
    }
    skipped
}

/// An Arrow binary column's offsets, data and validity bitmap (if any), as slices.
type BinarySlices<'a> = (&'a [u8], &'a [u8], Option<&'a [u8]>);

/// The three buffers of an Arrow binary column, as slices (see `binary_slices`).
fn binary_buffers<'a>(
    py: Python<'a>,
    offsets: &'a PyBuffer<u8>,
    data: &'a PyBuffer<u8>,
    validity: &'a Option<PyBuffer<u8>>,
) -> PyResult<BinarySlices<'a>> {
    let validity = match validity {
        Some(bitmap) => Some(contiguous(py, bitmap, "validity")?),
        None => None,
    };
    Ok((
        contiguous(py, offsets, "offsets")?,
        contiguous(py, data, "data")?,
        validity,
    ))
}

/// Decode an Arrow binary column given as its buffers (what landing's native reader hands over).
///
/// See `binary_slices` for the buffers; records listed in `skip` are not decoded.
#[pyfunction]
#[pyo3(signature = (offsets, data, validity, offset, length, skip))]
fn decode_binary<'py>(
    py: Python<'py>,
    offsets: PyBuffer<u8>,
    data: PyBuffer<u8>,
    validity: Option<PyBuffer<u8>>,
    offset: usize,
    length: usize,
    skip: Vec<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let (offsets, data, validity) = binary_buffers(py, &offsets, &data, &validity)?;
    let mut slices = binary_slices(offsets, data, validity, offset, length)?;
    skip_records(&mut slices, &skip);
    let columns = py.allow_threads(|| crate::decode::decode_values(&slices));
    columns_dict(py, columns)
}

fn columns_dict<'py>(
    py: Python<'py>,
    columns: crate::decode::Columns,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    put(&dict, "status", columns.status)?;
    put(&dict, "points_per_record", columns.points_per_record)?;
    put(&dict, "point_record", columns.point_record)?;
    put(&dict, "point_scope", columns.point_scope)?;
    put(&dict, "point_metric", columns.point_metric)?;
    put(&dict, "start_time", columns.start_time)?;
    put(&dict, "time", columns.time)?;
    put(&dict, "value", columns.value)?;
    put(&dict, "value_int", columns.value_int)?;
    put(&dict, "value_int.valid", columns.value_int_valid)?;
    put(&dict, "flags", columns.flags)?;
    put_map(&dict, "attributes", columns.attributes)?;
    put(&dict, "scope_record", columns.scope_record)?;
    put_map(&dict, "resource_attributes", columns.resource_attributes)?;
    put_strings(&dict, "scope_name", columns.scope_name)?;
    put_strings(&dict, "scope_version", columns.scope_version)?;
    put_map(&dict, "scope_attributes", columns.scope_attributes)?;
    put_strings(&dict, "metric_name", columns.metric_name)?;
    put_strings(&dict, "metric_unit", columns.metric_unit)?;
    put(&dict, "metric_kind", columns.metric_kind)?;
    put(&dict, "temporality", columns.temporality)?;
    put(&dict, "is_monotonic", columns.is_monotonic)?;
    Ok(dict)
}

/// Python's float repr as this module writes it (exposed so tests can compare with `repr`).
#[pyfunction]
fn python_float_repr(number: f64) -> String {
    crate::text::python_float_repr(number)
}

#[pymodule]
fn kip714_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(decode_metrics, module)?)?;
    module.add_function(wrap_pyfunction!(decode_binary, module)?)?;
    module.add_function(wrap_pyfunction!(write_datapoints, module)?)?;
    module.add_function(wrap_pyfunction!(write_raw, module)?)?;
    module.add_function(wrap_pyfunction!(python_float_repr, module)?)?;
    #[cfg(feature = "parquet-crate")]
    {
        module.add_function(wrap_pyfunction!(write_datapoints_crate, module)?)?;
        module.add_function(wrap_pyfunction!(write_raw_crate, module)?)?;
    }
    module.add_class::<crate::reader::TopicReader>()?;
    module.add_class::<Buffer>()?;
    module.add("FORMAT_VERSION", 1)?;
    // the label columns in the order `write_datapoints` reads `label_rows` (a test holds it to Python's)
    module.add("DATAPOINT_LABELS", crate::parquet::LABEL_NAMES.to_vec())?;
    // the writers' schemas and statistics columns (tests hold them to the Python declarations)
    module.add(
        "DATAPOINT_COLUMNS",
        crate::parquet::DATAPOINT_COLUMNS.to_vec(),
    )?;
    module.add("RAW_COLUMNS", crate::parquet::RAW_COLUMNS.to_vec())?;
    module.add(
        "STATISTICS_COLUMNS",
        crate::parquet::STATISTICS_COLUMNS.to_vec(),
    )?;
    Ok(())
}

fn label_value(item: &Bound<'_, PyAny>) -> PyResult<crate::parquet::LabelValue> {
    use crate::parquet::LabelValue;
    if item.is_none() {
        Ok(LabelValue::Null)
    } else if let Ok(flag) = item.downcast::<pyo3::types::PyBool>() {
        Ok(LabelValue::Bool(flag.is_true()))
    } else if let Ok(number) = item.extract::<i64>() {
        Ok(LabelValue::Int(number))
    } else {
        Ok(LabelValue::Str(item.extract::<String>()?))
    }
}

/// A `datapoints` writer: the hand-written one (`parquet/`), or the crate prototype's.
type DatapointsWriter =
    fn(&crate::decode::Columns, &RecordInput, usize) -> std::io::Result<Vec<HourFile>>;

/// A `raw` writer, likewise.
type RawWriter = fn(&RawInput) -> std::io::Result<Vec<u8>>;

/// What the writers return: the chunk's points, one `(date, hour, parquet bytes)` per UTC hour of the
/// records, and None; or, when some record needs the Python decoder, nothing written and the chunk's
/// decoded columns (`decode_binary`'s dict), so the caller goes on from them without decoding again.
type Written<'py> = (
    usize,
    Vec<(String, i32, Py<PyBytes>)>,
    Option<Bound<'py, PyDict>>,
);

/// A chunk's inputs besides its values, as the Python tuple `(topic, partitions, offsets,
/// timestamps_ms, label_slots)`: one value per record except the topic, as buffers (read in place) or
/// sequences.
#[derive(FromPyObject)]
struct ChunkRecords(
    String,
    Numbers<i32>,
    Numbers<i64>,
    Numbers<i64>,
    Numbers<i64>,
);

/// Decode a chunk's values and write its `datapoints` Parquet files, with the GIL released.
///
/// `label_slots[i]` is record i's row in `label_rows` (-1 when its headers failed); records in `skip`
/// (failed on headers or lineage, quarantined by the caller) are not decoded and have no points.
fn write_chunk<'py>(
    py: Python<'py>,
    mut slices: Vec<Option<&[u8]>>,
    records: ChunkRecords,
    label_rows: &Bound<'_, PyList>,
    skip: Vec<usize>,
    group_rows: usize,
    writer: DatapointsWriter,
) -> PyResult<Written<'py>> {
    let skipped = skip_records(&mut slices, &skip);
    let ChunkRecords(topic, partitions, offsets, timestamps_ms, label_slots) = records;
    let (partitions, offsets) = (partitions.values(py), offsets.values(py));
    let (timestamps_ms, label_slots) = (timestamps_ms.values(py), label_slots.values(py));
    let width = crate::parquet::LABEL_NAMES.len();
    let mut rows = Vec::with_capacity(label_rows.len());
    for row in label_rows.iter() {
        let mut values = Vec::with_capacity(width);
        for item in row.try_iter()? {
            values.push(label_value(&item?)?);
        }
        if values.len() != width {
            return Err(PyValueError::new_err(format!(
                "label_rows: {width} values per row"
            )));
        }
        rows.push(values);
    }
    let n = slices.len();
    let in_range = |slot: i64| slot >= 0 && (slot as usize) < rows.len();
    if partitions.len() != n
        || offsets.len() != n
        || timestamps_ms.len() != n
        || label_slots.len() != n
        || label_slots
            .iter()
            .zip(&skipped)
            .any(|(&slot, &skip)| !skip && !in_range(slot))
    {
        return Err(PyValueError::new_err(
            "records: one value per record (label slots in range)",
        ));
    }
    // a skipped record's slot is -1 (its headers failed): never read, as it has no points
    let input = RecordInput {
        topic,
        partitions,
        offsets,
        timestamps_ms,
        label_slots: label_slots.iter().map(|&slot| slot.max(0) as u32).collect(),
        label_rows: rows,
    };
    let decoded = py.allow_threads(|| {
        crate::decode::with_decoded(&slices, |columns| {
            if (0..n).any(|i| columns.status[i] != 0 && !skipped[i]) {
                return None; // a record for the Python decoder: keep the columns, write nothing
            }
            let files = writer(columns, &input, group_rows);
            Some(files.map(|files| (columns.point_record.len(), files)))
        })
    });
    match decoded {
        crate::decode::Decoded::Read(written) => {
            let (points, files) = written.map_err(|err| PyValueError::new_err(err.to_string()))?;
            let files = files
                .into_iter()
                .map(|file| (file.date, file.hour, PyBytes::new(py, &file.bytes).unbind()))
                .collect();
            Ok((points, files, None))
        }
        crate::decode::Decoded::Kept(columns) => {
            Ok((0, Vec::new(), Some(columns_dict(py, columns)?)))
        }
    }
}

/// Declares a `write_datapoints`-shaped Python function over `writer`: the hand-written writer and the
/// crate prototype must take the same arguments, as the benchmark swaps one for the other.
macro_rules! datapoints_function {
    ($(#[$attribute:meta])* $name:ident, $writer:expr) => {
        $(#[$attribute])*
        #[pyfunction]
        #[pyo3(signature = (values, records, label_rows, skip, group_rows=131_072))]
        fn $name<'py>(
            py: Python<'py>,
            values: BinaryColumn<'_>,
            records: ChunkRecords,
            label_rows: &Bound<'_, PyList>,
            skip: Vec<usize>,
            group_rows: usize,
        ) -> PyResult<Written<'py>> {
            let owner = values.owner();
            write_chunk(
                py,
                owner.slices(py)?,
                records,
                label_rows,
                skip,
                group_rows,
                $writer,
            )
        }
    };
}

datapoints_function!(
    /// Write a chunk's `datapoints` files (see `write_chunk`) from its values, a `BinaryColumn`.
    ///
    /// `records` is `ChunkRecords`' tuple; `label_rows` are `BatchLabels.label_rows()`.
    write_datapoints,
    crate::parquet::write_datapoints
);

datapoints_function!(
    /// `write_datapoints` on the arrow-rs `parquet` crate (the prototype measured in `docs/benchmarks.md`).
    #[cfg(feature = "parquet-crate")]
    write_datapoints_crate,
    |columns, input, group_rows| {
        crate::parquet_crate::write_datapoints(columns, input, group_rows)
            .map_err(std::io::Error::other)
    }
);

/// An Arrow binary array's buffers: `(offsets, data, validity, offset, length)` (see `binary_slices`).
type ArrowBinary = (
    PyBuffer<u8>,
    PyBuffer<u8>,
    Option<PyBuffer<u8>>,
    usize,
    usize,
);

/// A binary column from Python: a list of bytes (or None), or an Arrow binary array's buffers.
#[derive(FromPyObject)]
enum BinaryColumn<'py> {
    List(Bound<'py, PyList>),
    Arrow(ArrowBinary),
}

/// What a `BinaryColumn`'s slices borrow from.
enum BinaryOwner {
    List(Vec<Option<Py<PyBytes>>>),
    Arrow(ArrowBinary),
}

impl BinaryColumn<'_> {
    fn owner(self) -> BinaryOwner {
        match self {
            BinaryColumn::List(list) => BinaryOwner::List(owned_values(&list)),
            BinaryColumn::Arrow(buffers) => BinaryOwner::Arrow(buffers),
        }
    }
}

impl BinaryOwner {
    fn slices<'a>(&'a self, py: Python<'a>) -> PyResult<Vec<Option<&'a [u8]>>> {
        match self {
            BinaryOwner::List(owned) => Ok(list_slices(py, owned)),
            BinaryOwner::Arrow((offsets, data, validity, offset, length)) => {
                let (offsets, data, validity) = binary_buffers(py, offsets, data, validity)?;
                binary_slices(offsets, data, validity, *offset, *length)
            }
        }
    }
}

/// Declares a `write_raw`-shaped Python function over `writer`, for the same reason as
/// `datapoints_function`.
macro_rules! raw_function {
    ($(#[$attribute:meta])* $name:ident, $writer:expr) => {
        $(#[$attribute])*
        #[pyfunction]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            py: Python<'_>,
            topic: String,
            partitions: Numbers<i32>,
            offsets: Numbers<i64>,
            timestamps_ms: Numbers<i64>,
            keys: BinaryColumn<'_>,
            header_sets: Vec<Vec<(String, Option<String>)>>,
            header_index: Numbers<i32>,
            values: BinaryColumn<'_>,
        ) -> PyResult<Py<PyBytes>> {
            let columns = RawColumns(
                partitions,
                offsets,
                timestamps_ms,
                header_sets,
                header_index,
            );
            write_raw_with(py, topic, columns, keys, values, $writer)
        }
    };
}

raw_function!(
    /// Write a chunk's raw Parquet file (`RAW_SCHEMA`) with the GIL released; returns its bytes.
    ///
    /// `header_sets` are the chunk's distinct header sets as `[(name, value or None)]` (values already text,
    /// as the raw table keeps them) and `header_index[i]` record i's set; `keys` and `values` are
    /// `BinaryColumn`s.
    write_raw,
    crate::parquet::write_raw
);

raw_function!(
    /// `write_raw` on the arrow-rs `parquet` crate (the prototype measured in `docs/benchmarks.md`).
    #[cfg(feature = "parquet-crate")]
    write_raw_crate,
    |input| crate::parquet_crate::write_raw(input).map_err(std::io::Error::other)
);

/// `write_raw`'s per-record columns besides keys and values: partitions, offsets, timestamps (ms),
/// the distinct header sets and each record's set.
struct RawColumns(
    Numbers<i32>,
    Numbers<i64>,
    Numbers<i64>,
    Vec<Vec<(String, Option<String>)>>,
    Numbers<i32>,
);

fn write_raw_with(
    py: Python<'_>,
    topic: String,
    columns: RawColumns,
    keys: BinaryColumn<'_>,
    values: BinaryColumn<'_>,
    writer: RawWriter,
) -> PyResult<Py<PyBytes>> {
    let RawColumns(partitions, offsets, timestamps_ms, header_sets, header_index) = columns;
    let header_index = header_index.values(py);
    if header_index.iter().any(|&set| set < 0) {
        return Err(PyValueError::new_err("header_index: must not be negative"));
    }
    // SAFETY: i32 and u32 have the same size and alignment, and every value was checked non-negative
    let header_index = unsafe {
        std::slice::from_raw_parts(header_index.as_ptr().cast::<u32>(), header_index.len())
    };
    let (keys, values) = (keys.owner(), values.owner());
    let input = RawInput {
        topic,
        partitions: partitions.values(py),
        offsets: offsets.values(py),
        timestamps_ms: timestamps_ms.values(py),
        keys: keys.slices(py)?,
        header_sets: header_sets
            .into_iter()
            .map(|set| {
                set.into_iter()
                    .map(|(key, value)| (key.into_bytes(), value.map(String::into_bytes)))
                    .collect()
            })
            .collect(),
        header_index,
        values: values.slices(py)?,
    };
    let rows = input.partitions.len();
    let sets = input.header_sets.len();
    if [
        input.offsets.len(),
        input.timestamps_ms.len(),
        input.keys.len(),
        input.values.len(),
        input.header_index.len(),
    ]
    .iter()
    .any(|&length| length != rows)
        || input.header_index.iter().any(|&set| set as usize >= sets)
    {
        return Err(PyValueError::new_err(
            "raw columns: one value per record (header sets in range)",
        ));
    }
    let bytes = py
        .allow_threads(|| writer(&input))
        .map_err(|err| PyValueError::new_err(err.to_string()))?;
    Ok(PyBytes::new(py, &bytes).unbind())
}
