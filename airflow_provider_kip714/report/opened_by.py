"""The first card of a window a finding opened: that finding, with its chart as live mode saw it.

The request of such a run carries the finding (``opened_by_finding``, parsed here, once). Its chart is
drawn from the rows ``findings.evidence`` kept when the window was planned (live mode's rollups of the
finding's metric for the client and its peers, and its thresholds), by the same ``card_chart`` as every
card: the slow consumer against its group's band, even though the window itself subscribed it alone.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from airflow_provider_kip714.analytics.tables import read_table
from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.findings.evidence import evidence_area
from airflow_provider_kip714.findings.model import EXTRA_KEY, Finding, FindingError
from airflow_provider_kip714.report.assemble import read_rollups
from airflow_provider_kip714.report.charts import Chart, Palette
from airflow_provider_kip714.report.finding_charts import Inputs, card_chart
from airflow_provider_kip714.report.findings import Card
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.troubleshooting.form import OPENED_BY_KEY

log = logging.getLogger(__name__)

CHART_ID: Final = "opened-by-chart"


@dataclass(frozen=True)
class OpenedBy:
    """The finding that opened the window, as a card (its chart None without evidence), or why not."""

    card: Card | None
    problem: str | None = None


def opened_by(
    request: Mapping[str, Any], live: RunArea | None, palette: Palette, group_by: Sequence[str]
) -> OpenedBy | None:
    """None for a window opened by hand; else the card, charted from the kept evidence when there is some
    (a finding without a metric, or a window whose evidence could not be kept, has a card alone)."""
    body = request.get(OPENED_BY_KEY)
    if not isinstance(body, dict):
        return None
    try:
        finding = Finding.from_extra({EXTRA_KEY: body})
    except FindingError as err:
        return OpenedBy(None, str(err))
    card = Card(finding)
    if live is not None and finding.metric_name:
        try:
            card.chart = _evidence_chart(card, evidence_area(live, finding.finding_id), palette, group_by)
        except Exception as err:
            log.warning("The opening finding's kept evidence is unreadable: %s", printable(str(err), 300))
    return OpenedBy(card)


def _evidence_chart(card: Card, evidence: RunArea, palette: Palette, group_by: Sequence[str]) -> Chart | None:
    rollups = read_rollups(evidence)
    if rollups.empty:
        return None
    empty = pd.DataFrame()
    inputs = Inputs(rollups, read_table(evidence, "thresholds"), empty, empty, group_by, None)
    return card_chart(card, CHART_ID, inputs, palette)
