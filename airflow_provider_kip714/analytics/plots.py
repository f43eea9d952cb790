"""PNG plots of the analytics tables, for the report (files) and the UI (bytes): one home, one style.

``Figure`` objects are used directly, never ``pyplot``, so concurrent requests in the API server's
thread pool never share a current figure, and no display is needed. Client ids, metric names and
label values are client-controlled: every text is drawn literally (``_literal``), never as math text
or TeX, so ``$\\foo$`` is a label, not a parse error.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, DateFormatter
from matplotlib.figure import Figure
from matplotlib.text import Text

from airflow_provider_kip714.contract.client_text import printable

SEVERITY_COLOURS = {"warning": "#e69f00", "critical": "#d55e00"}
REPORT_SIZE, REPORT_DPI = (7.0, 2.8), 80
CHART_SIZE, CHART_DPI = (7.5, 2.6), 100
MAX_LINES = 8
MAX_LABEL = 160
OFF_SCALE_SPANS = 5.0
"""Thresholds further than this many data spans from the series are listed, not drawn."""
_LITERAL_RC = {"text.usetex": False, "text.parse_math": False}


@dataclass(frozen=True)
class ThresholdLine:
    """A horizontal line on a metric plot: a static rule or a learned baseline."""

    label: str
    value: float
    severity: str = "warning"


@dataclass(frozen=True)
class Series:
    label: str
    times: Sequence[pd.Timestamp]
    values: Sequence[float]


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


def _date_axis(axes: object, concise: bool) -> None:
    if concise:
        locator = AutoDateLocator()
        axes.xaxis.set_major_locator(locator)  # type: ignore[attr-defined]
        axes.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[attr-defined]
    else:
        axes.xaxis.set_major_formatter(DateFormatter("%H:%M:%S"))  # type: ignore[attr-defined]


def _legend(axes: object) -> None:
    if axes.get_legend_handles_labels()[0]:  # type: ignore[attr-defined]  # a NaN-only series draws nothing
        axes.legend(fontsize=7, loc="upper left", framealpha=0.6)  # type: ignore[attr-defined]


def message_png(text: str) -> bytes:
    """A small image saying why there is no chart (the <img> still loads)."""
    with _literal():
        figure = Figure(figsize=(CHART_SIZE[0], 0.8))
        figure.text(0.5, 0.5, label(text), ha="center", va="center", fontsize=10, color="#555555")
    return _render(figure, CHART_DPI)


def split_off_scale(
    series: Sequence[Series], thresholds: Sequence[ThresholdLine]
) -> tuple[list[ThresholdLine], list[ThresholdLine]]:
    """(thresholds to draw, thresholds too far from the data to draw)."""
    observed = [v for line in series for v in line.values if v is not None and not math.isnan(v)]
    if not observed:
        return list(thresholds), []
    low, high = min(observed), max(observed)
    reach = OFF_SCALE_SPANS * max(high - low, abs(high), abs(low), 1e-9)
    drawn = [t for t in thresholds if low - reach <= t.value <= high + reach]
    return drawn, [t for t in thresholds if t not in drawn]


def metric_png(title: str, unit: str, series: Sequence[Series], thresholds: Sequence[ThresholdLine]) -> bytes:
    """One metric of one client over the window (the report), one line per label set, thresholds dashed.

    A threshold far outside the data (say a 5000 ms rule over 20 ms values) is listed in the legend as
    off scale instead of being drawn, so it does not flatten the series into a line at zero.
    """
    with _literal():
        figure = Figure(figsize=REPORT_SIZE)
        axes = figure.add_subplot()
        drawn, off_scale = split_off_scale(series, thresholds)
        for line in series:
            axes.plot(
                list(line.times),
                list(line.values),
                marker="o",
                markersize=3,
                linewidth=1.2,
                label=label(line.label),
            )
        for threshold in off_scale:
            colour = SEVERITY_COLOURS.get(threshold.severity, "#cc79a7")
            text = f"{label(threshold.label)} {threshold.value:.6g} (off scale)"
            axes.plot([], [], linestyle="--", linewidth=1.0, color=colour, label=text)
        for threshold in drawn:
            colour = SEVERITY_COLOURS.get(threshold.severity, "#cc79a7")
            text = f"{label(threshold.label)} {threshold.value:.6g}"
            axes.axhline(threshold.value, linestyle="--", linewidth=1.0, color=colour, label=text)
        axes.set_title(label(title), fontsize=9)
        axes.set_ylabel(label(unit) or "value", fontsize=8)
        axes.tick_params(labelsize=7)
        _finish_report(figure, axes)
    return _render(figure, REPORT_DPI)


def broker_png(title: str, frame: pd.DataFrame) -> bytes:
    """Pushes exported, throttled pushes and plugin errors per bucket for one broker (the report)."""
    with _literal():
        figure = Figure(figsize=REPORT_SIZE)
        axes = figure.add_subplot()
        ordered = frame.sort_values("bucket_start")
        for column, name in (
            ("pushes_exported", "pushes exported"),
            ("throttled_pushes", "throttled pushes"),
            ("plugin_errors", "plugin errors"),
            ("unknown_subscription_requests", "unknown subscription"),
        ):
            if column in ordered.columns:
                values = list(ordered[column].fillna(0.0))
                axes.plot(
                    list(ordered["bucket_start"]), values, marker="o", markersize=3, linewidth=1.2, label=name
                )
        axes.set_title(label(title), fontsize=9)
        axes.set_ylabel("per bucket", fontsize=8)
        axes.tick_params(labelsize=7)
        _finish_report(figure, axes)
    return _render(figure, REPORT_DPI)


def _finish_report(figure: Figure, axes: object) -> None:
    _date_axis(axes, concise=False)
    axes.grid(True, alpha=0.3)  # type: ignore[attr-defined]
    _legend(axes)
    figure.autofmt_xdate()
    # fixed margins that fit the rotated HH:MM:SS ticks: tight_layout measured every text of every chart
    # again, a quarter of the report's time (0.7 of 3.0 s for the demo's 22 charts)
    figure.subplots_adjust(left=0.11, right=0.98, top=0.91, bottom=0.22)


def write_png(path: Path, png: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    return path


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
        _date_axis(axes, concise=True)
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
        _date_axis(ratios, concise=True)
        figure.tight_layout()
    return _render(figure, CHART_DPI)
