"""``TroubleshootingReportOperator``: write a troubleshooting run's report and link to it from the UI.

The report lives at ``troubleshoot_area(run_id).report / "report.html"``; the provider's UI page
serves it at ``/kip714/reports/<run>/report.html``, which the task's extra link points to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator, BaseOperatorLink

from airflow_provider_kip714.analytics.run_owner import write_run_owner
from airflow_provider_kip714.clock import TimeSpan
from airflow_provider_kip714.report import build_report, report_url_path
from airflow_provider_kip714.report.builder import DEFAULT_MAX_PLOTS
from airflow_provider_kip714.storage.data_root import live_area, troubleshoot_area


class TroubleshootingReportLink(BaseOperatorLink):
    """ "Troubleshooting report" button on the task: the UI page's copy of ``report.html``."""

    name = "Troubleshooting report"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return report_url_path(ti_key.run_id)


def _instant(value: datetime | str | None) -> datetime | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


class TroubleshootingReportOperator(BaseOperator):
    """Build the run's report from ``<zone>/analytics``; returns (and logs) the HTML path.

    :param window_start: first instant plotted (templated; ISO string or datetime); default: everything.
    :param window_end: end of the window (exclusive).
    :param request: what was asked (selectors, metrics, interval...), shown at the top of the page.
    :param match: KIP-714 ``selector=regex`` entries (the window's match); only those clients are plotted.
    :param data_dir: root of the data layout (default ``KIP714_DATA_DIR`` or the Airflow home).
    :param max_plots: bound on charts (finding cards first, then one chart per metric).
    """

    template_fields: Sequence[str] = (
        "window_start",
        "window_end",
        "request",
        "match",
        "data_dir",
        "title",
    )
    operator_extra_links = (TroubleshootingReportLink(),)
    ui_color = "#fdf2e8"

    def __init__(
        self,
        *,
        window_start: datetime | str | None = None,
        window_end: datetime | str | None = None,
        request: Mapping[str, Any] | None = None,
        match: Sequence[str] | Mapping[str, str] | None = None,
        data_dir: str | None = None,
        title: str | None = None,
        max_plots: int = DEFAULT_MAX_PLOTS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.window_start = window_start
        self.window_end = window_end
        self.request = request
        self.match = match
        self.data_dir = data_dir
        self.title = title
        self.max_plots = max_plots

    def execute(self, context: Any) -> str:
        run_id = context["run_id"]
        root = Path(self.data_dir) if self.data_dir else None
        area = troubleshoot_area(run_id, root=root)
        start, end = _instant(self.window_start), _instant(self.window_end)
        span = TimeSpan(start, end) if start is not None and end is not None else None
        write_run_owner(area, self.dag_id, run_id)  # the UI shows the run to users who may read its runs
        self.log.info("Building the report of %s from %s", run_id, area.analytics)
        result = build_report(
            area,
            title=self.title,
            dag_id=self.dag_id,
            request=dict(self.request or {}),
            span=span,
            max_plots=self.max_plots,
            match=self.match,
            live=live_area(root),
        )
        self.log.info(
            "Report written: %s (%d client(s), %d finding(s), %d metric chart(s), %d skipped, "
            "%d anomaly(ies), "
            "%d broker(s))",
            result.html_path,
            result.clients,
            result.findings,
            result.metrics_plotted,
            result.plots_skipped,
            result.anomalies,
            result.brokers,
        )
        self.log.info("In the Airflow UI: %s", report_url_path(run_id))
        print(f"KIP714_REPORT {result.html_path}", flush=True)
        return result.html_path
