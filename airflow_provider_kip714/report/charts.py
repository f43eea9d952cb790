"""Interactive charts as data: what the bundled renderer (``assets/kip714-charts.js``, on uPlot) draws.

A ``Chart`` is a time axis, lines (one per client, or a median, a threshold), bands between two lines
(the peers' spread, the rest of the fleet) and shaded spans (a breach). Charts travel to the page as
JSON (``html.json_block``): every label is data, drawn with ``textContent``.

**Colours.** ``Palette`` gives each client instance one colour for the whole report, in the order
clients are first shown (the findings' clients first), so a client reads the same on every chart.

**Fleet size.** ``metric_charts`` draws one chart per metric across clients: the anomalous clients and
the ``top`` clients furthest from the fleet's median, each as a line, and everyone else as one band
(10th to 90th percentile, and its median). Metrics that are zero or absent everywhere get one line of
text, not a chart.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, Final

import pandas as pd

from airflow_provider_kip714.contract.client_text import printable

PALETTE: Final = (
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9",
    "#d55e00", "#7f3c8d", "#11a579", "#3969ac", "#f2b701",
)  # fmt: skip
"""Okabe-Ito and Bold: distinct for most colour-blind readers; later clients get golden-angle hues."""
REST_COLOUR: Final = "#9fb3c8"
REST_FILL: Final = "rgba(159,179,200,0.25)"
PEER_FILL: Final = "rgba(98,125,152,0.22)"
SEVERITY_COLOURS: Final = {"warning": "#e69f00", "critical": "#d55e00"}
DEFAULT_TOP: Final = 8
LABEL_LIMIT: Final = 80


class Palette:
    """One colour per client instance for the whole report, assigned in the order clients are shown."""

    def __init__(self) -> None:
        self._colours: dict[str, str] = {}

    def colour(self, instance: str) -> str:
        if instance not in self._colours:
            index = len(self._colours)
            if index < len(PALETTE):
                self._colours[instance] = PALETTE[index]
            else:
                hue = (index * 0.618033988749895) % 1.0
                red, green, blue = colorsys.hls_to_rgb(hue, 0.42, 0.65)
                self._colours[instance] = f"#{int(red * 255):02x}{int(green * 255):02x}{int(blue * 255):02x}"
        return self._colours[instance]

    def as_json(self) -> dict[str, str]:
        return dict(self._colours)


@dataclass(frozen=True)
class Line:
    label: str
    values: Sequence[float | None]
    colour: str
    width: float = 1.5
    dash: tuple[int, ...] = ()
    client: str | None = None
    """The client instance this line is, so the page's filters can hide it."""


@dataclass(frozen=True)
class Band:
    """A fill between two lines (indexes into ``Chart.lines``)."""

    high: int
    low: int
    fill: str


@dataclass
class Chart:
    chart_id: str
    title: str
    unit: str
    times: list[float]
    """Epoch seconds (UTC) of the buckets."""
    lines: list[Line] = field(default_factory=list)
    bands: list[Band] = field(default_factory=list)
    shade: list[tuple[float, float]] = field(default_factory=list)
    """Spans (epoch seconds) to shade: a breach, a silence."""
    note: str = ""

    def placeholder(self) -> str:
        """Where the page's renderer draws this chart, with its note under it."""
        note = f"<div class='note'>{escape(printable(self.note, 400))}</div>" if self.note else ""
        return f'<div class="chart" data-chart="{escape(self.chart_id)}"></div>{note}'

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.chart_id,
            "title": printable(self.title, 200),
            "unit": printable(self.unit, 40),
            "x": self.times,
            "lines": [
                {
                    "label": printable(line.label, LABEL_LIMIT),
                    "values": [_finite(v) for v in line.values],
                    "colour": line.colour,
                    "width": line.width,
                    "dash": list(line.dash),
                    "client": line.client,
                }
                for line in self.lines
            ],
            "bands": [{"high": b.high, "low": b.low, "fill": b.fill} for b in self.bands],
            "shade": [list(span) for span in self.shade],
            "note": printable(self.note, 400),
        }


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def epoch(moment: object) -> float:
    return pd.Timestamp(moment).timestamp()


