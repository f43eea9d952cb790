//! `TopicReader`: the lander's consume loop in native code, filling per-partition record columns.
//!
//! What landing's Python loop did per message (accessor calls, one tuple per header, list appends)
//! was the largest cost of a landing run; here a consumed batch goes from librdkafka's messages
//! straight into column buffers with the GIL released. The rules stay the Python side's: it passes
//! each partition's end offset and `until`, and gets back the chunks that filled, the partitions that
//! reached their end, and every error and log line librdkafka reported, for its error policy.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr::null_mut;
use std::sync::Mutex;

use rustc_hash::FxHashMap;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::librdkafka::{self, Api, Message, PartitionList, CONF_OK, CONSUMER, ERR_FATAL};
use crate::owned::put;

/// Log lines kept between two `fetch` calls; more are counted, not kept (a broker flapping at
/// debug level must not grow memory).
const MAX_LOG_LINES: usize = 1000;
/// A chunk is cut before its keys or values pass this many bytes (Arrow binary offsets are 32-bit).
const MAX_CHUNK_BYTES: usize = 1 << 30;

/// What librdkafka reported from its own threads or callbacks, drained by each `fetch`.
#[derive(Default)]
struct Events {
    errors: Vec<(i32, bool, String)>,
    logs: Vec<(i32, String, String)>,
    dropped_logs: u64,
}

type Shared = Mutex<Events>;

unsafe extern "C" fn on_error(
    rk: *mut c_void,
    err: c_int,
    reason: *const c_char,
    opaque: *mut c_void,
) {
    if opaque.is_null() {
        return;
    }
    let shared = &*(opaque as *const Shared);
    let (code, fatal, text) = match librdkafka::loaded() {
        Some(api) if err == ERR_FATAL => {
            let mut buffer = [0 as c_char; 512];
            let code = (api.fatal_error)(rk, buffer.as_mut_ptr(), buffer.len());
            (code, true, librdkafka::text(buffer.as_ptr()))
        }
        _ => (err, false, librdkafka::text(reason)),
    };
    if let Ok(mut events) = shared.lock() {
        events.errors.push((code, fatal, text));
    }
}

unsafe extern "C" fn on_log(
    rk: *const c_void,
    level: c_int,
    facility: *const c_char,
    line: *const c_char,
) {
    let Some(api) = librdkafka::loaded() else {
        return;
    };
    let opaque = (api.opaque)(rk);
    if opaque.is_null() {
        return;
    }
    let shared = &*(opaque as *const Shared);
    if let Ok(mut events) = shared.lock() {
        if events.logs.len() < MAX_LOG_LINES {
            events
                .logs
                .push((level, librdkafka::text(facility), librdkafka::text(line)));
        } else {
            events.dropped_logs += 1;
        }
    }
}

/// Bytes or null per record, as an Arrow binary column (offsets, data, one validity byte per record).
struct BinaryColumn {
    offsets: Vec<i32>,
    data: Vec<u8>,
    valid: Vec<u8>,
}

impl BinaryColumn {
    fn new() -> Self {
        BinaryColumn {
            offsets: vec![0],
            data: Vec::new(),
            valid: Vec::new(),
        }
    }

    /// SAFETY: `pointer` is null or points to `len` readable bytes.
    unsafe fn push(&mut self, pointer: *const u8, len: usize) {
        if pointer.is_null() {
            self.valid.push(0);
        } else {
            self.data
                .extend_from_slice(std::slice::from_raw_parts(pointer, len));
            self.valid.push(1);
        }
        self.offsets.push(self.data.len() as i32);
    }
}

type HeaderSet = Option<Vec<(Vec<u8>, Option<Vec<u8>>)>>;

/// One partition's records since its last chunk was cut; each distinct header set kept once.
struct PartitionBuffer {
    offsets: Vec<i64>,
    timestamps: Vec<i64>,
    keys: BinaryColumn,
    values: BinaryColumn,
    header_index: Vec<i32>,
    header_sets: Vec<HeaderSet>,
    /// FxHash: header-set keys are hashed once per record, and need no DoS resistance since a
    /// partition's distinct sets are bounded by its clients.
    set_slots: FxHashMap<Vec<u8>, i32>,
}

