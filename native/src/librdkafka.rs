//! The few librdkafka C functions the topic reader calls, looked up in the copy already loaded.
//!
//! confluent-kafka ships its own librdkafka (or links the system one); the Python side passes its
//! path, so the reader and confluent-kafka's clients run the very same library, with its SSL, SASL
//! and compression support, and this extension builds without a C toolchain or a second librdkafka.
//! Layouts and signatures are librdkafka's public, stable ABI (`rdkafka.h`).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// `rd_kafka_message_t`.
#[repr(C)]
pub struct Message {
    pub err: c_int,
    pub rkt: *mut c_void,
    pub partition: i32,
    pub payload: *const u8,
    pub len: usize,
    pub key: *const u8,
    pub key_len: usize,
    pub offset: i64,
    pub private: *mut c_void,
}

/// `rd_kafka_topic_partition_t`.
#[repr(C)]
pub struct TopicPartition {
    pub topic: *const c_char,
    pub partition: i32,
    pub offset: i64,
    pub metadata: *mut c_void,
    pub metadata_size: usize,
    pub opaque: *mut c_void,
    pub err: c_int,
    pub private: *mut c_void,
}

/// `rd_kafka_topic_partition_list_t`.
#[repr(C)]
pub struct PartitionList {
    pub cnt: c_int,
    pub size: c_int,
    pub elems: *mut TopicPartition,
}

pub type ErrorCallback = unsafe extern "C" fn(*mut c_void, c_int, *const c_char, *mut c_void);
pub type LogCallback = unsafe extern "C" fn(*const c_void, c_int, *const c_char, *const c_char);

pub const CONSUMER: c_int = 1;
pub const CONF_OK: c_int = 0;
pub const ERR_FATAL: c_int = -150;

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}
const RTLD_NOW: c_int = 2;

macro_rules! api {
    ($($field:ident = $symbol:literal : fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The librdkafka functions, resolved once.
        pub struct Api {
            $(pub $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl Api {
            unsafe fn resolve(handle: *mut c_void) -> Result<Api, String> {
                Ok(Api {
                    $($field: {
                        let name = CString::new($symbol).expect("symbol names have no NUL");
                        let address = dlsym(handle, name.as_ptr());
                        if address.is_null() {
                            return Err(format!("librdkafka has no {}", $symbol));
                        }
                        std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(address)
                    },)*
                })
            }
        }
    };
}

api! {
    conf_new = "rd_kafka_conf_new": fn() -> *mut c_void;
    conf_set = "rd_kafka_conf_set": fn(*mut c_void, *const c_char, *const c_char, *mut c_char, usize) -> c_int;
    conf_set_error_cb = "rd_kafka_conf_set_error_cb": fn(*mut c_void, ErrorCallback);
    conf_set_log_cb = "rd_kafka_conf_set_log_cb": fn(*mut c_void, LogCallback);
    conf_set_opaque = "rd_kafka_conf_set_opaque": fn(*mut c_void, *mut c_void);
    conf_destroy = "rd_kafka_conf_destroy": fn(*mut c_void);
    new = "rd_kafka_new": fn(c_int, *mut c_void, *mut c_char, usize) -> *mut c_void;
    opaque = "rd_kafka_opaque": fn(*const c_void) -> *mut c_void;
    poll_set_consumer = "rd_kafka_poll_set_consumer": fn(*mut c_void) -> c_int;
    list_new = "rd_kafka_topic_partition_list_new": fn(c_int) -> *mut PartitionList;
    list_add = "rd_kafka_topic_partition_list_add": fn(*mut PartitionList, *const c_char, i32) -> *mut TopicPartition;
    list_destroy = "rd_kafka_topic_partition_list_destroy": fn(*mut PartitionList);
    assign = "rd_kafka_assign": fn(*mut c_void, *const PartitionList) -> c_int;
    position = "rd_kafka_position": fn(*mut c_void, *mut PartitionList) -> c_int;
    query_watermark_offsets = "rd_kafka_query_watermark_offsets": fn(*mut c_void, *const c_char, i32, *mut i64, *mut i64, c_int) -> c_int;
    offsets_for_times = "rd_kafka_offsets_for_times": fn(*mut c_void, *mut PartitionList, c_int) -> c_int;
    queue_get_consumer = "rd_kafka_queue_get_consumer": fn(*mut c_void) -> *mut c_void;
    queue_destroy = "rd_kafka_queue_destroy": fn(*mut c_void);
    consume_batch_queue = "rd_kafka_consume_batch_queue": fn(*mut c_void, c_int, *mut *mut Message, usize) -> isize;
    message_timestamp = "rd_kafka_message_timestamp": fn(*const Message, *mut c_int) -> i64;
    message_headers = "rd_kafka_message_headers": fn(*const Message, *mut *mut c_void) -> c_int;
    header_get_all = "rd_kafka_header_get_all": fn(*const c_void, usize, *mut *const c_char, *mut *const u8, *mut usize) -> c_int;
    message_errstr = "rd_kafka_message_errstr": fn(*const Message) -> *const c_char;
    message_destroy = "rd_kafka_message_destroy": fn(*mut Message);
    err2str = "rd_kafka_err2str": fn(c_int) -> *const c_char;
    fatal_error = "rd_kafka_fatal_error": fn(*mut c_void, *mut c_char, usize) -> c_int;
    consumer_close = "rd_kafka_consumer_close": fn(*mut c_void) -> c_int;
    destroy = "rd_kafka_destroy": fn(*mut c_void);
}

static API: OnceLock<Api> = OnceLock::new();

/// The functions of the librdkafka at `path` (the first successful load is kept for the process).
pub fn load(path: &str) -> Result<&'static Api, String> {
    if let Some(api) = API.get() {
        return Ok(api);
    }
    let c_path =
        CString::new(path).map_err(|_| format!("librdkafka path {path:?} contains NUL"))?;
    // SAFETY: dlopen/dlsym with a valid C string; the handle is never closed (the library stays
    // loaded for the process, as confluent-kafka's does).
    let api = unsafe {
        let handle = dlopen(c_path.as_ptr(), RTLD_NOW);
        if handle.is_null() {
            let reason = dlerror();
            let reason = if reason.is_null() {
                "unknown".into()
            } else {
                text(reason)
            };
            return Err(format!("cannot load librdkafka from {path}: {reason}"));
        }
        Api::resolve(handle)?
    };
    Ok(API.get_or_init(|| api))
}

/// The loaded functions (callbacks run only after `load` succeeded).
pub fn loaded() -> Option<&'static Api> {
    API.get()
}

/// A C string as Rust text (invalid UTF-8 replaced); NULL is empty.
pub fn text(pointer: *const c_char) -> String {
    if pointer.is_null() {
        return String::new();
    }
    // SAFETY: librdkafka hands out NUL-terminated strings that live for the call.
    unsafe { CStr::from_ptr(pointer) }
        .to_string_lossy()
        .into_owned()
}

/// librdkafka's description of an error code.
pub fn describe(api: &Api, code: c_int) -> String {
    // SAFETY: rd_kafka_err2str returns a static string for any code.
    text(unsafe { (api.err2str)(code) })
}
