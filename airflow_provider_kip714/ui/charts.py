"""Server-rendered PNG charts (matplotlib's Agg canvas, no pyplot state, no browser-side library).

``Figure`` objects are used directly rather than ``pyplot`` so concurrent requests in the API
server's thread pool never share a current figure.
"""

from __future__ import annotations

import io

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure

WIDTH_IN, HEIGHT_IN, DPI = 7.5, 2.6, 100
MAX_LINES = 8


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _time_axis(axes: object) -> None:
    locator = AutoDateLocator()
    axes.xaxis.set_major_locator(locator)  # type: ignore[attr-defined]
    axes.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[attr-defined]


def _naive_utc(times: pd.Series) -> pd.Series:
    return pd.to_datetime(times, utc=True).dt.tz_convert("UTC").dt.tz_localize(None)


def message_png(text: str) -> bytes:
    """A small image saying why there is no chart (the <img> still loads)."""
    figure = Figure(figsize=(WIDTH_IN, 0.8))
    figure.text(0.5, 0.5, text, ha="center", va="center", fontsize=10, color="#555555")
    return _png(figure)


def client_metric_png(
    series: pd.DataFrame,
    metric_name: str,
    client_label: str,
    thresholds: list[float],
    breaches: pd.DataFrame,
) -> bytes:
    """One client's metric over time, a line per attribute set, thresholds dashed, breaches shaded."""
    if series.empty:
        return message_png(f"no rollups for {metric_name} of {client_label}")
    figure = Figure(figsize=(WIDTH_IN, HEIGHT_IN))
    axes = figure.add_subplot()
    times = _naive_utc(series["bucket_start"])
    for index, (key, group) in enumerate(series.assign(_t=times).groupby("attributes_key", sort=True)):
        if index >= MAX_LINES:
            break
        axes.plot(group["_t"], group["value"], marker=".", linewidth=1.2, label=key or "(no attributes)")
    for threshold in thresholds:
        axes.axhline(
            threshold, color="#c0392b", linestyle="--", linewidth=1, label=f"threshold {threshold:g}"
        )
    for _, breach in breaches.iterrows():
        start, end = _naive_utc(pd.Series([breach["breach_start"], breach["breach_end"]]))
        axes.axvspan(start, end, color="#e74c3c", alpha=0.15)
    axes.set_title(f"{metric_name} — {client_label}", fontsize=9)
    axes.tick_params(labelsize=8)
    axes.grid(alpha=0.3)
    _time_axis(axes)
    axes.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    return _png(figure)


def broker_health_png(broker_metrics: pd.DataFrame) -> bytes:
    """Per broker: connected client instances, and throttle / plugin-error ratios, over time."""
    if broker_metrics.empty:
        return message_png("no broker metrics yet")
    figure = Figure(figsize=(WIDTH_IN, HEIGHT_IN * 1.4))
    counts, ratios = figure.subplots(2, 1, sharex=True)
    frame = broker_metrics.assign(_t=_naive_utc(broker_metrics["bucket_start"])).sort_values("_t")
    for node_id, group in frame.groupby("broker_node_id", dropna=False):
        counts.plot(group["_t"], group["instance_count"], marker=".", label=f"broker {node_id} instances")
        ratios.plot(
            group["_t"], group["throttle_ratio"].fillna(0), marker=".", label=f"broker {node_id} throttle"
        )
        ratios.plot(
            group["_t"],
            group["plugin_error_ratio"].fillna(0),
            marker="x",
            linestyle=":",
            label=f"broker {node_id} plugin errors",
        )
    counts.set_title("client instances per broker", fontsize=9)
    ratios.set_title("throttled-push and plugin-error ratios", fontsize=9)
    for axes in (counts, ratios):
        axes.tick_params(labelsize=8)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7, loc="upper left")
    _time_axis(ratios)
    figure.tight_layout()
    return _png(figure)