impl PartitionBuffer {
    fn new() -> Self {
        PartitionBuffer {
            offsets: Vec::new(),
            timestamps: Vec::new(),
            keys: BinaryColumn::new(),
            values: BinaryColumn::new(),
            header_index: Vec::new(),
            header_sets: Vec::new(),
            set_slots: HashMap::default(),
        }
    }

    fn len(&self) -> usize {
        self.offsets.len()
    }

    fn is_full(&self, chunk_records: usize) -> bool {
        self.len() >= chunk_records
            || self.values.data.len() >= MAX_CHUNK_BYTES
            || self.keys.data.len() >= MAX_CHUNK_BYTES
    }

    /// The slot of the header set encoded in `key` (see `header_key`), interning it if new.
    fn slot(&mut self, key: &[u8]) -> i32 {
        if let Some(&slot) = self.set_slots.get(key) {
            return slot;
        }
        let slot = self.header_sets.len() as i32;
        self.header_sets.push(decode_header_key(key));
        self.set_slots.insert(key.to_vec(), slot);
        slot
    }
}

const NO_HEADERS: u8 = 0xff;
const NULL_VALUE: u64 = u64::MAX;

/// A message's headers as one byte string that identifies the set: `NO_HEADERS`, or per header its
/// name's length (u32) and bytes, then its value's length (u64, `NULL_VALUE` for null) and bytes.
unsafe fn header_key(api: &Api, message: *const Message, key: &mut Vec<u8>) {
    key.clear();
    let mut headers: *mut c_void = null_mut();
    if (api.message_headers)(message, &mut headers) == 0 && !headers.is_null() {
        let mut index = 0;
        loop {
            let mut name: *const c_char = std::ptr::null();
            let mut value: *const u8 = std::ptr::null();
            let mut size: usize = 0;
            if (api.header_get_all)(headers, index, &mut name, &mut value, &mut size) != 0 {
                break;
            }
            let name = std::ffi::CStr::from_ptr(name).to_bytes();
            key.extend_from_slice(&(name.len() as u32).to_le_bytes());
            key.extend_from_slice(name);
            if value.is_null() {
                key.extend_from_slice(&NULL_VALUE.to_le_bytes());
            } else {
                key.extend_from_slice(&(size as u64).to_le_bytes());
                key.extend_from_slice(std::slice::from_raw_parts(value, size));
            }
            index += 1;
        }
    }
    if key.is_empty() {
        key.push(NO_HEADERS); // no headers and an empty header list are the same set, as in Python
    }
}

fn decode_header_key(key: &[u8]) -> HeaderSet {
    if key == [NO_HEADERS] {
        return None;
    }
    let mut headers = Vec::new();
    let mut at = 0;
    while at < key.len() {
        let name_len = u32::from_le_bytes(key[at..at + 4].try_into().expect("4 bytes")) as usize;
        at += 4;
        let name = key[at..at + name_len].to_vec();
        at += name_len;
        let value_len = u64::from_le_bytes(key[at..at + 8].try_into().expect("8 bytes"));
        at += 8;
        let value = if value_len == NULL_VALUE {
            None
        } else {
            let value = key[at..at + value_len as usize].to_vec();
            at += value_len as usize;
            Some(value)
        };
        headers.push((name, value));
    }
    Some(headers)
}

/// Where each partition ends and what a fetch may take (from the Python side's plan).
struct Bounds {
    ends: HashMap<i32, Option<i64>>,
    until_ms: Option<i64>,
    limit: Option<usize>,
    chunk_records: usize,
}

/// What one fetch did, before it is handed to Python.
#[derive(Default)]
struct Fetched {
    consumed: usize,
    accepted: usize,
    full: Vec<(i32, PartitionBuffer)>,
    reached_end: Vec<i32>,
    until_ends: Vec<(i32, i64)>,
    message_errors: Vec<(i32, i32, String)>,
}

/// Room for one consume call's message pointers (kept between calls; empty outside `consume_into`).
#[derive(Default)]
struct MessageSlots(Vec<*mut Message>);
// SAFETY: the pointers are only set and destroyed within one `consume_into` call, which holds the
// reader mutably (pyo3's borrow checking serializes every method call).
unsafe impl Send for MessageSlots {}
unsafe impl Sync for MessageSlots {}

