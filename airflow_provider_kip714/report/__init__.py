"""The troubleshooting report: one HTML page with PNG plots, built from a zone's analytics tables.

    from airflow_provider_kip714.report import build_report
    result = build_report(troubleshoot_area(run_id), title="kip714_troubleshoot manual__2026-...")
    print(result.html_path)   # <zone>/report/report.html

The UI page serves it at ``/kip714/reports/<run>/report.html`` (see ``report_url_path``).
"""

from __future__ import annotations

from airflow_provider_kip714.report.builder import REPORT_FILE, ReportResult, build_report, report_url_path

__all__ = ["REPORT_FILE", "ReportResult", "build_report", "report_url_path"]
