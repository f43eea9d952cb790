"""A landing zone or data root that cannot hold the provider's files is refused in one line, before
anything is written: never the filesystem root, the current directory, a file, or anonymous public S3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_kip714.storage.data_root import (
    DATA_DIR_ENV,
    StorageLocationError,
    checked_location,
    data_root,
)
from airflow_provider_kip714.telemetry.landing_zone import LandingZone

KIP714 = str(Path(sys.executable).with_name("kip714"))


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("", "must be a directory or an object-store URL"),
        ("   ", "must be a directory or an object-store URL"),
        ("/", "must not be the filesystem root"),
        ("file:///", "must not be the filesystem root"),
        ("/../..", "must not be the filesystem root"),
        ("s3://", "needs a bucket"),
        ("s3:///prefix", "needs a bucket"),
        ("s3://conn@/prefix", "needs a bucket"),
        ("s3://no_such_connection@bucket/prefix", "no Airflow connection 'no_such_connection'"),
    ],
)
def test_places_that_cannot_hold_a_zone_are_refused_naming_the_field(value: str, rule: str) -> None:
    with pytest.raises(StorageLocationError, match=rule) as caught:
        checked_location(value, "--out")
    assert str(caught.value).startswith("--out: ") and "\n" not in str(caught.value)
    with pytest.raises(StorageLocationError, match=rule):
        LandingZone(value, "_client_telemetry")


def test_an_existing_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "zone"
    file.write_text("not a folder")
    with pytest.raises(StorageLocationError, match="is a file, not a directory"):
        checked_location(str(file), "out_dir")


def test_good_places_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert checked_location(str(tmp_path / "new" / "zone"), "out_dir") == tmp_path / "new" / "zone"
    connection = {
        "conn_type": "aws",
        "login": "k",
        "password": "s",
        "extra": {"endpoint_url": "http://127.0.0.1:1"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_KIP714_TEST_S3", json.dumps(connection))
    location = checked_location("s3://kip714_test_s3@bucket/prefix", "out_dir")
    assert str(location).endswith("bucket/prefix")


def test_the_data_root_setting_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, "file:///")
    with pytest.raises(StorageLocationError, match=f"{DATA_DIR_ENV}: must not be the filesystem root"):
        data_root()


@pytest.mark.parametrize("out", ["", "file:///", "s3://nope@bucket/x", "s3://"])
def test_the_cli_refuses_with_one_line_and_writes_nothing(out: str, tmp_path: Path) -> None:
    completed = subprocess.run(
        [KIP714, "telemetry", "land", "--bootstrap-server", "127.0.0.1:1", "--out", out, "--timeout-s", "5"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "AIRFLOW_HOME": str(tmp_path)},
    )  # fmt: skip
    assert completed.returncode == 2, completed.stderr
    lines = [line for line in completed.stderr.splitlines() if line.startswith("kip714: error: ")]
    assert len(lines) == 1 and lines[0].startswith("kip714: error: --out: "), completed.stderr
    assert "Traceback" not in completed.stderr
    written = {p.name for p in tmp_path.iterdir()} - {"airflow.cfg", "airflow.db", "logs"}
    assert not written, f"nothing of a landing zone may be written, found {sorted(written)}"


def test_only_a_location_to_write_must_be_writable() -> None:
    """``/proc/1`` refuses new entries even to root: a landing ``--out`` under it is named before any
    connection, while a reader (the UI, the report) of a read-only data root is not refused."""
    from airflow_provider_kip714.storage.data_root import StorageLocationError, checked_location

    assert str(checked_location("/proc/1/kip714-zone", "data root")) == "/proc/1/kip714-zone"
    refused = r"^--out: cannot create /proc/1/kip714-zone: /proc/1 is not writable"
    with pytest.raises(StorageLocationError, match=refused):
        checked_location("/proc/1/kip714-zone", "--out", writing=True)