def values_frame(rollups: pd.DataFrame) -> pd.DataFrame:
    """client_instance_id, metric_name, attributes_key, bucket_start, value (``signal``, else ``avg``)."""
    if rollups.empty:
        return pd.DataFrame(
            columns=["client_instance_id", "metric_name", "attributes_key", "bucket_start", "value"]
        )
    value = rollups["signal"] if "signal" in rollups.columns else pd.Series(float("nan"), index=rollups.index)
    if "avg" in rollups.columns:
        value = value.fillna(rollups["avg"])
    keys = rollups["attributes_key"].fillna("") if "attributes_key" in rollups.columns else ""
    return pd.DataFrame(
        {
            "client_instance_id": rollups["client_instance_id"].fillna(""),
            "metric_name": rollups["metric_name"],
            "attributes_key": keys,
            "bucket_start": rollups["bucket_start"],
            "value": value.astype(float),
        }
    )


def client_label(identity: Mapping[str, object], duplicate_ids: bool = False) -> str:
    """A client's name on a legend: its id, with its instance when ids repeat."""
    client_id = str(identity.get("client_id") or "(no client id)")
    instance = str(identity.get("client_instance_id") or "")
    return f"{client_id} ({instance[:8]})" if duplicate_ids and instance else client_id


@dataclass(frozen=True)
class MetricCharts:
    charts: list[Chart]
    quiet: list[str]
    """Metrics zero (or absent) for every client in the window: one line of text, not a chart."""
    skipped: int


def metric_charts(
    values: pd.DataFrame,
    labels: Mapping[str, str],
    palette: Palette,
    flagged: Mapping[str, set[str]],
    units: Mapping[str, str],
    *,
    levels: Mapping[str, Sequence[Level]] | None = None,
    top: int = DEFAULT_TOP,
    budget: int,
) -> MetricCharts:
    """One chart per metric across clients (label sets averaged per client and bucket).

    ``flagged`` maps a metric to the instances with a finding on it: always drawn, and drawn thick.
    Metrics with a finding come first; past ``budget`` charts the rest are counted, not drawn.
    """
    if values.empty:
        return MetricCharts([], [], 0)
    means = values.groupby(["metric_name", "bucket_start", "client_instance_id"], sort=True)["value"].mean()
    charts: list[Chart] = []
    quiet: list[str] = []
    metrics = sorted(means.index.get_level_values(0).unique(), key=lambda m: (m not in flagged, m))
    skipped = 0
    for number, metric in enumerate(metrics):
        wide = means.loc[metric].unstack("client_instance_id")
        if wide.isna().all().all() or (wide.fillna(0.0) == 0.0).all().all():
            quiet.append(str(metric))
            continue
        if len(charts) >= budget:
            skipped += 1
            continue
        chart = across_clients_chart(
            f"metric-{number}",
            str(metric),
            wide,
            labels,
            palette,
            flagged.get(metric, set()),
            units.get(metric, ""),
            top,
        )
        _add_levels(chart, wide, (levels or {}).get(metric, ()))
        charts.append(chart)
    return MetricCharts(charts, quiet, skipped)


