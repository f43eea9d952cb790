"""The report's findings, first on the page: anomalies, silent clients, throttled clients, plugin errors.

``findings.from_tables`` reads them from the tables, as live mode does, so the report, the UI page and
the alerts describe one thing one way, with one severity. Here each becomes a ``Card``: the finding,
detail rows from its source row, and one chart showing exactly what it was judged against
(``finding_charts``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from airflow_provider_kip714.findings.from_tables import Sourced, number, table_findings, utc
from airflow_provider_kip714.findings.model import Finding, FindingKind, Severity
from airflow_provider_kip714.report.charts import Chart


@dataclass
class Card:
    """A finding as the page shows it: the finding, its detail rows and its chart (None past the budget)."""

    finding: Finding
    details: list[tuple[str, str]] = field(default_factory=list)
    chart: Chart | None = None


def finding_cards(tables: Mapping[str, pd.DataFrame]) -> list[Card]:
    """The tables' findings as cards, critical first, then the oldest (``ordered``)."""
    return ordered([_card(sourced) for sourced in table_findings(tables, broker_silences=True)])


def _card(sourced: Sourced) -> Card:
    finding, row = sourced.finding, sourced.row
    if finding.kind is FindingKind.ANOMALY:
        details = [
            ("rule", str(row.get("rule_name") or "")),
            ("labels", str(row.get("attributes_key") or "(none)")),
        ]
        excess = number(row.get("excess_ratio"))
        if excess is not None:
            details.append(("excess", f"{excess:+.0%} over the threshold"))
        if row.get("breach_end") is not None:
            finding = dataclasses.replace(finding, ended=utc(row["breach_end"]))
        return Card(finding, details)
    if finding.kind is FindingKind.SILENT_CLIENT:
        return Card(
            finding,
            [
                ("last push", _time(row.get("last_push_time"))),
                ("terminating push", str(row.get("terminated"))),
            ],
        )
    return Card(finding)


def ordered(cards: Sequence[Card]) -> list[Card]:
    """Critical first, then the oldest: what has been wrong longest leads."""
    return sorted(cards, key=lambda c: (c.finding.severity is not Severity.CRITICAL, c.finding.since))


def _time(value: Any) -> str:
    return "" if value is None else pd.Timestamp(value).strftime("%Y-%m-%d %H:%M:%S")
