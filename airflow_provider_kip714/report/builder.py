"""Build the troubleshooting report of one zone: ``<zone>/report/report.html`` plus ``plots/*.png``.

Inputs are the Spark apps' tables under ``<zone>/analytics`` (rollups, thresholds, anomalies,
broker_metrics, broker_client_metrics); any of them may be missing or empty (a window where nothing
breached, a cluster without broker records), and the page says so instead of failing.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from airflow_provider_kip714.analytics.plots import Series, ThresholdLine, broker_png, metric_png, write_png
from airflow_provider_kip714.analytics.tables import read_table
from airflow_provider_kip714.contract.selectors import (
    RULE_SELECTORS,
    MatchInput,
    compile_pattern,
    match_map,
    matcher,
)
from airflow_provider_kip714.report import fleet_health, page
from airflow_provider_kip714.storage.data_root import (
    RunArea,
    StoragePath,
    fsspec_location,
    is_local,
    safe_run_name,
)

log = logging.getLogger(__name__)

REPORT_FILE = "report.html"
SUMMARY_FILE = "summary.json"
PLOTS_DIR = "plots"
REPORT_URL_PREFIX = "/kip714/reports"
DEFAULT_MAX_PLOTS = 300
DEFAULT_CLIENT_GROUP_BY = ("client_software_name", "client_id")
IDENTITY_COLUMNS = (
    "client_id",
    "client_instance_id",
    "client_source_address",
    "client_software_name",
    "client_software_version",
    "principal",
)
_GROUP_SPLIT = re.compile(r",(?=(?:{})~)".format("|".join(RULE_SELECTORS)))
_UNSAFE_FILE = re.compile(r"[^A-Za-z0-9._-]+")


def report_url_path(run_id: str) -> str:
    """Where the UI page serves a run's report (the path convention shared with the UI plugin)."""
    return f"{REPORT_URL_PREFIX}/{safe_run_name(run_id)}/{REPORT_FILE}"


@dataclass
class ReportResult:
    """What the report holds; returned to XCom by the report task and written as ``summary.json``."""

    html_path: str
    clients: int = 0
    metrics_plotted: int = 0
    plots_skipped: int = 0
    anomalies: int = 0
    brokers: int = 0
    plots: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ClientPlot:
    metric_name: str
    image: str
    anomalous: bool


@dataclass
class ClientSection:
    identity: dict[str, str]
    metrics: int
    plots: list[ClientPlot] = field(default_factory=list)


def _file_part(text: str) -> str:
    return _UNSAFE_FILE.sub("_", text).strip("_")[:80] or "x"


def _static_rule_applies(client_group: str, identity: Mapping[str, str]) -> bool:
    """A static rule's ``client_group`` is ``*`` or ``selector~regex`` pairs; all must match whole values."""
    if not client_group or client_group == "*":
        return True
    for part in _GROUP_SPLIT.split(client_group):
        selector, _, pattern = part.partition("~")
        value = identity.get(selector) or ""
        try:  # client-controlled values: RE2, never a backtracking engine
            if compile_pattern(pattern).fullmatch(value) is None:
                return False
        except ValueError:
            return False
    return True


def _threshold_lines(
    thresholds: pd.DataFrame, metric: str, identity: Mapping[str, str], group_by: Sequence[str]
) -> list[tuple[str, ThresholdLine]]:
    """(field, line) pairs for one client's metric: static rules that match it and its baseline."""
    if thresholds.empty:
        return []
    rows = thresholds[thresholds["metric_name"] == metric]
    group = "|".join(identity.get(column) or "" for column in group_by)
    lines: list[tuple[str, ThresholdLine]] = []
    seen: set[tuple[str, str, float]] = set()
    for row in rows.itertuples(index=False):
        if row.kind == "static" and not _static_rule_applies(str(row.client_group), identity):
            continue
        if row.kind == "baseline" and row.client_group != group:
            continue
        # Baselines are learned per label set (e.g. per node); say which one a line belongs to.
        labels = getattr(row, "attributes_key", None) if row.kind == "baseline" else None
        labels = "" if labels is None or pd.isna(labels) or labels in ("", "{}") else f" {labels}"
        for value, severity in ((row.threshold, "warning"), (row.critical_threshold, "critical")):
            if value is None or pd.isna(value):
                continue
            key = (f"{row.rule_name}{labels}", severity, float(value))
            if key in seen:
                continue
            seen.add(key)
            label = f"{row.rule_name}{labels}: {row.field} {row.comparison}" + (
                " (critical)" if severity == "critical" else ""
            )
            lines.append((str(row.field), ThresholdLine(label, float(value), severity)))
    return lines


