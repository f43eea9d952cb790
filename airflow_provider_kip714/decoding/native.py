"""The native OTLP fast path: Arrow arrays from the column buffers of ``kip714_native.decode_metrics``.

The Rust extension (``native/``) decodes gauges and sums, nearly every point clients push, with the
GIL released, and marks every other record for the Python decoder (``reference``), which stays
the reference: it decodes the rest or quarantines them with a precise reason (``fast_path`` merges the
two). This module only turns the returned buffers into Arrow arrays at the three levels (point, scope,
metric), without copying.

``KIP714_OTLP_DECODER=python`` turns the fast path off (for comparing the two, or to rule it out;
``native_switches`` owns the switch).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa

from airflow_provider_kip714 import native_switches
from airflow_provider_kip714.contract.landing_schema import STRING_MAP

try:
    import kip714_native
except ImportError:  # the optional extra ``airflow-provider-kip714[native]`` is not installed
    kip714_native = None

log = logging.getLogger(__name__)

# The decoder's codes index these directly (temporality: 0 is unset, null; 1 delta; 2 cumulative).
_METRIC_TYPES: Final = pa.array(["gauge", "sum"], type=pa.string())
_TEMPORALITIES: Final = pa.array(["delta", "cumulative"], type=pa.string())
FALLBACK: Final = 1


def native_available() -> bool:
    """Whether the fast path is installed and not turned off with ``KIP714_OTLP_DECODER=python``."""
    if kip714_native is None:
        _say_python_decoder_once()
        return False
    return native_switches.is_native(native_switches.DECODER_ENV)


@functools.cache
def _say_python_decoder_once() -> None:
    log.info(
        "the native OTLP decoder is not installed (pip install 'airflow-provider-kip714[native]'): "
        "using the Python decoder"
    )


@dataclass(frozen=True)
class NativeColumns:
    """One batch's native output: per-record status, and Arrow arrays per point, scope and metric."""

    status: np.ndarray  # uint8 per record: 0 decoded here, FALLBACK for the Python decoder
    points_per_record: np.ndarray  # uint32 per record
    point_record: np.ndarray  # int64 per point: index of its record in the batch
    point_scope: np.ndarray  # int64 per point: row in the scope arrays
    point_metric: np.ndarray  # int64 per point: row in the metric arrays
    points: dict[str, Any]  # start_time/time (int64 ns ndarrays, 0 = unset); value, value_int, flags,
    # attributes (Arrow arrays)
    scopes: dict[str, pa.Array]  # resource_attributes, scope_name, scope_version, scope_attributes
    metrics: dict[str, pa.Array]  # metric_name, metric_unit, metric_type, temporality (the two as
    # dictionary arrays over their names), is_monotonic


def _numbers(buffers: Mapping[str, Any], name: str, dtype: type[np.generic]) -> np.ndarray:
    return np.frombuffer(buffers[name], dtype=dtype)


def validity_bitmap(valid: np.ndarray) -> pa.Buffer | None:
    if valid.all():
        return None
    return pa.py_buffer(np.packbits(valid.view(np.bool_), bitorder="little"))


def variable_width(buffers: Mapping[str, Any], name: str, arrow_type: pa.DataType) -> pa.Array:
    """A string or binary column from the extension's ``<name>.valid|offsets|data`` buffers (no copy)."""
    valid = _numbers(buffers, f"{name}.valid", np.uint8)
    return pa.Array.from_buffers(
        arrow_type,
        len(valid),
        [
            validity_bitmap(valid),
            pa.py_buffer(buffers[f"{name}.offsets"]),
            pa.py_buffer(buffers[f"{name}.data"]),
        ],
    )


def _strings(buffers: Mapping[str, Any], name: str) -> pa.Array:
    return variable_width(buffers, name, pa.string())


def _string_map(buffers: dict[str, bytes], name: str) -> pa.Array:
    offsets = _numbers(buffers, f"{name}.offsets", np.int32)
    return pa.MapArray.from_arrays(
        pa.array(offsets),
        _strings(buffers, f"{name}.keys"),
        _strings(buffers, f"{name}.values"),
        type=STRING_MAP,
    )


def decode_values(values: list[bytes | None]) -> NativeColumns:
    """Decode record values natively; records the fast path does not take are marked ``FALLBACK``."""
    if kip714_native is None:  # pragma: no cover - see the import
        raise RuntimeError("the kip714_native extension is not installed")
    return native_columns(kip714_native.decode_metrics(values))


def decode_array(values: pa.BinaryArray, skip: list[int]) -> NativeColumns:
    """``decode_values`` for an Arrow binary array, read in place; records in ``skip`` are not decoded."""
    if kip714_native is None:  # pragma: no cover - see the import
        raise RuntimeError("the kip714_native extension is not installed")
    validity, offsets, data = (None if b is None else memoryview(b).cast("B") for b in values.buffers())
    return native_columns(
        kip714_native.decode_binary(offsets, data, validity, values.offset, len(values), skip)
    )


def native_columns(buffers: dict[str, bytes]) -> NativeColumns:
    """The extension's decoded buffers (``decode_metrics``' dict) as numpy and Arrow columns, no copy."""
    value_int_valid = _numbers(buffers, "value_int.valid", np.uint8)
    monotonic = _numbers(buffers, "is_monotonic", np.uint8)
    temporality = _numbers(buffers, "temporality", np.uint8).astype(np.int32)
    points = {
        "start_time": _numbers(buffers, "start_time", np.int64),
        "time": _numbers(buffers, "time", np.int64),
        "value": pa.array(_numbers(buffers, "value", np.float64)),
        "value_int": pa.Array.from_buffers(
            pa.int64(),
            len(value_int_valid),
            [validity_bitmap(value_int_valid), pa.py_buffer(buffers["value_int"])],
        ),
        "flags": pa.array(_numbers(buffers, "flags", np.int32)),
        "attributes": _string_map(buffers, "attributes"),
    }
    scopes = {
        "resource_attributes": _string_map(buffers, "resource_attributes"),
        "scope_name": _strings(buffers, "scope_name"),
        "scope_version": _strings(buffers, "scope_version"),
        "scope_attributes": _string_map(buffers, "scope_attributes"),
    }
    metrics = {
        "metric_name": _strings(buffers, "metric_name"),
        "metric_unit": _strings(buffers, "metric_unit"),
        "metric_type": pa.DictionaryArray.from_arrays(
            pa.array(_numbers(buffers, "metric_kind", np.uint8).astype(np.int32)), _METRIC_TYPES
        ),
        "temporality": pa.DictionaryArray.from_arrays(
            pa.array(temporality - 1, mask=temporality == 0), _TEMPORALITIES
        ),
        "is_monotonic": pa.array(monotonic == 1, mask=monotonic == 2),
    }
    return NativeColumns(
        status=_numbers(buffers, "status", np.uint8),
        points_per_record=_numbers(buffers, "points_per_record", np.uint32),
        point_record=_numbers(buffers, "point_record", np.uint32).astype(np.int64),
        point_scope=_numbers(buffers, "point_scope", np.uint32).astype(np.int64),
        point_metric=_numbers(buffers, "point_metric", np.uint32).astype(np.int64),
        points=points,
        scopes=scopes,
        metrics=metrics,
    )


__all__ = [
    "FALLBACK",
    "NativeColumns",
    "decode_array",
    "decode_values",
    "native_available",
    "native_columns",
    "variable_width",
]
