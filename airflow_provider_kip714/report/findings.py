"""The report's findings, first on the page: anomalies, silent clients, throttled clients, plugin errors.

Each becomes a ``findings.model.Finding`` (the type live mode announces, so the report, the UI page and
the alerts describe one thing one way) and a ``Card``: the finding plus one chart showing exactly what
it was judged against (``finding_charts``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind, Severity
from airflow_provider_kip714.report.charts import Chart
from spark_apps.kip714_common.landing_contract import CLIENT_IDENTITY_COLUMNS


@dataclass
class Card:
    """A finding as the page shows it: the finding, its detail rows and its chart (None past the budget)."""

    finding: Finding
    details: list[tuple[str, str]] = field(default_factory=list)
    chart: Chart | None = None


def _identity(row: Mapping[str, Any]) -> ClientIdentity:
    return ClientIdentity.from_row(
        {k: (None if missing(row.get(k)) else row.get(k)) for k in CLIENT_IDENTITY_COLUMNS}
    )


def missing(value: object) -> bool:
    return value is None or (not isinstance(value, str | dict | list) and bool(pd.isna(value)))


def number(value: object) -> float | None:
    return None if missing(value) else float(value)  # type: ignore[arg-type]


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds / 3600:.1f} h"


def anomaly_findings(anomalies: pd.DataFrame) -> list[Card]:
    cards = []
    for row in anomalies.to_dict("records"):
        peak, threshold = number(row.get("peak_value")), number(row.get("threshold"))
        baseline = row.get("baseline_kind") if not missing(row.get("baseline_kind")) else None
        against = "peers" if baseline == "peers" else "own" if row.get("kind") == "baseline" else "threshold"
        duration = _duration(number(row.get("duration_seconds")))
        if against == "peers":
            summary = (
                f"{peak:.3g} peer scales from the median of its peers for {duration} "
                f"(alarm above {threshold:g})"
            )
        else:
            word = "its own baseline's threshold" if against == "own" else "the threshold"
            test = f"{row.get('comparison')} {word} {threshold:.4g}"
            summary = f"{row.get('field')} reached {peak:.4g}, {test}, for {duration}"
        finding = Finding(
            kind=FindingKind.ANOMALY,
            severity=Severity(row.get("severity") or "warning"),
            since=pd.Timestamp(row["breach_start"]).to_pydatetime(),
            ended=pd.Timestamp(row["breach_end"]).to_pydatetime()
            if not missing(row.get("breach_end"))
            else None,
            summary=summary,
            client=_identity(row),
            metric_name=str(row.get("metric_name")),
            attributes_key=None if missing(row.get("attributes_key")) else str(row["attributes_key"]),
            observed=peak,
            expected=threshold,
            against=against,
            peer_group=None if missing(row.get("peer_group")) else str(row["peer_group"]),
        )
        details = [
            ("rule", str(row.get("rule_name") or "")),
            ("labels", str(row.get("attributes_key") or "(none)")),
        ]
        if not missing(row.get("excess_ratio")):
            details.append(("excess", f"{float(row['excess_ratio']):+.0%} over the threshold"))
        cards.append(Card(finding, details))
    return cards


def silent_findings(silent: pd.DataFrame) -> list[Card]:
    cards = []
    for row in silent.to_dict("records"):
        instance = None if missing(row.get("client_instance_id")) else row["client_instance_id"]
        broker = None if missing(row.get("broker_node_id")) else int(row["broker_node_id"])
        unseen = number(row.get("unseen_instances"))
        reason = "" if missing(row.get("reason")) else str(row["reason"])
        summary = reason or (
            f"{int(unseen)} instance(s) known to broker {broker} not pushing" if unseen else "no push"
        )
        finding = Finding(
            kind=FindingKind.SILENT_CLIENT,
            severity=Severity.WARNING,
            since=pd.Timestamp(row["silent_since"]).to_pydatetime(),
            summary=summary,
            client=_identity(row) if instance else ClientIdentity(),
            broker_node_id=broker,
            observed=number(row.get("landed_pushes")),
            expected=number(row.get("expected_pushes")),
            against="expected_pushes",
        )
        cards.append(
            Card(
                finding,
                [
                    ("last push", _time(row.get("last_push_time"))),
                    ("terminating push", str(row.get("terminated"))),
                ],
            )
        )
    return cards


def throttled_findings(broker_clients: pd.DataFrame) -> list[Card]:
    if broker_clients.empty:
        return []
    flagged = broker_clients[broker_clients["high_throttle_ratio"].fillna(False)]
    cards = []
    for _instance, part in flagged.groupby("client_instance_id", dropna=False):
        first = part.sort_values("bucket_start").iloc[0].to_dict()
        ratio = float(part["throttle_ratio"].max())
        finding = Finding(
            kind=FindingKind.THROTTLED_CLIENT,
            severity=Severity.WARNING,
            since=pd.Timestamp(first["bucket_start"]).to_pydatetime(),
            summary=f"broker throttled up to {ratio:.0%} of its pushes in {len(part)} bucket(s)",
            client=_identity(first),
            broker_node_id=None if missing(first.get("broker_node_id")) else int(first["broker_node_id"]),
            observed=ratio,
            against="ratio",
        )
        cards.append(Card(finding))
    return cards


def plugin_error_findings(broker_metrics: pd.DataFrame) -> list[Card]:
    if broker_metrics.empty:
        return []
    cards = []
    for node, part in broker_metrics.groupby("broker_node_id", dropna=False):
        errors = part[part["plugin_errors"].fillna(0) > 0].sort_values("bucket_start")
        if errors.empty:
            continue
        total, exported = (
            float(part["plugin_errors"].fillna(0).sum()),
            float(part["pushes_exported"].fillna(0).sum()),
        )
        failing = (
            bool(part["plugin_failing"].fillna(False).any()) if "plugin_failing" in part.columns else False
        )
        finding = Finding(
            kind=FindingKind.PLUGIN_ERRORS,
            severity=Severity.CRITICAL if failing else Severity.WARNING,
            since=pd.Timestamp(errors["bucket_start"].iloc[0]).to_pydatetime(),
            summary=f"{int(total)} push(es) the plugin failed to export, {int(exported)} exported"
            + (" (plugin failing)" if failing else ""),
            broker_node_id=None if missing(node) else int(node),
            observed=total,
            expected=exported,
            against="ratio",
        )
        cards.append(Card(finding))
    return cards


def ordered(cards: Sequence[Card]) -> list[Card]:
    """Critical first, then the oldest: what has been wrong longest leads."""
    return sorted(cards, key=lambda c: (c.finding.severity is not Severity.CRITICAL, c.finding.since))


def _time(value: object) -> str:
    return "" if missing(value) else pd.Timestamp(value).strftime("%Y-%m-%d %H:%M:%S")
