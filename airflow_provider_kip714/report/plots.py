"""PNG plots for the report (matplotlib, Agg backend: no display, safe in workers and tests)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot: the worker has no display

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pandas as pd

SEVERITY_COLOURS = {"warning": "#e69f00", "critical": "#d55e00"}
FIGURE_SIZE = (7.0, 2.8)
DPI = 80
OFF_SCALE_SPANS = 5.0
"""Thresholds further than this many data spans from the series are listed, not drawn."""


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


def _finish(figure: plt.Figure, axes: plt.Axes, path: Path) -> Path:
    axes.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S"))
    axes.grid(True, alpha=0.3)
    if axes.get_legend_handles_labels()[0]:  # a series of only NaN draws nothing to label
        axes.legend(fontsize=7, loc="upper left", framealpha=0.6)
    figure.autofmt_xdate()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


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


def plot_metric(
    path: Path, title: str, unit: str, series: Sequence[Series], thresholds: Sequence[ThresholdLine]
) -> Path:
    """One metric of one client over the window, one line per label set, threshold lines dashed.

    A threshold far outside the data (say a 5000 ms rule over 20 ms values) is listed in the legend as
    off scale instead of being drawn, so it does not flatten the series into a line at zero.
    """
    figure, axes = plt.subplots(figsize=FIGURE_SIZE)
    drawn, off_scale = split_off_scale(series, thresholds)
    for line in series:
        axes.plot(
            list(line.times), list(line.values), marker="o", markersize=3, linewidth=1.2, label=line.label
        )
    for threshold in off_scale:
        colour = SEVERITY_COLOURS.get(threshold.severity, "#cc79a7")
        label = f"{threshold.label} {threshold.value:.6g} (off scale)"
        axes.plot([], [], linestyle="--", linewidth=1.0, color=colour, label=label)
    for threshold in drawn:
        colour = SEVERITY_COLOURS.get(threshold.severity, "#cc79a7")
        axes.axhline(
            threshold.value,
            linestyle="--",
            linewidth=1.0,
            color=colour,
            label=f"{threshold.label} {threshold.value:.6g}",
        )
    axes.set_title(title, fontsize=9)
    axes.set_ylabel(unit or "value", fontsize=8)
    axes.tick_params(labelsize=7)
    return _finish(figure, axes, path)


def plot_broker(path: Path, title: str, frame: pd.DataFrame) -> Path:
    """Pushes exported, throttled pushes and plugin errors per bucket for one broker."""
    figure, axes = plt.subplots(figsize=FIGURE_SIZE)
    ordered = frame.sort_values("bucket_start")
    for column, label in (
        ("pushes_exported", "pushes exported"),
        ("throttled_pushes", "throttled pushes"),
        ("plugin_errors", "plugin errors"),
        ("unknown_subscription_requests", "unknown subscription"),
    ):
        if column in ordered.columns:
            axes.plot(
                list(ordered["bucket_start"]),
                list(ordered[column].fillna(0.0)),
                marker="o",
                markersize=3,
                linewidth=1.2,
                label=label,
            )
    axes.set_title(title, fontsize=9)
    axes.set_ylabel("per bucket", fontsize=8)
    axes.tick_params(labelsize=7)
    return _finish(figure, axes, path)
