"""A finding's evidence as live mode saw it, kept for the report of the window the finding opened.

Live mode's tables hold its trailing minutes only: each cycle replaces them. By the time a window that a
finding opened (``kip714_auto_window``) writes its report, the rows that showed the finding are gone,
and the window's own tables hold the one client it names: its peers are not subscribed at high
resolution. So when the window is planned, the finding's rows are copied from the live tables to
``<root>/live/evidence/<finding id>/``: the live rollups of the finding's metric for every instance (the
client and its peers) and the live thresholds of that metric. The report of any run the finding opened
(the ``opened_by_finding`` of its request) draws the finding's card from them: the client against its
peers' band, or against its own baseline, as live mode judged it (``report/finding_charts.card_chart``,
the same chart as any card). Keyed by the finding, not the run: ``airflow dags test`` (the demo) picks
its own run id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Final

from airflow_provider_kip714.analytics.tables import copy_rows
from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.findings.model import Finding
from airflow_provider_kip714.storage.data_root import RunArea, remove_tree, safe_run_name

log = logging.getLogger(__name__)

EVIDENCE_TABLES: Final = ("rollups", "thresholds")


def evidence_area(live: RunArea, finding_id: str) -> RunArea:
    """Where a finding's rows are kept: ``<live>/evidence/<finding id>`` (its ``analytics/`` tables)."""
    return RunArea(live.root / "evidence" / safe_run_name(finding_id))


def prune_evidence(live: RunArea, finding_ids: Iterable[str]) -> list[str]:
    """Remove the evidence of every finding but ``finding_ids`` (the auto-windows still recorded);
    returns the folder names removed. Best effort, like keeping it."""
    base = live.root / "evidence"
    keep = {safe_run_name(finding_id) for finding_id in finding_ids}
    removed = []
    try:
        for folder in base.iterdir() if base.is_dir() else []:
            if folder.name not in keep:
                remove_tree(folder)
                removed.append(folder.name)
    except Exception as err:
        log.warning("Could not prune live mode's kept evidence: %s", printable(str(err), 300))
    return removed


def keep_evidence(finding: Finding, live: RunArea) -> dict[str, int]:
    """Copy the live rows of ``finding``'s metric into ``evidence_area``; table -> rows copied.

    Findings without a metric (a silent or throttled client, a failing plugin) keep nothing: their
    charts come from the window's own tables (delivery, broker metrics) or have none. Best effort: the
    window matters more than its chart, so any failure is logged and the window opens all the same."""
    if not finding.metric_name:
        return {}
    target = evidence_area(live, finding.finding_id)
    copied: dict[str, int] = {}
    for table in EVIDENCE_TABLES:
        try:
            copied[table] = copy_rows(live, target, table, {"metric_name": finding.metric_name})
        except Exception as err:
            log.warning(
                "Could not keep live mode's %s rows of %s for the window's report: %s",
                table,
                printable(finding.metric_name, 200),
                printable(str(err), 300),
            )
    return copied
