//! The Python module `kip714_native`: column buffers as a dict of `Buffer`s (moved, not copied).

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::owned::Buffer;
use crate::text::{MapColumn, StringColumn};


/// Move a column into the dict as a `Buffer` (no copy).
pub(crate) fn put<'py, T: Copy + Send + Sync + 'static>(
    dict: &Bound<'py, PyDict>,
    name: &str,
    values: Vec<T>,
) -> PyResult<()> {
    dict.set_item(name, Buffer::new(values))
}

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
    let owned: Vec<Option<Py<PyBytes>>> = values
        .iter()
        .map(|item| item.downcast_into::<PyBytes>().ok().map(Bound::unbind))
        .collect();
    let slices: Vec<Option<&[u8]>> = owned
        .iter()
        .map(|item| item.as_ref().map(|bytes| bytes.as_bytes(py)))
        .collect();
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

/// Decode an Arrow binary column given as its buffers (what landing's native reader hands over).
///
/// `offsets` has `offset + length + 1` little-endian int32 entries into `data`; `validity` is Arrow's bitmap or
/// None; records listed in `skip` are not decoded (they fail earlier, on headers or lineage).
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
    let offsets = contiguous(py, &offsets, "offsets")?;
    let data = contiguous(py, &data, "data")?;
    let validity = match &validity {
        Some(bitmap) => Some(contiguous(py, bitmap, "validity")?),
        None => None,
    };
    let offset_at = |index: usize| {
        i32::from_le_bytes(offsets[4 * index..4 * index + 4].try_into().expect("4 bytes")) as usize
    };
    if offsets.len() < 4 * (offset + length + 1) || validity.is_some_and(|bits| bits.len() * 8 < offset + length) {
        return Err(PyValueError::new_err("offsets/validity: shorter than the column"));
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
    for index in skip {
        if let Some(slot) = slices.get_mut(index) {
            *slot = None;
        }
    }
    let columns = py.allow_threads(|| crate::decode::decode_values(&slices));
    columns_dict(py, columns)
}

fn columns_dict<'py>(py: Python<'py>, columns: crate::decode::Columns) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    put(&dict, "status", columns.status)?;
    put(
        &dict,
        "points_per_record",
        columns.points_per_record,
    )?;
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
    module.add_function(wrap_pyfunction!(python_float_repr, module)?)?;
    module.add_class::<crate::reader::TopicReader>()?;
    module.add_class::<Buffer>()?;
    module.add("FORMAT_VERSION", 1)?;
    Ok(())
}