def _metric_series(rows: pd.DataFrame, fields: Sequence[str]) -> list[Series]:
    series: list[Series] = []
    for attributes_key, part in rows.groupby(rows["attributes_key"].fillna(""), sort=True):
        part = part.sort_values("bucket_start")
        for column in fields:
            if column not in part.columns or part[column].isna().all():
                continue
            label = column + (f" {attributes_key}" if attributes_key else "")
            series.append(Series(label, list(part["bucket_start"]), [float(v) for v in part[column]]))
    return series


def _client_identities(rollups: pd.DataFrame, anomalies: pd.DataFrame) -> dict[str, dict[str, str]]:
    identities: dict[str, dict[str, str]] = {}
    for frame in (rollups, anomalies):
        if frame.empty:
            continue
        for row in frame.drop_duplicates("client_instance_id").itertuples(index=False):
            instance = str(row.client_instance_id or "")
            identity = identities.setdefault(instance, {})
            for column in IDENTITY_COLUMNS:
                value = getattr(row, column, None)
                if value is not None and not pd.isna(value) and not identity.get(column):
                    identity[column] = str(value)
    return identities


def _selected(frame: pd.DataFrame, match: Mapping[str, str]) -> pd.DataFrame:
    """Rows of the clients the request targeted (whole-value regexes, like the broker's match).

    The tables keep no source port, so a ``client_source_port`` selector does not filter. A regex the
    local engine (RE2, linear time) refuses but the broker's Java engine took (a back-reference) does
    not filter either: the window's data came from the clients the broker matched.
    """
    judged = {selector: pattern for selector, pattern in match.items() if selector in frame.columns}
    if frame.empty or not judged:
        return frame
    try:
        matches = matcher(judged)
    except ValueError as err:
        log.warning("report: clients not filtered by %s (%s)", judged, err)
        return frame
    identities = frame[list(judged)].to_dict("records")
    return frame[[matches(identity) for identity in identities]]


def _clip(
    frame: pd.DataFrame, column: str, window: tuple[datetime, datetime] | None, end_column: str | None = None
) -> pd.DataFrame:
    """Rows overlapping ``[start, end)``: a bucket or breach that started just before the window counts."""
    if frame.empty or window is None or column not in frame.columns:
        return frame
    start, end = (_utc(moment) for moment in window)
    finishes = frame[end_column] if end_column in frame.columns else frame[column]
    inside = (finishes > start) | (frame[column] >= start)
    return frame[inside & (frame[column] < end)]


def _utc(moment: datetime) -> pd.Timestamp:
    stamp = pd.Timestamp(moment)
    return stamp.tz_convert("UTC") if stamp.tzinfo is not None else stamp.tz_localize("UTC")