struct Handle(*mut c_void);
// SAFETY: librdkafka handles are thread-safe; the reader's methods take it exclusively when they
// change anything (a reader may be closed or dropped on another thread than the one that read).
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

/// The events' mutex, owned by the reader (a raw pointer, as librdkafka's opaque).
struct SharedEvents(*mut Shared);
// SAFETY: a pointer to a Mutex, freed only by `close`/`drop` after librdkafka is destroyed.
unsafe impl Send for SharedEvents {}
unsafe impl Sync for SharedEvents {}

/// An error code, then (partition, offset, error code) per partition asked.
type FoundOffsets = (i32, Vec<(i32, i64, i32)>);

/// A consumer on explicitly assigned partitions that buffers what it consumes per partition.
#[pyclass]
pub struct TopicReader {
    api: &'static Api,
    rk: Handle,
    queue: Handle,
    shared: SharedEvents,
    topic: CString,
    buffers: HashMap<i32, PartitionBuffer>,
    messages: MessageSlots,
}

#[pymethods]
impl TopicReader {
    /// `library`: path of the librdkafka confluent-kafka loaded; `config`: librdkafka properties.
    #[new]
    fn new(library: &str, config: Vec<(String, String)>, topic: &str) -> PyResult<Self> {
        let api = librdkafka::load(library).map_err(PyRuntimeError::new_err)?;
        let topic =
            CString::new(topic).map_err(|_| PyValueError::new_err("topic: contains NUL"))?;
        let shared = Box::into_raw(Box::new(Mutex::new(Events::default())));
        let mut error = [0 as c_char; 512];
        // SAFETY: librdkafka's documented configuration and construction sequence; `shared` outlives
        // the handle (freed after rd_kafka_destroy in `close`).
        unsafe {
            let conf = (api.conf_new)();
            for (name, value) in &config {
                let (Ok(c_name), Ok(c_value)) =
                    (CString::new(name.as_str()), CString::new(value.as_str()))
                else {
                    (api.conf_destroy)(conf);
                    drop(Box::from_raw(shared));
                    return Err(PyValueError::new_err(format!("{name}: contains NUL")));
                };
                let result = (api.conf_set)(
                    conf,
                    c_name.as_ptr(),
                    c_value.as_ptr(),
                    error.as_mut_ptr(),
                    error.len(),
                );
                if result != CONF_OK {
                    (api.conf_destroy)(conf);
                    drop(Box::from_raw(shared));
                    return Err(PyValueError::new_err(librdkafka::text(error.as_ptr())));
                }
            }
            (api.conf_set_error_cb)(conf, on_error);
            (api.conf_set_log_cb)(conf, on_log);
            (api.conf_set_opaque)(conf, shared.cast());
            let rk = (api.new)(CONSUMER, conf, error.as_mut_ptr(), error.len());
            if rk.is_null() {
                (api.conf_destroy)(conf);
                drop(Box::from_raw(shared));
                return Err(PyValueError::new_err(librdkafka::text(error.as_ptr())));
            }
            (api.poll_set_consumer)(rk);
            let queue = (api.queue_get_consumer)(rk);
            Ok(TopicReader {
                api,
                rk: Handle(rk),
                queue: Handle(queue),
                shared: SharedEvents(shared),
                topic,
                buffers: HashMap::new(),
                messages: MessageSlots::default(),
            })
        }
    }

    /// Assign partitions at explicit offsets (`{partition: offset}`); never a group.
    fn assign(&self, starts: HashMap<i32, i64>) -> PyResult<()> {
        let rk = self.handle()?;
        let mut partitions: Vec<_> = starts.into_iter().collect();
        partitions.sort_unstable();
        // SAFETY: a list built, used and destroyed here.
        let err = unsafe {
            let list = (self.api.list_new)(partitions.len() as c_int);
            for (partition, offset) in &partitions {
                let element = (self.api.list_add)(list, self.topic.as_ptr(), *partition);
                (*element).offset = *offset;
            }
            let err = (self.api.assign)(rk, list);
            (self.api.list_destroy)(list);
            err
        };
        if err != 0 {
            return Err(PyRuntimeError::new_err(format!(
                "assign: {}",
                librdkafka::describe(self.api, err)
            )));
        }
        Ok(())
    }

