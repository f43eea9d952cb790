"""Client-controlled text printed for a person (``telemetry tail``, the Spark apps' log lines, charts)
shows control characters as escapes: a client id carrying ``ESC[2J`` must not clear the terminal."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airflow_provider_kip714.cli.telemetry import render_latest
from airflow_provider_kip714.contract.client_text import printable

HOSTILE = '<script>alert("x")</script>\x1b[2J\x00\n$\\frac{'


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("orders-1", "orders-1"),
        ("a\x1b[31mred", "a\\x1b[31mred"),
        ("two\nlines\r", "two\\nlines\\r"),
        ("nul\x00", "nul\\x00"),
        ("zürich 日本", "zürich 日本"),
        (None, "None"),
    ],
)
def test_printable_escapes_what_a_terminal_would_act_on(text: object, shown: str) -> None:
    assert printable(text) == shown


def test_printable_cuts_long_values() -> None:
    assert printable("x" * 50, 10) == "x" * 9 + "…"


def test_tail_shows_hostile_client_strings_as_data() -> None:
    row = {
        "client_id": HOSTILE,
        "client_software_name": "sw\x1b]0;title\x07",
        "client_software_version": "1\x1b[K",
        "client_instance_id": "inst\x1b[1A",
        "metric_name": "m\x1b[2K",
        "metric_type": "gauge\x1b[0m",
        "temporality": None,
        "value": 1.0,
        "count": None,
        "attributes": [("k\x1b", "v\n")],
    }
    screen = render_latest({(HOSTILE, "m\x1b[2K{k\x1b=v\n}"): row}, datetime(2026, 11, 24, tzinfo=UTC))
    assert "\x1b" not in screen and "\x00" not in screen and "\x07" not in screen
    assert '<script>alert("x")</script>\\x1b[2J\\x00\\n$\\frac{' in screen
    assert screen.count("\n") == 3  # title, blank + client line, one series: no line forged by a value


def test_the_spark_apps_print_client_text_the_same_way() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark_apps"))  # as spark-submit has it
    from kip714_common.outputs import printable as spark_printable  # the Spark apps ship apart

    for text in (HOSTILE, "a\x1b[31mred", "zürich 日本", "", "\u2028\u200b"):
        assert spark_printable(text) == printable(text)


def test_guardrail_warnings_quote_a_library_s_own_words_as_data() -> None:
    from airflow_provider_kip714.troubleshooting.guardrails import Capability, check_window

    pushed = [Capability("evil\x1b[2J", "1.0\n2", "org.apache.kafka.x\x1b[31m")]
    (warning,) = check_window(pushed, ["org.apache.kafka.producer."], {})
    assert warning.kind == "no_matching_metric"
    assert "\x1b" not in warning.message and "\n" not in warning.message
    assert "evil\\x1b[2J 1.0\\n2 pushes none of" in warning.message