def _client_sections(
    rollups: pd.DataFrame,
    thresholds: pd.DataFrame,
    anomalies: pd.DataFrame,
    plots_dir: Path,
    max_plots: int,
    group_by: Sequence[str],
) -> tuple[list[ClientSection], int]:
    identities = _client_identities(rollups, anomalies)
    anomalous = (
        set(zip(anomalies["client_instance_id"], anomalies["metric_name"], strict=True))
        if not anomalies.empty
        else set()
    )
    order = sorted(identities, key=lambda i: (identities[i].get("client_id", ""), i))
    plans: list[tuple[int, str, str]] = []  # (priority, instance, metric): anomalous metrics first
    by_client = {i: part for i, part in rollups.groupby("client_instance_id")} if not rollups.empty else {}
    for instance in order:
        part = by_client.get(instance)
        if part is None:
            continue
        for metric in sorted(part["metric_name"].dropna().unique()):
            plans.append((0 if (instance, metric) in anomalous else 1, instance, metric))
    chosen = {(i, m) for _, i, m in sorted(plans, key=lambda p: (p[0], order.index(p[1]), p[2]))[:max_plots]}
    skipped = len(plans) - len(chosen)

    sections: list[ClientSection] = []
    for index, instance in enumerate(order):
        identity = identities[instance]
        part = by_client.get(instance)
        metrics = sorted(part["metric_name"].dropna().unique()) if part is not None else []
        section = ClientSection(identity=identity, metrics=len(metrics))
        for number, metric in enumerate(sorted(metrics, key=lambda m: ((instance, m) not in anomalous, m))):
            if (instance, metric) not in chosen:
                continue
            rows = part[part["metric_name"] == metric]
            lines = _threshold_lines(thresholds, metric, identity, group_by)
            fields = ["signal", *sorted({f for f, _ in lines if f != "signal"})]
            unit = str(rows["metric_unit"].dropna().iloc[0]) if rows["metric_unit"].notna().any() else ""
            title = f"{identity.get('client_id', '?')} · {metric}"
            # The number keeps names distinct when two metric names differ only in unsafe characters.
            image = plots_dir / f"client{index:03d}-{number:03d}-{_file_part(metric)}.png"
            write_png(
                image, metric_png(title, unit, _metric_series(rows, fields), [line for _, line in lines])
            )
            section.plots.append(
                ClientPlot(metric, f"{PLOTS_DIR}/{image.name}", (instance, metric) in anomalous)
            )
        sections.append(section)
    return sections, skipped