def across_clients_chart(
    chart_id: str,
    metric: str,
    wide: pd.DataFrame,
    labels: Mapping[str, str],
    palette: Palette,
    flagged: set[str],
    unit: str,
    top: int,
) -> Chart:
    times = [epoch(t) for t in wide.index]
    median = wide.median(axis=1)
    distance = wide.sub(median, axis=0).abs().max(axis=0).fillna(0.0)
    mine = sorted(
        (c for c in wide.columns if c in flagged), key=lambda c: (-float(distance[c]), labels.get(c, c))
    )
    others = distance.drop(index=mine).sort_values(ascending=False, kind="stable")
    shown = mine + list(others.index[: max(top - len(mine), 0)])
    chosen = set(shown)
    rest = [c for c in wide.columns if c not in chosen]
    chart = Chart(chart_id, metric, unit, times)
    for instance in shown:
        chart.lines.append(
            Line(
                labels.get(instance, instance),
                list(wide[instance]),
                palette.colour(instance),
                width=2.6 if instance in flagged else 1.3,
                client=instance,
            )
        )
    if rest:
        others = wide[rest]
        count = len(rest)
        high = len(chart.lines)
        chart.lines.append(
            Line(f"other {count}: 90th pct", list(others.quantile(0.9, axis=1)), REST_COLOUR, 0.8)
        )
        chart.lines.append(
            Line(f"other {count}: 10th pct", list(others.quantile(0.1, axis=1)), REST_COLOUR, 0.8)
        )
        chart.lines.append(
            Line(f"other {count}: median", list(others.median(axis=1)), REST_COLOUR, 1.2, (4, 3))
        )
        chart.bands.append(Band(high, high + 1, REST_FILL))
    absent = int(wide.isna().all(axis=0).sum())
    parts = [f"{len(wide.columns)} client(s)"]
    if rest:
        parts.append(
            f"the {len(shown)} furthest from the median (and any with a finding) drawn, "
            f"the other {len(rest)} as a band"
        )
    if absent:
        parts.append(f"{absent} with no value")
    chart.note = "; ".join(parts) + "."
    return chart


@dataclass(frozen=True)
class Level:
    """A horizontal line: a static rule's threshold that applies to some client on the chart."""

    label: str
    value: float
    severity: str = "warning"


OFF_SCALE_SPANS: Final = 5.0
"""Levels further than this many data spans from the series are named in the note, not drawn."""


def _add_levels(chart: Chart, wide: pd.DataFrame, levels: Sequence[Level]) -> None:
    """Dashed threshold lines; one far from the data (a 5000 ms rule over 20 ms values) is only named,
    so it does not flatten the series into a line at zero."""
    low, high = float(wide.min().min()), float(wide.max().max())
    reach = OFF_SCALE_SPANS * max(high - low, abs(high), abs(low), 1e-9)
    far = []
    for level in levels:
        if low - reach <= level.value <= high + reach:
            colour = SEVERITY_COLOURS.get(level.severity, "#cc79a7")
            chart.lines.append(
                Line(f"{level.label} {level.value:g}", [level.value] * len(chart.times), colour, 1.1, (6, 3))
            )
        else:
            far.append(f"{level.label} {level.value:g}")
    if far:
        chart.note += f" Off scale, not drawn: {', '.join(far)}."


def percentile_band(frame: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """(median, 10th, 90th percentile) per row of a bucket x client frame."""
    return frame.median(axis=1), frame.quantile(0.1, axis=1), frame.quantile(0.9, axis=1)


def spans(starts: Iterable[object], ends: Iterable[object]) -> list[tuple[float, float]]:
    return [
        (epoch(start), epoch(end))
        for start, end in zip(starts, ends, strict=True)
        if pd.notna(start) and pd.notna(end)
    ]


BROKER_SERIES: Final = (
    ("pushes_exported", "pushes exported"),
    ("throttled_pushes", "throttled"),
    ("plugin_errors", "plugin errors"),
    ("unknown_subscription_requests", "unknown subscription"),
)


def broker_chart(broker_metrics: pd.DataFrame) -> Chart | None:
    """Per bucket and broker: pushes exported, throttled, plugin errors, unknown-subscription requests."""
    if broker_metrics.empty:
        return None
    frame = broker_metrics.sort_values("bucket_start")
    times = sorted(frame["bucket_start"].unique())
    chart = Chart("brokers", "broker health per bucket", "per bucket", [epoch(t) for t in times])
    for node, part in frame.groupby("broker_node_id", dropna=False):
        for number, (column, name) in enumerate(BROKER_SERIES):
            if column not in part.columns:
                continue
            values = part.groupby("bucket_start")[column].sum().reindex(times)
            if column != "pushes_exported" and not values.fillna(0).any():
                continue
            colour = PALETTE[number % len(PALETTE)]
            chart.lines.append(Line(f"broker {node}: {name}", list(values), colour, 1.4))
    chart.note = "Series that are zero over the window are left out."
    return chart
