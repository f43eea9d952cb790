"""The chart of each finding card: exactly what the finding was judged against.

The client's series over its peers' median and 10th-90th percentile band (a peer anomaly), over its own
baseline's median and thresholds, or under a static rule's threshold lines, the breach shaded; a silent
client's series per bucket up to the window's end; a throttled client's or a broker's ratios.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Final

import pandas as pd

from airflow_provider_kip714.findings.from_tables import number
from airflow_provider_kip714.findings.model import Finding, FindingKind
from airflow_provider_kip714.report.charts import (
    PEER_FILL,
    SEVERITY_COLOURS,
    Band,
    Chart,
    Line,
    Palette,
    epoch,
    percentile_band,
    spans,
)
from airflow_provider_kip714.report.findings import Card
from spark_apps.kip714_common.identity import baseline_client_group, peer_group_of, peer_kind
from spark_apps.kip714_common.landing_contract import CLIENT_IDENTITY_COLUMNS

MEDIAN_COLOUR: Final = "#334e68"


@dataclass(frozen=True)
class Inputs:
    """The window's tables a card's chart is drawn from."""

    rollups: pd.DataFrame
    thresholds: pd.DataFrame
    broker_metrics: pd.DataFrame
    broker_clients: pd.DataFrame
    group_by: Sequence[str]
    window_end: datetime | None

    def metric_rows(self, metric: str) -> pd.DataFrame:
        """One metric's rollup rows, selected once for all the cards on that metric."""
        if metric not in self._by_metric:
            rollups = self.rollups
            self._by_metric[metric] = (
                rollups[rollups["metric_name"] == metric] if not rollups.empty else rollups
            )
        return self._by_metric[metric]

    @cached_property
    def _by_metric(self) -> dict[str, pd.DataFrame]:
        return {}

    def peers(self, peer_group: str) -> list[str]:
        """The instances in a peer group (``identity.peer_group_of``), worked out once per group."""
        if peer_group not in self._peers:
            kind = peer_kind(peer_group)
            members = []
            for row in self.clients if kind else []:
                group = row.get("group_id")
                attributes = {"group_id": group} if isinstance(group, str) else {}
                if peer_group_of(kind, row, attributes) == peer_group:  # type: ignore[arg-type]
                    members.append(str(row["client_instance_id"]))
            self._peers[peer_group] = members
        return self._peers[peer_group]

    @cached_property
    def _peers(self) -> dict[str, list[str]]:
        return {}

    def wide(
        self, rows: pd.DataFrame, metric: str | None, attributes_key: str | None, column: str
    ) -> pd.DataFrame:
        """``_series`` of one metric's rows, computed once per (metric, labels, column) for all cards."""
        key = (str(metric), attributes_key or "", column)
        if key not in self._wide:
            self._wide[key] = _series(rows, column)
        return self._wide[key]

    @cached_property
    def _wide(self) -> dict[tuple[str, str, str], pd.DataFrame]:
        return {}

    @cached_property
    def clients(self) -> list[dict[str, object]]:
        """One identity row per instance (with its ``group_id``), for finding a client's peers."""
        if self.rollups.empty:
            return []
        columns = [c for c in (*CLIENT_IDENTITY_COLUMNS, "group_id") if c in self.rollups.columns]
        return self.rollups[columns].drop_duplicates("client_instance_id").to_dict("records")


def card_chart(card: Card, chart_id: str, inputs: Inputs, palette: Palette) -> Chart | None:
    finding = card.finding
    if finding.kind is FindingKind.ANOMALY:
        return _anomaly_chart(finding, chart_id, inputs, palette)
    if finding.kind is FindingKind.SILENT_CLIENT:
        return _silent_chart(finding, chart_id, inputs, palette)
    if finding.kind is FindingKind.THROTTLED_CLIENT:
        return _broker_series_chart(
            finding,
            chart_id,
            inputs.broker_clients,
            "client_instance_id",
            finding.client.client_instance_id,
            "throttle_ratio",
            palette,
        )
    return _broker_series_chart(
        finding,
        chart_id,
        inputs.broker_metrics,
        "broker_node_id",
        finding.broker_node_id,
        "plugin_errors",
        palette,
    )