    /// The consumer's position in each partition (`{partition: offset}`; negative: none yet).
    fn positions(&self, partitions: Vec<i32>) -> PyResult<HashMap<i32, i64>> {
        let rk = self.handle()?;
        let mut found = HashMap::new();
        // SAFETY: a list built, read and destroyed here; `elems` holds `cnt` elements.
        unsafe {
            let list = (self.api.list_new)(partitions.len() as c_int);
            for partition in &partitions {
                (self.api.list_add)(list, self.topic.as_ptr(), *partition);
            }
            (self.api.position)(rk, list);
            let list_ref: &PartitionList = &*list;
            for index in 0..list_ref.cnt as usize {
                let element = &*list_ref.elems.add(index);
                found.insert(element.partition, element.offset);
            }
            (self.api.list_destroy)(list);
        }
        Ok(found)
    }

    /// (error code, low, high) of a partition, read from its leader now (0: no error).
    fn watermarks(
        &self,
        py: Python<'_>,
        partition: i32,
        timeout_ms: i32,
    ) -> PyResult<(i32, i64, i64)> {
        let (api, rk, topic) = (self.api, Handle(self.handle()?), self.topic.clone());
        Ok(py.allow_threads(move || {
            let rk = rk;
            let (mut low, mut high) = (-1i64, -1i64);
            // SAFETY: a live handle and out-pointers to locals.
            let err = unsafe {
                (api.query_watermark_offsets)(
                    rk.0,
                    topic.as_ptr(),
                    partition,
                    &mut low,
                    &mut high,
                    timeout_ms,
                )
            };
            (err, low, high)
        }))
    }

    /// (error code, [(partition, offset, error code)]): each partition's first offset whose
    /// timestamp is at or after its given time (`[(partition, ms)]`; -1: none yet).
    fn offsets_for_times(
        &self,
        py: Python<'_>,
        times: Vec<(i32, i64)>,
        timeout_ms: i32,
    ) -> PyResult<FoundOffsets> {
        let (api, rk, topic) = (self.api, Handle(self.handle()?), self.topic.clone());
        Ok(py.allow_threads(move || {
            let rk = rk;
            let mut found = Vec::with_capacity(times.len());
            // SAFETY: a list built, read and destroyed here; `elems` holds `cnt` elements.
            let err = unsafe {
                let list = (api.list_new)(times.len() as c_int);
                for (partition, time_ms) in &times {
                    let element = (api.list_add)(list, topic.as_ptr(), *partition);
                    (*element).offset = *time_ms;
                }
                let err = (api.offsets_for_times)(rk.0, list, timeout_ms);
                let list_ref: &PartitionList = &*list;
                for index in 0..list_ref.cnt as usize {
                    let element = &*list_ref.elems.add(index);
                    found.push((element.partition, element.offset, element.err));
                }
                (api.list_destroy)(list);
                err
            };
            (err, found)
        }))
    }

