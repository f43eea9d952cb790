"""The three environment switches that turn a native part off, in one place.

The native extension (``native/``, the ``[native]`` extra) has three parts, each with a Python twin:

- ``KIP714_OTLP_DECODER``: ``native`` (the OTLP fast path, ``decoding/native.py``) or ``python`` (the
  reference decoder only; this also turns the native writer off, which decodes as it writes);
- ``KIP714_DATAPOINTS_WRITER``: ``native`` (``decoding/native_writer.py``) or ``pyarrow``;
- ``KIP714_LANDING_READER``: ``native`` (``kip714_native.TopicReader``) or ``python`` (confluent-kafka's
  consumer, ``telemetry/landing_fetch.py``).

Unset or empty means ``native``; case does not matter. Anything else is refused in one line naming the
variable and its allowed values: a misspelt attempt to rule a native part out must not silently keep
it. ``check()`` runs before a landing run or a topic read connects; the modules that branch on a switch
read it through ``choice`` (cheap, and tests change the environment between calls).
"""

from __future__ import annotations

import os
from typing import Final, Literal

from airflow_provider_kip714.exceptions import Kip714Error

DECODER_ENV: Final = "KIP714_OTLP_DECODER"
WRITER_ENV: Final = "KIP714_DATAPOINTS_WRITER"
READER_ENV: Final = "KIP714_LANDING_READER"

Switch = Literal["KIP714_OTLP_DECODER", "KIP714_DATAPOINTS_WRITER", "KIP714_LANDING_READER"]

ALLOWED: Final[dict[str, tuple[str, str]]] = {
    DECODER_ENV: ("native", "python"),
    WRITER_ENV: ("native", "pyarrow"),
    READER_ENV: ("native", "python"),
}
"""Each switch's values: the native part first (the default), then its Python twin."""


class NativeSwitchError(Kip714Error, ValueError):
    """A switch holds a value other than its two allowed ones."""


def choice(variable: Switch) -> str:
    """The switch's value, lower case (unset or empty: ``native``); refused when it is neither value."""
    allowed = ALLOWED[variable]
    value = (os.environ.get(variable) or allowed[0]).lower()
    if value not in allowed:
        raise NativeSwitchError(f"{variable}: must be '{allowed[0]}' or '{allowed[1]}' (got {value!r})")
    return value


def is_native(variable: Switch) -> bool:
    """Whether the switch leaves its native part on (the extension may still be missing)."""
    return choice(variable) == "native"


def check() -> None:
    """Every switch, before anything connects: the first bad one is refused in one line."""
    for variable in (DECODER_ENV, WRITER_ENV, READER_ENV):
        choice(variable)


__all__ = [
    "ALLOWED",
    "DECODER_ENV",
    "READER_ENV",
    "WRITER_ENV",
    "NativeSwitchError",
    "Switch",
    "check",
    "choice",
    "is_native",
]