def _metric_rows(inputs: Inputs, metric: str | None, attributes_key: str | None) -> pd.DataFrame:
    rows = inputs.metric_rows(str(metric))
    if rows.empty:
        return rows
    keys = rows["attributes_key"].fillna("")
    same = rows[keys == (attributes_key or "")]
    return same if not same.empty else rows


def _series(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """bucket x instance of ``column`` (``signal`` falls back to ``avg``), label sets averaged."""
    values = rows[column] if column in rows.columns else rows.get("signal")
    if values is None:
        return pd.DataFrame()
    if column == "signal" and "avg" in rows.columns:
        values = values.fillna(rows["avg"])
    frame = pd.DataFrame(
        {"t": rows["bucket_start"], "i": rows["client_instance_id"].fillna(""), "v": values.astype(float)}
    )
    return frame.groupby(["t", "i"])["v"].mean().unstack("i").sort_index()


def _anomaly_chart(finding: Finding, chart_id: str, inputs: Inputs, palette: Palette) -> Chart | None:
    instance = finding.client.client_instance_id or ""
    rows = _metric_rows(inputs, finding.metric_name, finding.attributes_key)
    column = "signal" if finding.against == "peers" else _field(inputs.thresholds, finding)
    wide = inputs.wide(rows, finding.metric_name, finding.attributes_key, column)
    if wide.empty or instance not in wide.columns:
        return None
    unit = (
        str(rows["metric_unit"].dropna().iloc[0])
        if "metric_unit" in rows.columns and rows["metric_unit"].notna().any()
        else ""
    )
    chart = Chart(chart_id, f"{finding.metric_name}", unit, [epoch(t) for t in wide.index])
    chart.lines.append(
        Line(_who(finding), list(wide[instance]), palette.colour(instance), 2.6, client=instance)
    )
    if finding.against == "peers" and finding.peer_group:
        peers = [c for c in inputs.peers(finding.peer_group) if c in wide.columns and c != instance]
        if peers:
            median, low, high = percentile_band(wide[peers])
            chart.lines.append(
                Line(f"peers' median ({finding.peer_group})", list(median), MEDIAN_COLOUR, 1.6, (6, 3))
            )
            chart.lines.append(Line("peers' 90th pct", list(high), "#829ab1", 0.8))
            chart.lines.append(Line("peers' 10th pct", list(low), "#829ab1", 0.8))
            chart.bands.append(Band(2, 3, PEER_FILL))
            chart.note = (
                f"Against {len(peers)} peer(s) in {finding.peer_group}: "
                "their median and 10th-90th percentile band."
            )
    elif finding.against == "own":
        for label, value, colour in _baseline_levels(inputs, finding):
            chart.lines.append(Line(label, [value] * len(chart.times), colour, 1.2, (6, 3)))
        chart.note = "Against its own baseline, learned from the history before the window."
    else:
        for label, value, colour in (
            (f"threshold {finding.expected:g}", finding.expected, SEVERITY_COLOURS["warning"]),
        ):
            if value is not None:
                chart.lines.append(Line(label, [value] * len(chart.times), colour, 1.2, (6, 3)))
        critical = _critical(inputs.thresholds, finding)
        if critical is not None:
            chart.lines.append(
                Line(
                    f"critical {critical:g}",
                    [critical] * len(chart.times),
                    SEVERITY_COLOURS["critical"],
                    1.2,
                    (6, 3),
                )
            )
        chart.note = f"Against the rule's threshold (field {column})."
    chart.shade = spans([finding.since], [finding.ended or finding.since])
    return chart


def _who(finding: Finding) -> str:
    return str(finding.client.client_id or finding.client.client_instance_id or "client")


def _field(thresholds: pd.DataFrame, finding: Finding) -> str:
    rows = _threshold_rows(thresholds, finding)
    fields = [str(f) for f in rows["field"].dropna()] if not rows.empty else []
    return fields[0] if fields and fields[0] not in ("peer_deviation",) else "signal"


def _threshold_rows(thresholds: pd.DataFrame, finding: Finding) -> pd.DataFrame:
    if thresholds.empty:
        return thresholds
    return thresholds[thresholds["metric_name"] == finding.metric_name]


def _critical(thresholds: pd.DataFrame, finding: Finding) -> float | None:
    rows = _threshold_rows(thresholds, finding)
    if rows.empty:
        return None
    rows = rows[(rows["kind"] == "static") & (rows["threshold"] == finding.expected)]
    values = rows["critical_threshold"].dropna() if not rows.empty else []
    return float(values.iloc[0]) if len(values) else None


def _baseline_levels(inputs: Inputs, finding: Finding) -> list[tuple[str, float, str]]:
    rows = _threshold_rows(inputs.thresholds, finding)
    if rows.empty:
        return (
            []
            if finding.expected is None
            else [(f"threshold {finding.expected:g}", finding.expected, SEVERITY_COLOURS["warning"])]
        )
    group = baseline_client_group(vars(finding.client), inputs.group_by)
    mine = rows[(rows["kind"] == "baseline") & (rows["client_group"] == group)]
    if "attributes_key" in mine.columns:
        keyed = mine[mine["attributes_key"].fillna("") == (finding.attributes_key or "")]
        mine = keyed if not keyed.empty else mine
    levels = []
    if not mine.empty:
        row = mine.iloc[-1]
        for label, column, colour in (
            ("baseline median", "median", MEDIAN_COLOUR),
            ("threshold", "threshold", SEVERITY_COLOURS["warning"]),
            ("critical", "critical_threshold", SEVERITY_COLOURS["critical"]),
        ):
            value = number(row.get(column))
            if value is not None:
                levels.append((f"{label} {value:.4g}", value, colour))
    elif finding.expected is not None:
        levels.append((f"threshold {finding.expected:g}", finding.expected, SEVERITY_COLOURS["warning"]))
    return levels


def _silent_chart(finding: Finding, chart_id: str, inputs: Inputs, palette: Palette) -> Chart | None:
    instance = finding.client.client_instance_id
    rollups = inputs.rollups
    if not instance or rollups.empty:
        return None
    mine = rollups[rollups["client_instance_id"] == instance]
    if mine.empty:
        return None
    buckets = sorted(rollups["bucket_start"].unique())
    counts = mine.groupby("bucket_start").size().reindex(buckets, fill_value=0)
    chart = Chart(chart_id, "series received per bucket", "series", [epoch(t) for t in buckets])
    chart.lines.append(
        Line(_who(finding), [float(v) for v in counts], palette.colour(instance), 2.6, client=instance)
    )
    end = inputs.window_end or pd.Timestamp(buckets[-1]).to_pydatetime()
    chart.shade = spans([finding.since], [end])
    chart.note = "Shaded: silent, from the last push the broker saw to the end of the window."
    return chart


def _broker_series_chart(
    finding: Finding,
    chart_id: str,
    frame: pd.DataFrame,
    key: str,
    value: object,
    column: str,
    palette: Palette,
) -> Chart | None:
    if frame.empty or value is None or column not in frame.columns:
        return None
    mine = frame[frame[key] == value].sort_values("bucket_start")
    if mine.empty:
        return None
    grouped = mine.groupby("bucket_start")[column].max()
    chart = Chart(chart_id, column.replace("_", " "), "", [epoch(t) for t in grouped.index])
    colour = palette.colour(str(value)) if key == "client_instance_id" else SEVERITY_COLOURS["critical"]
    chart.lines.append(
        Line(_who(finding) if key == "client_instance_id" else f"broker {value}", list(grouped), colour, 2.4)
    )
    if column == "plugin_errors" and "pushes_exported" in mine.columns:
        chart.lines.append(
            Line(
                "pushes exported",
                list(mine.groupby("bucket_start")["pushes_exported"].sum()),
                MEDIAN_COLOUR,
                1.2,
                (6, 3),
            )
        )
    flagged = (
        grouped[grouped > 0]
        if column == "plugin_errors"
        else mine[mine.get("high_throttle_ratio", pd.Series(False, index=mine.index)).fillna(False)]
        .groupby("bucket_start")[column]
        .max()
    )
    seconds = (
        float(mine["bucket_seconds"].dropna().iloc[0])
        if "bucket_seconds" in mine.columns and mine["bucket_seconds"].notna().any()
        else 60.0
    )
    chart.shade = [(epoch(t), epoch(t) + seconds) for t in flagged.index]
    return chart
