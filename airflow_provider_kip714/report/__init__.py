"""The troubleshooting report: one self-contained HTML page, findings first, built from a zone's tables.

    from airflow_provider_kip714.report import build_report
    result = build_report(troubleshoot_area(run_id), dag_id="kip714_troubleshoot", span=TimeSpan(start, end))
    print(result.html_path)   # <zone>/report/report.html

Modules, in the order imports run: ``html`` (escaped building blocks, the bundled chart files; a leaf),
``charts`` (charts as data), ``findings`` (tables -> finding cards), ``finding_charts`` (each card's
chart), ``cards`` (cards as HTML),
``fleet_health`` (delivery, convergence, capabilities), ``assemble`` (tables -> content, shared with the
UI page), ``page`` (the document), ``builder`` (writes it).

The UI page serves it at ``/kip714/reports/<run>/report.html`` (see ``report_url_path``).
"""

from __future__ import annotations

from airflow_provider_kip714.report.builder import REPORT_FILE, ReportResult, build_report, report_url_path

__all__ = ["REPORT_FILE", "ReportResult", "build_report", "report_url_path"]
