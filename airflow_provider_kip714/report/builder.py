"""Build the troubleshooting report of one zone: ``<zone>/report/report.html`` (one self-contained file).

Inputs are the Spark apps' tables under ``<zone>/analytics`` (rollups, thresholds, anomalies,
broker_metrics, broker_client_metrics, delivery, convergence, capabilities); any of them may be missing
or empty (a window where nothing breached, a cluster without broker records), and the page says so
instead of failing. Charts are interactive (``charts``, the bundled uPlot); mails carry text and a link.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Final

from airflow_provider_kip714.clock import TimeSpan
from airflow_provider_kip714.contract.selectors import MatchInput, match_map
from airflow_provider_kip714.report import fleet_health
from airflow_provider_kip714.report.assemble import DEFAULT_MAX_PLOTS, assemble, read_tables
from airflow_provider_kip714.report.charts import DEFAULT_TOP
from airflow_provider_kip714.report.opened_by import opened_by
from airflow_provider_kip714.report.page import Body, Headline, render_page
from airflow_provider_kip714.storage.data_root import (
    RunArea,
    remove_tree,
    safe_run_name,
)
from spark_apps.kip714_common.identity import DEFAULT_CLIENT_GROUP_BY

REPORT_FILE: Final = "report.html"
SUMMARY_FILE: Final = "summary.json"
LEGACY_PLOTS_DIR: Final = "plots"
"""Where reports before the interactive charts kept their PNGs; a rebuild removes it."""
REPORT_URL_PREFIX: Final = "/kip714/reports"


def report_url_path(run_id: str) -> str:
    """Where the UI page serves a run's report (the path convention shared with the UI plugin)."""
    return f"{REPORT_URL_PREFIX}/{safe_run_name(run_id)}/{REPORT_FILE}"


@dataclass
class ReportResult:
    """What the report holds; returned to XCom by the report task and written as ``summary.json``."""

    html_path: str
    clients: int = 0
    findings: int = 0
    metrics_plotted: int = 0
    plots_skipped: int = 0
    quiet_metrics: int = 0
    anomalies: int = 0
    brokers: int = 0
    html_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def report_title(dag_id: str | None, span: TimeSpan | None, match: MatchInput = None) -> str:
    """A human headline: which DAG, when, which clients (``kip714_troubleshoot · 27 Nov 20:39-21:09 UTC ·
    client_id=orders-.*``)."""
    when = "all landed data"
    if span is not None:
        start, end = span.start, span.end
        same_day = start.date() == end.date()
        when = (
            f"{start:%d %b %Y %H:%M}-{end:%H:%M} UTC"
            if same_day
            else f"{start:%d %b %Y %H:%M} - {end:%d %b %Y %H:%M} UTC"
        )
    selectors = match_map(match)
    who = ", ".join(f"{k}={v}" for k, v in selectors.items()) if selectors else "all clients"
    return " · ".join([dag_id or "KIP-714 report", when, who])


def build_report(
    area: RunArea,
    *,
    title: str | None = None,
    dag_id: str | None = None,
    request: Mapping[str, Any] | None = None,
    span: TimeSpan | None = None,
    max_plots: int = DEFAULT_MAX_PLOTS,
    client_group_by: Sequence[str] = DEFAULT_CLIENT_GROUP_BY,
    match: MatchInput = None,
    top: int = DEFAULT_TOP,
    live: RunArea | None = None,
) -> ReportResult:
    """Write ``<zone>/report/report.html`` from ``<zone>/analytics``; replaces an old one.

    ``span`` limits buckets and findings to ``[start, end)``; ``max_plots`` bounds the charts (finding
    cards first, then metrics); ``top`` is how many clients a metric chart draws as lines before the rest
    become a band. ``match`` (KIP-714 ``selector=regex``) keeps only the targeted clients; broker health
    always covers the whole cluster. ``title`` defaults to ``report_title(dag_id, span, match)``. ``live``
    (live mode's area) holds the evidence of the finding that opened the window, if one did
    (``report/opened_by.py``).
    """
    tables = read_tables(area, span, match_map(match))
    content = assemble(
        tables,
        max_plots=max_plots,
        top=top,
        client_group_by=client_group_by,
        window_end=span.end if span else None,
    )
    head = Headline(
        title or report_title(dag_id, span, match),
        datetime.now(UTC),
        span,
        len(content.identities),
        request or {},
    )
    body = Body(
        cards=content.cards,
        overflow=content.overflow,
        metric_charts=content.metrics.charts,
        quiet_metrics=content.metrics.quiet,
        charts_skipped=content.metrics.skipped,
        broker_rows=content.broker_rows,
        broker_chart=content.broker_chart,
        fleet=fleet_health.render_sections(
            area,
            span,
            request,
            rollups=tables.rollups,
            palette=content.palette,
            labels=content.labels,
        ),
        palette=content.palette.as_json(),
        clients=content.identities,
        opened_by=opened_by(request or {}, live, content.palette, client_group_by),
    )
    text = render_page(head, body)
    report_dir = area.report
    report_dir.mkdir(parents=True, exist_ok=True)
    if (report_dir / LEGACY_PLOTS_DIR).exists():
        remove_tree(report_dir / LEGACY_PLOTS_DIR)
    html_path = report_dir / REPORT_FILE
    partial = report_dir / f".{REPORT_FILE}.partial"
    partial.write_text(text, encoding="utf-8")
    partial.replace(html_path)
    result = ReportResult(
        html_path=str(html_path),
        clients=len(content.identities),
        findings=content.findings,
        metrics_plotted=len(content.metrics.charts),
        plots_skipped=content.metrics.skipped,
        quiet_metrics=len(content.metrics.quiet),
        anomalies=len(tables.anomalies),
        brokers=len(content.broker_rows),
        html_bytes=len(text.encode("utf-8")),
    )
    (report_dir / SUMMARY_FILE).write_text(json.dumps(result.as_dict(), indent=2, default=str))
    return result
