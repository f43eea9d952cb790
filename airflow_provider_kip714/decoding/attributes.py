"""OTLP attribute values as text: the one ``map<string, string>`` form every attribute column uses."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable
from typing import Any, Final

from google.protobuf.message import DecodeError
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

# Raw KeyValue bytes -> (key, rendered value): one client's points repeat the same few attributes.
RENDERED_ATTRIBUTES: dict[bytes, tuple[str, str | None]] = {}
_RENDERED_ATTRIBUTES_MAX: Final = 100_000


class NestedDecodeError(Exception):
    """A data point attribute's bytes (parsed lazily) are not valid protobuf."""


def _any_to_python(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_to_python(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_to_python(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, kind)


def render_any_value(value: AnyValue, kind: str | None = None) -> str | None:
    """Text of an attribute value: strings as-is, everything else as JSON text (bytes as base64)."""
    if kind is None:
        kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return str(value.int_value)
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    if kind == "double_value":
        number = value.double_value
        return json.dumps(number) if math.isfinite(number) else str(number)
    if kind is None:
        return None
    return json.dumps(_any_to_python(value), separators=(",", ":"), allow_nan=True)


def render_attributes(attributes: Iterable[Any]) -> list[tuple[str, str | None]]:
    """(key, text) pairs of KeyValue messages."""
    return [(kv.key, render_any_value(kv.value)) for kv in attributes]


def render_attribute(kv: Any) -> tuple[str, str | None]:
    """(key, rendered value) of a KeyValue message or of its raw bytes (then cached)."""
    if kv.__class__ is not bytes:
        return kv.key, render_any_value(kv.value)
    try:
        message = KeyValue.FromString(kv)
    except DecodeError:
        raise NestedDecodeError from None
    pair = (message.key, render_any_value(message.value))
    if len(RENDERED_ATTRIBUTES) >= _RENDERED_ATTRIBUTES_MAX:
        RENDERED_ATTRIBUTES.clear()
    RENDERED_ATTRIBUTES[kv] = pair
    return pair


__all__ = [
    "RENDERED_ATTRIBUTES",
    "NestedDecodeError",
    "render_any_value",
    "render_attribute",
    "render_attributes",
]