def _broker_health(broker_metrics: pd.DataFrame, plots_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    images: list[str] = []
    if broker_metrics.empty:
        return rows, images
    groups = broker_metrics.groupby(["cluster_id", "broker_node_id"], dropna=False)
    for number, ((cluster, node), part) in enumerate(groups):
        exported = float(part["pushes_exported"].fillna(0).sum())
        throttled = float(part["throttled_pushes"].fillna(0).sum())
        errors = float(part["plugin_errors"].fillna(0).sum())
        attempts = exported + errors + throttled
        rows.append(
            {
                "cluster_id": cluster,
                "broker_node_id": node,
                "buckets": len(part),
                "instance_count_max": part["instance_count_max"].max(),
                "pushes_exported": exported,
                "throttled_pushes": throttled,
                "throttle_ratio": throttled / attempts if attempts else None,
                "unknown_subscription_requests": float(part["unknown_subscription_requests"].fillna(0).sum()),
                "plugin_errors": errors,
                "plugin_error_ratio": errors / (exported + errors) if exported + errors else None,
                "export_time_avg_ms": part["export_time_avg_ms"].mean(),
                "export_time_max_ms": part["export_time_max_ms"].max(),
                "export_time_p99_ms": part["export_time_p99_ms"].max(),
                "counter_resets": int(part["counter_resets"].fillna(0).sum()),
                "plugin_failing": bool(part["plugin_failing"].fillna(False).any()),
            }
        )
        image = plots_dir / f"broker{number:03d}-{_file_part(str(cluster))}-{_file_part(str(node))}.png"
        write_png(image, broker_png(f"broker {node} ({cluster})", part))
        images.append(f"{PLOTS_DIR}/{image.name}")
    return rows, images


def _remove_tree(path: StoragePath) -> None:
    if is_local(path):
        shutil.rmtree(path)
    else:
        filesystem, where = fsspec_location(path)
        filesystem.rm(where, recursive=True)


@dataclass(frozen=True)
class _Tables:
    """The analytics tables a report shows, clipped to its window (and, for clients, its selectors)."""

    rollups: pd.DataFrame
    thresholds: pd.DataFrame
    anomalies: pd.DataFrame
    broker_metrics: pd.DataFrame
    throttled_clients: pd.DataFrame


def _read_tables(
    zone: RunArea, window: tuple[datetime, datetime] | None, selectors: Mapping[str, str]
) -> _Tables:
    rollups = read_table(zone, "rollups")
    if not rollups.empty:
        rollups = _clip(rollups[rollups["record_type"] == "client"], "bucket_start", window, "bucket_end")
    rollups = _selected(rollups, selectors)
    thresholds = read_table(zone, "thresholds")
    anomalies = _selected(
        _clip(read_table(zone, "anomalies"), "breach_start", window, "breach_end"), selectors
    )
    broker_metrics = _clip(read_table(zone, "broker_metrics"), "bucket_start", window, "bucket_end")
    broker_clients = _clip(read_table(zone, "broker_client_metrics"), "bucket_start", window, "bucket_end")
    throttled_clients = (
        broker_clients[broker_clients["high_throttle_ratio"].fillna(False)]
        if not broker_clients.empty
        else broker_clients
    )
    return _Tables(rollups, thresholds, anomalies, broker_metrics, throttled_clients)


def _empty_plots_dir(report_dir: StoragePath) -> StoragePath:
    """``<report>/plots``, emptied: a rerun replaces the report, with no stale plots."""
    plots_dir = report_dir / PLOTS_DIR
    if plots_dir.exists():
        _remove_tree(plots_dir)
    plots_dir.mkdir(parents=True)
    return plots_dir


def build_report(
    zone: RunArea,
    *,
    title: str = "KIP-714 troubleshooting report",
    request: Mapping[str, Any] | None = None,
    window: tuple[datetime, datetime] | None = None,
    max_plots: int = DEFAULT_MAX_PLOTS,
    client_group_by: Sequence[str] = DEFAULT_CLIENT_GROUP_BY,
    match: MatchInput = None,
) -> ReportResult:
    """Write ``<zone>/report/report.html`` (and its plots) from ``<zone>/analytics``; replaces an old one.

    ``window`` limits the plotted buckets and anomalies to ``[start, end)``; ``max_plots`` bounds the
    work on big fleets (metrics with anomalies are plotted first, the rest are counted as skipped).
    ``match`` (KIP-714 ``selector=regex``) keeps only the targeted clients' plots and anomalies;
    broker health always covers the whole cluster.
    """
    if max_plots < 0:
        raise ValueError(f"max_plots: must be >= 0 (got {max_plots!r})")
    tables = _read_tables(zone, window, match_map(match))
    report_dir = zone.report
    plots_dir = _empty_plots_dir(report_dir)
    sections, skipped = _client_sections(
        tables.rollups, tables.thresholds, tables.anomalies, plots_dir, max_plots, client_group_by
    )
    brokers, broker_images = _broker_health(tables.broker_metrics, plots_dir)
    text = page.render_page(
        title=title,
        generated_at=datetime.now(UTC),
        window=window,
        request=request or {},
        anomalies=tables.anomalies,
        sections=sections,
        plots_skipped=skipped,
        brokers=brokers,
        broker_images=broker_images,
        throttled_clients=tables.throttled_clients,
        extra_sections=fleet_health.render_sections(zone, window, request),
    )
    html_path = report_dir / REPORT_FILE
    partial = report_dir / f".{REPORT_FILE}.partial"
    partial.write_text(text, encoding="utf-8")
    partial.replace(html_path)
    result = ReportResult(
        html_path=str(html_path),
        clients=len(sections),
        metrics_plotted=sum(len(s.plots) for s in sections),
        plots_skipped=skipped,
        anomalies=len(tables.anomalies),
        brokers=len(brokers),
        plots=[p.image for s in sections for p in s.plots] + broker_images,
    )
    (report_dir / SUMMARY_FILE).write_text(json.dumps(result.as_dict(), indent=2, default=str))
    return result
