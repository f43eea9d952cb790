"""Client-controlled strings reach the plots as labels: drawn literally, never parsed as math text or TeX.

``client.id='$\\foo$'`` used to fail the report task (matplotlib's mathtext parser raised) and make the
UI chart answer 500. Every plot function is tried with many hostile strings.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_kip714.analytics import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOSTILE = [
    "$\\foo$",
    "$\\frac{a}{$",
    "$x^{$",
    "$a_b_c$",
    "$$",
    "$",
    "\\$",
    "$\\\\$",
    "$^$",
    "$\\mathdefault{",
    "$\\undefined{x}$ and $y",
    "# % & ~ _ ^ \\ { }",
    "\\textbf{x}",
    "line\nbreak\r\n",
    "nul\x00byte",
    "\u202eright-to-left",
    "emoji \U0001f4a5",
    "<script>alert(1)</script>",
    "%s %d {} {0}",
    "x" * 5000,
]
START = datetime(2026, 11, 22, 8, 0, tzinfo=UTC)


def _series(label: str) -> pd.DataFrame:
    times = [START + timedelta(minutes=i) for i in range(4)]
    return pd.DataFrame({"bucket_start": times, "attributes_key": [label] * 4, "value": [1.0, 3.0, 2.0, 5.0]})


def _breaches() -> pd.DataFrame:
    return pd.DataFrame({"breach_start": [START], "breach_end": [START + timedelta(minutes=2)]})


def _broker_frame(node: str) -> pd.DataFrame:
    times = [START + timedelta(minutes=i) for i in range(3)]
    return pd.DataFrame(
        {
            "bucket_start": times,
            "broker_node_id": [node] * 3,
            "instance_count": [3, 4, 5],
            "throttle_ratio": [0.0, 0.1, None],
            "plugin_error_ratio": [0.0, None, 0.2],
            "pushes_exported": [10.0, 12.0, 11.0],
            "throttled_pushes": [0.0, 1.0, 0.0],
            "plugin_errors": [0.0, 0.0, 2.0],
            "unknown_subscription_requests": [0.0, 0.0, 1.0],
        }
    )


def _every_plot(text: str) -> list[bytes]:
    return [
        plots.client_metric_png(_series(text), text, text, [2.5], _breaches()),
        plots.client_metric_png(_series(text).iloc[0:0], text, text, [], _breaches()),
        plots.broker_health_png(_broker_frame(text)),
        plots.message_png(text),
    ]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_labels_render(text: str) -> None:
    for png in _every_plot(text):
        assert png.startswith(PNG_MAGIC)


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet=st.sampled_from("$\\^_{}%#&~ax\n"), min_size=1, max_size=12) | st.text(max_size=30))
def test_generated_labels_render(text: str) -> None:
    assert plots.client_metric_png(_series(text), text, text, [], _breaches()).startswith(PNG_MAGIC)


def test_lone_surrogate_in_a_label_renders() -> None:
    """Not valid UTF-8, so never in a table, but a label from Python code may carry one."""
    text = "lone \ud800 surrogate"
    assert plots.client_metric_png(_series("x"), text, text, [], _breaches()).startswith(PNG_MAGIC)
    assert plots.message_png(text).startswith(PNG_MAGIC)


def test_math_text_is_shown_literally() -> None:
    """The label keeps its dollar signs: the same string with math off and escaped draws the same."""
    assert plots.label("$\\foo$") == "$\\foo$"
    assert plots.label("a\x00b") == "a\\x00b"
    assert len(plots.label("x" * 5000)) == plots.MAX_LABEL
    literal = plots.message_png("$x^2$")
    escaped = plots.message_png("\\$x^2\\$")
    assert literal != escaped  # the backslashes are drawn too: nothing is interpreted
