"""The three native switches: one owner, each refused in one line before a landing run connects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_kip714 import native_switches
from airflow_provider_kip714.decoding.decoder import TopicRecord, decode_batch
from airflow_provider_kip714.native_switches import ALLOWED, NativeSwitchError
from airflow_provider_kip714.telemetry.landing import land_topic


@pytest.mark.parametrize("variable", sorted(ALLOWED))
def test_a_misspelt_switch_is_refused_before_landing_connects(
    variable: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    native, python = ALLOWED[variable]
    monkeypatch.setenv(variable, f"{python}x")
    with pytest.raises(NativeSwitchError) as refused:
        # an unreachable broker: only a check before connecting can answer within the test
        land_topic({"bootstrap.servers": "127.0.0.1:1"}, "telemetry", tmp_path / "zone", timeout_s=1)
    assert str(refused.value) == f"{variable}: must be '{native}' or '{python}' (got '{python}x')"
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "zone").exists()


@pytest.mark.parametrize("variable", sorted(ALLOWED))
def test_unset_empty_and_any_case_are_accepted(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    native, python = ALLOWED[variable]
    monkeypatch.delenv(variable, raising=False)
    assert native_switches.is_native(variable)  # type: ignore[arg-type]
    monkeypatch.setenv(variable, "")
    assert native_switches.choice(variable) == native  # type: ignore[arg-type]
    monkeypatch.setenv(variable, python.upper())
    assert native_switches.choice(variable) == python  # type: ignore[arg-type]
    native_switches.check()


def test_a_misspelt_decoder_switch_is_not_silently_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """``KIP714_OTLP_DECODER=pyton`` used to keep the native decoder without a word."""
    monkeypatch.setenv(native_switches.DECODER_ENV, "pyton")
    with pytest.raises(NativeSwitchError, match=r"^KIP714_OTLP_DECODER: must be 'native' or 'python'"):
        decode_batch([TopicRecord("t", 0, 0, 0, None, None, b"")])


def test_the_consume_loop_imports_neither_pyarrow_nor_the_stager_nor_the_zone() -> None:
    """The chain reads reader -> chunk -> stager -> zone: the reader knows only the chunk."""
    probe = (
        "import sys, airflow_provider_kip714.telemetry.landing_fetch;"
        "print(sorted(m for m in sys.modules if m in {'pyarrow', 'numpy'} or m.startswith("
        "('airflow_provider_kip714.telemetry.landing_', 'airflow_provider_kip714.decoding.'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, timeout=120
    ).stdout
    assert loaded.strip() == str(
        [
            "airflow_provider_kip714.decoding.header_sets",
            "airflow_provider_kip714.telemetry.landing_chunk",
            "airflow_provider_kip714.telemetry.landing_fetch",
        ]
    )
