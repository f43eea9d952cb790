"""``kip714 telemetry``: bad input and unusable clusters give one line and exit 2, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


NOWHERE = f"127.0.0.1:{_free_port()}"
LAND = ["telemetry", "land", "--bootstrap-server", NOWHERE, "--metadata-timeout-s", "2"]
TAIL = ["telemetry", "tail", "--bootstrap-server", NOWHERE]
CASES = [
    ([*TAIL, "--client-id", "("], "--client-id: not a valid regex"),
    ([*TAIL, "--client-id", "(a)\\1"], "--client-id: not a valid regex"),
    ([*TAIL, "--refresh-s", "nan"], "--refresh-s: must be a finite number"),
    ([*TAIL, "--duration-s", "-5"], "--duration-s: must be more than zero"),
    ([*TAIL, "--duration-s", "inf"], "--duration-s: must be a finite number"),
    ([*TAIL, "--duration-s", "3"], "bootstrap.servers: no broker of"),
    (LAND, "bootstrap.servers: no broker of"),
    ([*LAND, "--timeout-s", "nan"], "--timeout-s: must be a finite number"),
    ([*LAND, "--timeout-s", "-1"], "--timeout-s: must be more than zero"),
    ([*LAND, "--chunk-interval-s", "inf"], "--chunk-interval-s: must be a finite number"),
    ([*LAND[:-1], "0"], "--metadata-timeout-s: must be more than zero"),
    ([*LAND, "--max-records", "0"], "--max-records: must be a positive integer"),
    ([*LAND, "--max-records", str(2**64)], "--max-records: must be at most 9,223,372,036,854,775,807"),
    ([*LAND, "--chunk-records", "99999999999"], "--chunk-records: must be at most 10,000,000"),
    ([*LAND, "--workers", "1000"], "--workers: must be at most 64"),
    ([*LAND, "--workers", "\u0663"], "telemetry land: argument --workers: must be an integer written"),
    ([*LAND, "--max-records", "1_000"], "telemetry land: argument --max-records: must be an integer written"),
    ([*LAND[:-1], "1e12"], "--metadata-timeout-s: must be at most 3600 seconds"),
    ([*TAIL, "--client-id", "a\udcff"], "--client-id: must be UTF-8 text (got 'a\\udcff')"),
    ([*LAND, "--follow"], "follow: needs max_records or timeout_s"),
    ([*LAND, "--topic", ""], "telemetry land: argument --topic: must be a Kafka topic name"),
    ([*LAND, "--topic", ".."], "telemetry land: argument --topic: must be a Kafka topic name"),
    ([*LAND, "--until", "0001-01-01T00:00:00Z"], "telemetry land: argument --until: must be at or after"),
    (
        [*LAND, "--since", "2026-11-25T00:00:00Z", "--until", "2026-11-24T00:00:00Z"],
        "--since: must be before --until",
    ),
]


def run_cli(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_kip714.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    return done, time.monotonic() - started


def assert_one_line_error(done: subprocess.CompletedProcess[str], expected: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"kip714: error: {expected}"), lines[0]


@pytest.mark.parametrize(("args", "expected"), CASES, ids=[" ".join(a[1:2] + a[4:]) for a, _ in CASES])
def test_bad_input_and_unreachable_broker_print_one_line(
    args: list[str], expected: str, tmp_path: Path
) -> None:
    if args[1] == "land":
        args = [*args, "--out", str(tmp_path / "zone")]
    done, elapsed = run_cli(args, tmp_path)
    assert_one_line_error(done, expected)
    assert elapsed < 90  # bounded (Airflow alone takes 5-15 s to import on a loaded machine)


def test_unknown_topic_and_recreated_topic_print_one_line(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    args = ["telemetry", "land", "--bootstrap-server", bootstrap, "--out", str(tmp_path / "zone")]
    done, elapsed = run_cli([*args, "--topic", f"missing-{time.time_ns()}"], tmp_path)
    assert_one_line_error(done, "topic: 'missing-")
    assert elapsed < 90  # bounded (Airflow alone takes 5-15 s to import on a loaded machine)


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        ("gs://bucket/zone", "--out: no filesystem for gs:// here"),
        ("{file}/zone", "--out: cannot create {file}/zone: {file} is a file"),
        ("{file}", "--out: {file} is a file, not a directory"),
    ],
)
def test_an_out_that_cannot_hold_a_zone_is_refused_before_connecting(
    out: str, expected: str, tmp_path: Path
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    out, expected = out.format(file=a_file), expected.format(file=a_file)
    done, _ = run_cli([*LAND, "--out", out], tmp_path)
    assert_one_line_error(done, expected)  # not "no broker of ...": refused before any connection


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        (b"security.protocol=BOGUS\n", 'connection extra: Invalid value "BOGUS" for configuration property'),
        (b"security.protocol=SSL\nssl.ca.location=/nonexistent\n", "connection extra: "),
        (b"\xff\xfe\x00garbage\n", "--command-config: must be a UTF-8 Java .properties file"),
    ],
    ids=["unknown protocol", "missing CA file", "not UTF-8"],
)
def test_client_settings_librdkafka_refuses_are_named_and_leave_no_zone(
    properties: bytes, expected: str, tmp_path: Path
) -> None:
    settings = tmp_path / "client.properties"
    settings.write_bytes(properties)
    zone = tmp_path / "zone"
    for command in (LAND, TAIL):
        args = [*command, "--command-config", str(settings)]
        args += ["--out", str(zone)] if command is LAND else ["--duration-s", "3"]
        done, _ = run_cli(args, tmp_path)
        assert_one_line_error(done, expected)
    assert not zone.exists()  # settings are checked at first contact, before the zone is touched
