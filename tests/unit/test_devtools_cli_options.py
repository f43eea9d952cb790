"""Hostile values for every devtools flag fail at parse time: one line naming the flag, exit 2.

Nothing starts here: a bad value must be refused before any JVM, port or directory is touched.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kip714.cli.main import main


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


BAD_SECONDS = ["nan", "NaN", "inf", "-inf", "-5", "0", "1e300", "abc", ""]


@pytest.mark.parametrize("value", BAD_SECONDS)
@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["local-kafka", "stop"], "--timeout"),
        (["local-kafka", "start"], "--ready-timeout"),
    ],
)
def test_seconds_flags_refuse_non_finite_negative_and_zero(
    command: list[str], flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _refused([*command, "--data-dir", str(tmp_path), f"{flag}={value}"], capsys)
    assert f"argument {flag}:" in line and "finite number of seconds" in line


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["demo", "--warmup", "-1"], "--warmup"),
        (["demo", "--warmup", "nan"], "--warmup"),
        (["demo", "--window", "0"], "--window"),
        (["demo", "--window", "99999999999999"], "--window"),
        (["demo", "--window", "١٢٠"], "--window"),  # Arabic-Indic 120: int() would read it
        (["demo", "--spark", "<b>connect</b>"], "--spark"),
        (["local-spark", "start", "--workers", "99999999999999"], "--workers"),
        (["local-spark", "start", "--workers", "0"], "--workers"),
        (["local-s3", "start", "--port", "0"], "--port"),
        (["local-s3", "start", "--port", "-1"], "--port"),
        (["local-s3", "start", "--port", "99999999999999"], "--port"),
        (["local-kafka", "start", "--port", "0"], "--port"),
        (["local-kafka", "start", "--controller-port", "70000"], "--controller-port"),
        (["local-kafka", "start", "--sasl-port", "-3"], "--sasl-port"),
    ],
)
def test_counts_and_ports_are_bounded(argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert f"argument {flag}:" in _refused(argv, capsys)


@pytest.mark.parametrize("name", ["<script>", "ab", "A-Bucket", "a" * 64, "-kip", "kip..x", "10.0.0.1", ""])
def test_local_s3_refuses_invalid_bucket_names(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(["local-s3", "start", f"--bucket={name}"], capsys)
    assert "argument --bucket:" in line and "S3 bucket name" in line


@pytest.mark.parametrize(
    "command",
    [
        ["local-kafka", "start"],
        ["local-kafka", "status"],
        ["local-kafka", "stop"],
        ["local-s3", "start"],
        ["local-s3", "stop"],
        ["local-spark", "start"],
        ["local-spark", "status"],
        ["demo", "--work-dir"],
    ],
)
@pytest.mark.parametrize("kind", ["empty", "file", "under-file"])
def test_data_dirs_must_be_directories(
    command: list[str], kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    regular = tmp_path / "regular"
    regular.write_text("not a directory")
    value = {"empty": "", "file": str(regular), "under-file": str(regular / "sub")}[kind]
    argv = [*command, value] if command[0] == "demo" else [*command, "--data-dir", value]
    line = _refused(argv, capsys)
    flag = "--work-dir" if command[0] == "demo" else "--data-dir"
    assert f"argument {flag}:" in line
    assert not (Path.cwd() / "server.properties").exists()