    /// Consume up to `max_messages` (waiting at most `timeout_ms`) into the partition buffers.
    ///
    /// Returns a dict: `consumed` (messages and errors), `accepted`, `full` (chunks that reached
    /// `chunk_records`, as `take_all` gives them), `reached_end` (partitions whose end offset, or the
    /// record before it, arrived), `until_ends` ((partition, offset) of the first record at or after
    /// `until_ms` in a partition without an end), `message_errors` ((code, partition, text)),
    /// `client_errors` ((code, fatal, text)), `logs` ((level, facility, line)) and `dropped_logs`.
    #[pyo3(signature = (ends, *, max_messages, timeout_ms, chunk_records, until_ms=None, limit=None))]
    #[allow(clippy::too_many_arguments)]
    fn fetch<'py>(
        &mut self,
        py: Python<'py>,
        ends: HashMap<i32, Option<i64>>,
        max_messages: usize,
        timeout_ms: i32,
        chunk_records: usize,
        until_ms: Option<i64>,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let queue = Handle(self.queue_handle()?);
        let bounds = Bounds {
            ends,
            until_ms,
            limit,
            chunk_records: chunk_records.max(1),
        };
        let api = self.api;
        let mut buffers = std::mem::take(&mut self.buffers);
        let mut messages = std::mem::take(&mut self.messages);
        let fetched = py.allow_threads(|| {
            let queue = queue;
            // SAFETY: `messages` has room for `max_messages`; each returned message is destroyed.
            unsafe {
                consume_into(
                    api,
                    queue.0,
                    &mut messages,
                    max_messages.max(1),
                    timeout_ms,
                    &bounds,
                    &mut buffers,
                )
            }
        });
        self.buffers = buffers;
        self.messages = messages;
        let result = PyDict::new(py);
        result.set_item("consumed", fetched.consumed)?;
        result.set_item("accepted", fetched.accepted)?;
        let full = PyList::empty(py);
        for (partition, buffer) in fetched.full {
            full.append(chunk_dict(py, partition, buffer)?)?;
        }
        result.set_item("full", full)?;
        result.set_item("reached_end", fetched.reached_end)?;
        result.set_item("until_ends", fetched.until_ends)?;
        result.set_item("message_errors", fetched.message_errors)?;
        self.drain_events(&result)?;
        Ok(result)
    }

    /// Every partition's buffered records as chunks (in partition order), emptying the buffers.
    fn take_all<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut partitions: Vec<i32> = self
            .buffers
            .iter()
            .filter(|(_, b)| b.len() > 0)
            .map(|(p, _)| *p)
            .collect();
        partitions.sort_unstable();
        let chunks = PyList::empty(py);
        for partition in partitions {
            if let Some(buffer) = self.buffers.remove(&partition) {
                chunks.append(chunk_dict(py, partition, buffer)?)?;
            }
        }
        self.buffers.clear();
        Ok(chunks)
    }

    /// Leave the partitions and destroy the client (idempotent).
    fn close(&mut self, py: Python<'_>) {
        if self.rk.0.is_null() {
            return;
        }
        let (api, rk, queue) = (self.api, Handle(self.rk.0), Handle(self.queue.0));
        py.allow_threads(move || {
            let (rk, queue) = (rk, queue);
            // SAFETY: the handles are live (nulled below so this runs once).
            unsafe {
                (api.consumer_close)(rk.0);
                (api.queue_destroy)(queue.0);
                (api.destroy)(rk.0);
            }
        });
        self.rk = Handle(null_mut());
        self.queue = Handle(null_mut());
        // SAFETY: no librdkafka thread can call back after rd_kafka_destroy returned.
        unsafe { drop(Box::from_raw(self.shared.0)) };
        self.shared = SharedEvents(null_mut());
    }
}

impl TopicReader {
    fn handle(&self) -> PyResult<*mut c_void> {
        if self.rk.0.is_null() {
            return Err(PyRuntimeError::new_err("the reader is closed"));
        }
        Ok(self.rk.0)
    }

    fn queue_handle(&self) -> PyResult<*mut c_void> {
        self.handle()?;
        Ok(self.queue.0)
    }

    fn drain_events(&self, result: &Bound<'_, PyDict>) -> PyResult<()> {
        let events = if self.shared.0.is_null() {
            Events::default()
        } else {
            // SAFETY: `shared` lives until `close`.
            let shared = unsafe { &*self.shared.0 };
            let mut guard = shared
                .lock()
                .map_err(|_| PyRuntimeError::new_err("reader events poisoned"))?;
            std::mem::take(&mut *guard)
        };
        result.set_item("client_errors", events.errors)?;
        result.set_item("logs", events.logs)?;
        result.set_item("dropped_logs", events.dropped_logs)?;
        Ok(())
    }
}

impl Drop for TopicReader {
    fn drop(&mut self) {
        if !self.rk.0.is_null() {
            // SAFETY: as in `close` (a reader dropped without close, e.g. on an exception path).
            unsafe {
                (self.api.consumer_close)(self.rk.0);
                (self.api.queue_destroy)(self.queue.0);
                (self.api.destroy)(self.rk.0);
                drop(Box::from_raw(self.shared.0));
            }
        }
    }
}

