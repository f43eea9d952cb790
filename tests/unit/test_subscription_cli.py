"""The ``kip714 subscriptions`` CLI refuses bad input with one line and no traceback (no server needed)."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.cli import run_subscriptions_cli


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["add", "--name", "x", "--interval", "50"], "interval.ms: must be between 100 and 3600000"),
        (["add", "--name", "x", "--match", "client_idd=x"], "match: unknown selector"),
        (["add", "--window", "soon", "--block"], "--window: must be a duration"),
        (
            ["add", "--name", "x", "--metrics", "a.", "--block"],
            "block: a blocking subscription has no metrics",
        ),
    ],
)
def test_cli_bad_spec_fails_with_one_line_before_connecting(args: list[str], expected: str) -> None:
    result = run_subscriptions_cli(*args, "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode != 0
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_unreachable_cluster_fails_with_one_line(tmp_path: Path) -> None:
    properties = tmp_path / "fast.properties"
    properties.write_text("socket.connection.setup.timeout.ms=1000\n")
    result = run_subscriptions_cli(
        "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(properties)
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kip714: error: cannot reach Kafka at 127.0.0.1:1 (PLAINTEXT) within 1000 ms")


def test_cli_refuses_security_settings_kafka_python_cannot_honour(tmp_path: Path) -> None:
    properties = tmp_path / "java.properties"
    properties.write_text("security.protocol=SSL\nssl.truststore.location=/etc/truststore.jks\n")
    result = run_subscriptions_cli(
        "list", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(properties)
    )
    assert result.returncode == 2
    assert "connection extra 'ssl.truststore.location': is not supported" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# ---- every flag of `kip714 subscriptions ...` against many bad values ------------------------------
# Each case: (the command line up to the flag, the flag, what the one-line error must name). The values
# include those that gave tracebacks before (--window 99999999999999, ², 9999999d) and their kind.

SERVER = ["--bootstrap-server", "127.0.0.1:1"]
NAMES = ["", "has space", "x" * 256, "zero\u200bwidth", "bell\x07"]
SOME_NAMES = ["", "x" * 256, "tab\there"]
WINDOWS = [
    *("99999999999999", "²", "9999999d", "3650d", "24h1s", "0", "-5m", "nan", "inf"),
    *("1e9", "", "5x", "٣m", "1h 30m", "1" * 40, "½h"),
]
INTERVALS = ["99", "3600001", "-1", "²", "1e3", "10s", "", "9" * 30, "٣٣٣"]
SOME_INTERVALS = ["-1", "²", "9" * 30]
METRICS = ["a.,,b.", "*,a.", "a.,a.", "a b", ","]
MATCHES = [
    *("client_idd=x", "client_id", "client_id=", "client_id=(", "client_id=a)", "client_id=\\"),
    *("client_id=a,client_id=b", "=x", "principal=x", "CLIENT_ID=x"),
]
SERVERS = ["", "x", "x:0", "x:99999", "x:port", "::", "a b:1", "[::1]", "x:²", "x:" + "9" * 20]
CONN_IDS = ["bad id!", "x" * 300, "é"]

CASES: list[tuple[list[str], str, list[str], str]] = [
    (["add", "--block", *SERVER], "--window", WINDOWS, "--window"),
    (["add", "--block", *SERVER], "--name", NAMES, "name"),
    (["add", "--block", *SERVER], "--name", ["kip714-x-exp99991231T235959Z-12345678"], "maximum window"),
    (["add", "--name", "n", *SERVER], "--interval", INTERVALS, "interval.ms"),
    (["add", "--name", "n", *SERVER], "--metrics", METRICS, "metrics"),
    (["add", "--name", "n", "--block", *SERVER], "--match", MATCHES, "match"),
    (["add", "--name", "n", "--block", *SERVER], "--label", ["team", "x" * 500], "--label"),
    (["add", "--name", "n", "--block"], "--bootstrap-server", SERVERS, "bootstrap.servers"),
    (["list"], "--bootstrap-server", SERVERS[:5], "bootstrap.servers"),
    (["list", *SERVER], "--conn-id", ["kafka_default"], "--conn-id"),
    (["list"], "--conn-id", CONN_IDS, "--conn-id"),
    (["describe", *SERVER], "--name", SOME_NAMES, "--name"),
    (["delete", *SERVER], "--name", SOME_NAMES, "--name"),
    (["alter", *SERVER], "--name", SOME_NAMES, "--name"),
    (["alter", "--name", "n", *SERVER], "--interval", SOME_INTERVALS, "interval.ms"),
    (["alter", "--name", "n", *SERVER], "--add-metrics", METRICS[:3], "metrics"),
    (["alter", "--name", "n", *SERVER], "--remove-metrics", [METRICS[0], METRICS[4]], "metrics"),
    (["alter", "--name", "n", *SERVER], "--metrics", METRICS[:3], "metrics"),
    (["alter", "--name", "n", *SERVER], "--match", MATCHES[:4], "match"),
    (["reap", *SERVER], "--dry-run", ["--json=x"], "error"),
]


def _write_config(folder: Path, name: str, content: bytes) -> str:
    path = folder / name
    path.write_bytes(content)
    return str(path)


def config_files(folder: Path) -> list[str]:
    return [
        str(folder / "missing.properties"),
        str(folder),  # a directory
        _write_config(folder, "binary.properties", b"\xff\xfe\x00\x01request.timeout.ms=\xff"),
        _write_config(folder, "superscript.properties", "request.timeout.ms=²\n".encode()),
        _write_config(folder, "huge.properties", b"request.timeout.ms=99999999999999\n"),
        _write_config(folder, "negative.properties", b"socket.connection.setup.timeout.ms=-1\n"),
        _write_config(folder, "protocol.properties", b"security.protocol=TLS\n"),
        _write_config(folder, "jaas.properties", b"sasl.jaas.config=nothing useful\n"),
    ]


def run_all(commands: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """Real ``kip714`` processes, a few at a time (each starts in about 0.3 s of CPU)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda argv: run_subscriptions_cli(*argv), commands))


