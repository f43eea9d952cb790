"""``kip714``: an argument that is not UTF-8 (bytes Python keeps as lone surrogates) is named in one line
before any command runs; every error line is bounded."""

from __future__ import annotations

import pytest

from airflow_provider_kip714.cli.main import MAX_ERROR_LINE, main, non_utf8_argument

ADD = ["subscriptions", "add", "--bootstrap-server", "127.0.0.1:9"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ([*ADD, "--metrics", "org.\udcffx"], "--metrics: must be UTF-8 text (got 'org.\\udcffx')"),
        ([*ADD, "--match=client_id=a\udcff"], "--match: must be UTF-8 text (got 'client_id=a\\udcff')"),
        ([*ADD, "--name", "bad\udcff"], "--name: must be UTF-8 text (got 'bad\\udcff')"),
        (["subscriptions\udcff"], "argument 1: must be UTF-8 text (got 'subscriptions\\udcff')"),
    ],
)
def test_the_argument_that_is_not_utf8_is_named_before_the_command_runs(
    arguments: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert non_utf8_argument(arguments) == expected
    assert main(arguments) == 2
    assert capsys.readouterr().err == f"kip714: error: {expected}\n"


def test_utf8_arguments_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert non_utf8_argument([*ADD, "--name", "zürich-ñ-日本", "--match", "client_id=.*"]) is None


def test_a_refused_value_is_quoted_in_part(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ADD, "--name", "x" * 5000]) == 2
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and len(line) < 400
    assert line.startswith("kip714: error: name: must be at most 255 characters")
    assert "… (5002 characters)" in line  # the value is quoted in part, its length named


def test_an_error_line_is_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:  # argparse's own refusal, quoting a 1 MB topic name
        main(["telemetry", "land", "--bootstrap-server", "127.0.0.1:9", "--out", "z", "--topic", "t" * 10**6])
    assert exited.value.code == 2
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and len(line) <= len("kip714: error: ") + MAX_ERROR_LINE + 30
    assert line.startswith("kip714: error: telemetry land: argument --topic: must be a Kafka topic name")
    assert line.rstrip().endswith("characters)")