/// One consume call: messages into `buffers` by the Python side's rules (see `fetch`).
///
/// SAFETY: `queue` is a live consumer queue; every message returned is destroyed here.
unsafe fn consume_into(
    api: &Api,
    queue: *mut c_void,
    slots: &mut MessageSlots,
    max_messages: usize,
    timeout_ms: i32,
    bounds: &Bounds,
    buffers: &mut HashMap<i32, PartitionBuffer>,
) -> Fetched {
    let messages = &mut slots.0;
    messages.clear();
    messages.resize(max_messages, null_mut());
    let count = (api.consume_batch_queue)(queue, timeout_ms, messages.as_mut_ptr(), max_messages);
    let count = count.max(0) as usize;
    let mut fetched = Fetched {
        consumed: count,
        ..Fetched::default()
    };
    let mut key = Vec::with_capacity(1024);
    let mut ended_by_until: HashMap<i32, i64> = HashMap::new();
    for &message_ptr in &messages[..count] {
        let message = &*message_ptr;
        if fetched.accepted >= bounds.limit.unwrap_or(usize::MAX) {
            continue; // the run's max_records is reached: the rest of the batch is not landed now
        }
        if message.err != 0 {
            let text = librdkafka::text((api.message_errstr)(message));
            fetched
                .message_errors
                .push((message.err, message.partition, text));
            continue;
        }
        let partition = message.partition;
        let offset = message.offset;
        let end = bounds.ends.get(&partition).copied().flatten();
        let end = end.or_else(|| ended_by_until.get(&partition).copied());
        if let Some(end) = end {
            if offset >= end - 1 && !fetched.reached_end.contains(&partition) {
                fetched.reached_end.push(partition);
            }
            if offset >= end {
                continue;
            }
        }
        let mut kind: c_int = 0;
        let timestamp = (api.message_timestamp)(message, &mut kind).max(0);
        if let (Some(until_ms), None) = (bounds.until_ms, end) {
            if timestamp >= until_ms {
                ended_by_until.insert(partition, offset); // the first record at or after `until`
                fetched.until_ends.push((partition, offset));
                if !fetched.reached_end.contains(&partition) {
                    fetched.reached_end.push(partition);
                }
                continue;
            }
        }
        header_key(api, message, &mut key);
        let buffer = match buffers.entry(partition) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(PartitionBuffer::new()),
        };
        let slot = buffer.slot(&key);
        buffer.header_index.push(slot);
        buffer.offsets.push(offset);
        buffer.timestamps.push(timestamp);
        buffer.keys.push(message.key, message.key_len);
        buffer.values.push(message.payload, message.len);
        fetched.accepted += 1;
        if buffer.is_full(bounds.chunk_records) {
            if let Some(full) = buffers.remove(&partition) {
                fetched.full.push((partition, full));
            }
        }
    }
    for &message_ptr in &messages[..count] {
        (api.message_destroy)(message_ptr);
    }
    fetched
}

fn header_set<'py>(py: Python<'py>, set: &HeaderSet) -> PyResult<Bound<'py, PyAny>> {
    let Some(headers) = set else {
        return Ok(py.None().into_bound(py));
    };
    let mut items = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let name = String::from_utf8_lossy(name).into_owned();
        let value: Bound<'py, PyAny> = match value {
            Some(value) => PyBytes::new(py, value).into_any(),
            None => py.None().into_bound(py),
        };
        items.push(PyTuple::new(
            py,
            [name.into_pyobject(py)?.into_any(), value],
        )?);
    }
    Ok(PyTuple::new(py, items)?.into_any())
}

/// A chunk as the Python side reads it: numbers and binary columns as little-endian buffers, moved
/// into `Buffer`s (not copied).
fn chunk_dict<'py>(
    py: Python<'py>,
    partition: i32,
    buffer: PartitionBuffer,
) -> PyResult<Bound<'py, PyDict>> {
    let chunk = PyDict::new(py);
    chunk.set_item("partition", partition)?;
    let sets = PyList::empty(py);
    for set in &buffer.header_sets {
        sets.append(header_set(py, set)?)?;
    }
    put(&chunk, "offsets", buffer.offsets)?;
    put(&chunk, "timestamps", buffer.timestamps)?;
    put(&chunk, "header_index", buffer.header_index)?;
    for (name, column) in [("keys", buffer.keys), ("values", buffer.values)] {
        put(&chunk, &format!("{name}.offsets"), column.offsets)?;
        put(&chunk, &format!("{name}.data"), column.data)?;
        put(&chunk, &format!("{name}.valid"), column.valid)?;
    }
    chunk.set_item("header_sets", sets)?;
    Ok(chunk)
}