def assert_one_line_refusal(argv: list[str], result: subprocess.CompletedProcess[str], names: str) -> None:
    lines = result.stderr.strip().splitlines()
    shown = f"{argv!r}: rc={result.returncode} stderr={result.stderr[-2000:]!r}"
    assert result.returncode == 2, shown
    assert "Traceback" not in result.stderr and len(lines) == 1, shown
    assert lines[0].startswith("kip714: error: ") and names in lines[0], shown
    assert result.stdout == "", shown


@pytest.mark.parametrize(
    ("prefix", "flag", "values", "names"),
    CASES,
    ids=[f"{prefix[0]}{flag}-{names}" for prefix, flag, _, names in CASES],
)
def test_every_flag_refuses_bad_values_with_one_line(
    prefix: list[str], flag: str, values: list[str], names: str
) -> None:
    commands = [[*prefix, flag] if flag == "--dry-run" else [*prefix, flag, value] for value in values]
    if flag == "--dry-run":
        commands = [[*prefix, value] for value in values]
    for argv, result in zip(commands, run_all(commands), strict=True):
        assert_one_line_refusal(argv, result, names)


def test_bad_command_config_files_are_refused_with_one_line(tmp_path: Path) -> None:
    commands = [["list", *SERVER, "--command-config", path] for path in config_files(tmp_path)]
    for argv, result in zip(commands, run_all(commands), strict=True):
        assert_one_line_refusal(argv, result, "")


@pytest.mark.parametrize(
    "argv",
    [
        ["add", "--name", "n", "--window", "5m", *SERVER],  # mutually exclusive
        ["add", *SERVER],  # no name at all
        ["delete", *SERVER],  # --name is required
        ["list", "--nope"],
        ["frobnicate"],
        ["add", "--name", "n", "--interval"],  # flag without its value
        ["alter", "--name", "n", "--metrics", "a.", "--add-metrics", "b.", *SERVER],
        ["alter", "--name", "n", "--block", "--add-metrics", "b.", *SERVER],
        ["list", "--conn-id", "k", *SERVER],
    ],
    ids=lambda argv: " ".join(argv)[:40],
)
def test_bad_combinations_are_refused_with_one_line(argv: list[str]) -> None:
    assert_one_line_refusal(argv, run_subscriptions_cli(*argv), "")
