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

pub mod check;
pub mod decode;
pub mod parquet;
#[cfg(feature = "parquet-crate")]
pub mod parquet_crate;
pub mod text;
pub mod wire;

pub use decode::{decode_values, Columns};
pub use text::python_float_repr;

#[cfg(feature = "python")]
mod librdkafka;
#[cfg(feature = "python")]
mod owned;
#[cfg(feature = "python")]
mod python;
#[cfg(feature = "python")]
mod reader;
