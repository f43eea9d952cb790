"""HTML building blocks shared by the report's sections and the UI page: escaped cells and tables, the
chart data block, the bundled chart library. A leaf: it imports nothing else of the report.

Every value that reaches the page goes through ``escape`` (cells, labels) or ``json_block`` (chart data):
client ids, metric names and label values are client-controlled and stay text, never markup or code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from html import escape
from importlib import resources
from typing import Any, Final

import pandas as pd

from airflow_provider_kip714.contract.client_text import printable

ASSETS: Final = "assets"
"""The folder, inside this package, of the bundled chart files (shipped in the wheel)."""
CHART_LIBRARY: Final = "uPlot.iife.min.js"
CHART_STYLE: Final = "uPlot.min.css"
CHART_RENDERER: Final = "kip714-charts.js"
ASSET_FILES: Final = (CHART_LIBRARY, CHART_STYLE, CHART_RENDERER)
DATA_ID: Final = "kip714-chart-data"
MAX_TEXT: Final = 200
"""Client text longer than this is cut in cards and legends (tables keep it whole)."""

STYLE: Final = """
body{font-family:system-ui,sans-serif;margin:1.2rem 1.5rem;color:#1f2933;max-width:1400px}
h1{font-size:1.35rem;margin:.2rem 0}h2{font-size:1.12rem;margin-top:1.8rem;border-bottom:1px solid #d9e2ec}
h3{font-size:1rem;margin:.8rem 0 .3rem}
table{border-collapse:collapse;font-size:.8rem;margin:.5rem 0}
th,td{border:1px solid #d9e2ec;padding:.2rem .45rem;text-align:left;vertical-align:top}
th{background:#f0f4f8}.muted{color:#627d98}.flag{color:#ab091e;font-weight:bold}
tr.critical td{background:#fde0dc}tr.warning td{background:#fff4d6}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:.8rem}
.card{border:1px solid #d9e2ec;border-left:6px solid #b44d12;border-radius:4px;padding:.5rem .7rem}
.card.critical{border-left-color:#ab091e}.card h3{margin:0 0 .3rem}
.card .sev{text-transform:uppercase;font-size:.72rem;font-weight:700;color:#fff;background:#b44d12;
 padding:0 .3rem;border-radius:3px;margin-right:.4rem}.card.critical .sev{background:#ab091e}
.card dl{display:grid;grid-template-columns:7.5rem 1fr;gap:.1rem .6rem;margin:.3rem 0;font-size:.85rem}
.card dt{color:#627d98}.card dd{margin:0;overflow-wrap:anywhere}
.card.info{border-left-color:#627d98}.card.info .sev{background:#627d98}
td.pushed{background:#e3f9e5}td.absent{background:#f0f4f8;color:#627d98}
.chart{margin:.3rem 0 .8rem}.chart .note{font-size:.78rem;color:#627d98}
details{margin:.5rem 0}summary{cursor:pointer;color:#334e68}
.scroll{overflow-x:auto}
"""


def cell(value: Any) -> str:
    """A table cell's text: '' for missing, 6 significant digits, UTC times to the second."""
    if value is None or (not isinstance(value, list | dict | str) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, pd.Timestamp | datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]], row_class: str = "") -> str:
    """An escaped table; ``row_class`` names the column whose value becomes each row's CSS class."""
    head = "".join(f"<th>{escape(label)}</th>" for _, label in columns)
    body = []
    for row in rows:
        css = escape(str(row.get(row_class, ""))) if row_class else ""
        cells = "".join(f"<td>{escape(cell(row.get(key)))}</td>" for key, _ in columns)
        body.append(f'<tr class="{css}">{cells}</tr>')
    return scroll_table(head, "".join(body))


def scroll_table(head: str, body: str) -> str:
    """A table that scrolls sideways on its own; ``head`` and ``body`` are escaped rows."""
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [] if frame.empty else frame.to_dict("records")


def text(value: object, limit: int = MAX_TEXT) -> str:
    """Client text for a card or a legend: control characters shown as escapes, cut, HTML-escaped."""
    return escape(printable(value, limit))


def json_block(element_id: str, data: object) -> str:
    """Data for the page's scripts as ``<script type="application/json">``: never executed, and with
    ``<``, ``>`` and ``&`` written as JSON escapes no value can close the element or open another."""
    body = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str)
    body = body.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    body = body.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="{escape(element_id)}">{body}</script>'


@cache
def asset(name: str) -> str:
    """A bundled file's text (the chart library, its style, the renderer); only ``ASSET_FILES``."""
    if name not in ASSET_FILES:
        raise ValueError(f"asset: must be one of {ASSET_FILES}, got {name!r}")
    return resources.files(__package__).joinpath(ASSETS, name).read_text(encoding="utf-8")


LEGEND_STYLE: Final = (
    ".u-legend{font-size:.75rem}.u-legend .u-series{cursor:pointer}"
    ".u-legend .u-series th{white-space:nowrap}"
    ".u-legend .u-value{display:inline-block;min-width:6em}"
)
"""The legends of the report's and the page's charts. Labels do not wrap and values keep a fixed width,
so the legend does not reflow when the cursor leaves the plot (hover values turn back to dashes): a
click aimed at an entry, right after a hover, toggled the entry below it."""


def inline_chart_code() -> str:
    """The chart library, its style and the renderer inline: the report opens offline, from a local
    folder or through the UI from an object store, with no second file to fetch."""
    return (
        f"<style>{asset(CHART_STYLE)}{LEGEND_STYLE}</style>"
        f'<script id="kip714-uplot">{asset(CHART_LIBRARY)}</script>'
        f'<script id="kip714-render">{asset(CHART_RENDERER)}</script>'
    )


def details(summary: str, body: str) -> str:
    """A collapsed block; ``summary`` and ``body`` are HTML already escaped by the caller."""
    return f"<details><summary>{summary}</summary>{body}</details>"
