"""PNG plots of the analytics tables for the UI page's image endpoints (the report draws interactive
charts, ``report/charts.py``): one home, one style.

``Figure`` objects are used directly, never ``pyplot``, so concurrent requests in the API server's
thread pool never share a current figure, and no display is needed. Client ids, metric names and
label values are client-controlled: every text is drawn literally (``_literal``), never as math text
or TeX, so ``$\\foo$`` is a label, not a parse error.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure
from matplotlib.text import Text

from airflow_provider_kip714.contract.client_text import printable

CHART_SIZE, CHART_DPI = (7.5, 2.6), 100
MAX_LINES = 8
MAX_LABEL = 160
_LITERAL_RC = {"text.usetex": False, "text.parse_math": False}


def label(text: object) -> str:
    """A client-controlled string as a plot label: str, control characters shown, bounded length."""
    return printable(text, MAX_LABEL)


@contextmanager
def _literal() -> Iterator[None]:
    """Texts created inside are literal (matplotlib reads these settings when a Text is made)."""
    with matplotlib.rc_context(_LITERAL_RC):
        yield


def _render(figure: Figure, dpi: int) -> bytes:
    """PNG bytes; every Text is forced literal first (titles, legends, ticks, annotations)."""
    for text in figure.findobj(Text):
        text.set_usetex(False)
        text.set_parse_math(False)
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    with _literal():
        figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _naive_utc(times: pd.Series) -> pd.Series:
    return pd.to_datetime(times, utc=True).dt.tz_convert("UTC").dt.tz_localize(None)


def _date_axis(axes: object) -> None:
    locator = AutoDateLocator()
    axes.xaxis.set_major_locator(locator)  # type: ignore[attr-defined]
    axes.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[attr-defined]


def message_png(text: str) -> bytes:
    """A small image saying why there is no chart (the <img> still loads)."""
    with _literal():
        figure = Figure(figsize=(CHART_SIZE[0], 0.8))
        figure.text(0.5, 0.5, label(text), ha="center", va="center", fontsize=10, color="#555555")
    return _render(figure, CHART_DPI)


def client_metric_png(
    series: pd.DataFrame, metric_name: str, client_label: str, thresholds: list[float], breaches: pd.DataFrame
) -> bytes:
    """One client's metric over time (UI): a line per attribute set, thresholds dashed, breaches shaded."""
    if series.empty:
        return message_png(f"no rollups for {metric_name} of {client_label}")
    with _literal():
        figure = Figure(figsize=CHART_SIZE)
        axes = figure.add_subplot()
        times = _naive_utc(series["bucket_start"])
        for index, (key, group) in enumerate(series.assign(_t=times).groupby("attributes_key", sort=True)):
            if index >= MAX_LINES:
                break
            axes.plot(
                group["_t"], group["value"], marker=".", linewidth=1.2, label=label(key or "(no attributes)")
            )
        for threshold in thresholds:
            axes.axhline(
                threshold, color="#c0392b", linestyle="--", linewidth=1, label=f"threshold {threshold:g}"
            )
        for _, breach in breaches.iterrows():
            start, end = _naive_utc(pd.Series([breach["breach_start"], breach["breach_end"]]))
            axes.axvspan(start, end, color="#e74c3c", alpha=0.15)
        axes.set_title(label(f"{metric_name} — {client_label}"), fontsize=9)
        axes.tick_params(labelsize=8)
        axes.grid(alpha=0.3)
        _date_axis(axes)
        axes.legend(fontsize=7, loc="upper left")
        figure.tight_layout()
    return _render(figure, CHART_DPI)


def broker_health_png(broker_metrics: pd.DataFrame) -> bytes:
    """Per broker (the UI): connected client instances, and throttle / plugin-error ratios, over time."""
    if broker_metrics.empty:
        return message_png("no broker metrics yet")
    with _literal():
        figure = Figure(figsize=(CHART_SIZE[0], CHART_SIZE[1] * 1.4))
        counts, ratios = figure.subplots(2, 1, sharex=True)
        frame = broker_metrics.assign(_t=_naive_utc(broker_metrics["bucket_start"])).sort_values("_t")
        for node_id, group in frame.groupby("broker_node_id", dropna=False):
            node = label(node_id)
            counts.plot(group["_t"], group["instance_count"], marker=".", label=f"broker {node} instances")
            ratios.plot(
                group["_t"], group["throttle_ratio"].fillna(0), marker=".", label=f"broker {node} throttle"
            )
            errors = group["plugin_error_ratio"].fillna(0)
            ratios.plot(group["_t"], errors, marker="x", linestyle=":", label=f"broker {node} plugin errors")
        counts.set_title("client instances per broker", fontsize=9)
        ratios.set_title("throttled-push and plugin-error ratios", fontsize=9)
        for axes in (counts, ratios):
            axes.tick_params(labelsize=8)
            axes.grid(alpha=0.3)
            axes.legend(fontsize=7, loc="upper left")
        _date_axis(ratios)
        figure.tight_layout()
    return _render(figure, CHART_DPI)
