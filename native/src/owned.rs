//! `kip714_native.Buffer`: a column buffer handed to Python without copying it.
//!
//! A decoded chunk is tens of megabytes per 100,000 records. Copying each column into a Python
//! `bytes` cost a memcpy and, worse, fresh pages (page faults) per chunk; the Vec that Rust filled
//! is moved into this object instead, and Python reads it through the buffer protocol
//! (`pa.py_buffer`, `np.frombuffer`, `memoryview`), read-only.

use std::os::raw::c_int;

use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Anything whose memory is a run of plain-old-data numbers.
trait Bytes: Send + Sync {
    fn bytes(&self) -> &[u8];
}

impl<T: Copy + Send + Sync> Bytes for Vec<T> {
    fn bytes(&self) -> &[u8] {
        // SAFETY: plain-old-data numbers viewed as their native-endian bytes, same length in bytes.
        unsafe {
            std::slice::from_raw_parts(
                self.as_ptr().cast::<u8>(),
                std::mem::size_of_val(self.as_slice()),
            )
        }
    }
}

/// A read-only byte buffer that owns the Vec it was made from.
#[pyclass(frozen, module = "kip714_native")]
pub(crate) struct Buffer {
    owner: Box<dyn Bytes>,
}

impl Buffer {
    pub(crate) fn new<T: Copy + Send + Sync + 'static>(values: Vec<T>) -> Self {
        Buffer {
            owner: Box::new(values),
        }
    }
}

#[pymethods]
impl Buffer {
    fn __len__(&self) -> usize {
        self.owner.bytes().len()
    }

    /// Fill `view` over the owned bytes; the view holds a reference to this object, so the memory
    /// lives as long as any Arrow buffer or array built over it.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if flags & pyo3::ffi::PyBUF_WRITABLE == pyo3::ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("kip714_native.Buffer is read-only"));
        }
        let bytes = slf.get().owner.bytes();
        // SAFETY: `view` is the caller's; the pointer and length describe memory owned by `slf`, which
        // the view keeps alive (PyBuffer_FillInfo takes a new reference to it).
        let filled = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                bytes.as_ptr().cast_mut().cast(),
                bytes.len() as pyo3::ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if filled == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {}
}

/// Move a column into the dict as a `Buffer` (no copy): how the decoder's and the topic reader's
/// columns reach Python.
pub(crate) fn put<T: Copy + Send + Sync + 'static>(
    dict: &Bound<'_, PyDict>,
    name: &str,
    values: Vec<T>,
) -> PyResult<()> {
    dict.set_item(name, Buffer::new(values))
}
