"""Findings from the analytics tables of one analysis, and the transitions against what is already open.

What counts as a finding (one episode of something wrong, ``model.FindingKind``):

- ``anomaly``: a row of ``anomalies`` (a static rule, the series' own baseline or its peers');
- ``silent_client``: a ``delivery`` row with status ``silent`` (no push for several intervals, no
  terminating push);
- ``throttled_client``: a ``delivery`` row with status ``throttled``, or a ``broker_client_metrics`` row
  with ``high_throttle_ratio``;
- ``plugin_errors``: a ``broker_metrics`` row with ``plugin_failing`` or plugin errors.

``transitions`` compares what the tables show now with the ledger's open findings by episode key
(what and who, without since when): a new key opens a finding; an open key no longer seen resolves it,
except a silent client, which resolves only on evidence (the client is seen pushing again): a client
that stays silent drops out of a trailing window's tables, and that is not a recovery.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import pandas as pd

from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind, Severity
from airflow_provider_kip714.findings.store import FindingsLedger

_SEVERE_THROTTLE_RATIO = 0.5


def current_findings(tables: dict[str, pd.DataFrame]) -> list[Finding]:
    """Every finding the tables show, one per episode key (the earliest ``since`` wins)."""
    found: dict[tuple[str, ...], Finding] = {}
    for finding in (
        *_anomalies(tables.get("anomalies")),
        *_delivery(tables.get("delivery")),
        *_broker_client(tables.get("broker_client_metrics")),
        *_plugin_errors(tables.get("broker_metrics")),
    ):
        known = found.get(finding.episode_key)
        if known is None or finding.since < known.since:
            found[finding.episode_key] = finding
    return list(found.values())


def pushing_instances(tables: dict[str, pd.DataFrame]) -> set[str]:
    """Client instances the delivery table shows pushing without a silence (evidence of recovery)."""
    delivery = tables.get("delivery")
    if delivery is None or delivery.empty or "status" not in delivery.columns:
        return set()
    pushing = delivery[(delivery["status"] != "silent") & delivery["client_instance_id"].notna()]
    return set(pushing["client_instance_id"].astype(str))


def transitions(
    ledger: FindingsLedger, current: Iterable[Finding], pushing: set[str], now: datetime
) -> list[Finding]:
    """Opened and resolved findings, in that order; the ledger is left as it was (``queue`` records)."""
    seen = {finding.episode_key: finding for finding in current}
    open_by_key = {finding.episode_key: finding for finding in ledger.open.values()}
    opened = [finding for key, finding in seen.items() if key not in open_by_key]
    resolved = []
    for key, finding in open_by_key.items():
        if key in seen:
            continue
        if finding.kind is FindingKind.SILENT_CLIENT and finding.client.client_instance_id not in pushing:
            continue  # still silent, or not in this window at all: no evidence of recovery
        resolved.append(finding.resolved(now))
    return sorted(opened, key=lambda f: f.since) + resolved


def _rows(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    """The rows as dicts, a missing value (NaN, NaT) as None: an absent label is no label, not "nan"."""
    if frame is None or frame.empty:
        return []
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def _number(value: object) -> float | None:
    if value is None:
        return None
    number = float(value)  # type: ignore[arg-type]
    return None if math.isnan(number) else number


def _time(value: object) -> datetime:
    return pd.Timestamp(value).tz_convert("UTC").to_pydatetime()  # type: ignore[arg-type]


def _anomalies(frame: pd.DataFrame | None) -> Iterable[Finding]:
    for row in _rows(frame):
        against = row.get("baseline_kind") or "threshold"
        peak, threshold = _number(row.get("peak_value")), _number(row.get("threshold"))
        field = row.get("field") or "value"
        comparison = row.get("comparison") or "against"
        yield Finding(
            kind=FindingKind.ANOMALY,
            severity=Severity(row.get("severity") or "warning"),
            since=_time(row["breach_start"]),
            summary=(
                f"{row.get('metric_name')} {field} reached {_shown(peak)} ({comparison} {against} "
                f"{_shown(threshold)}) for {int(row.get('duration_seconds') or 0)} s"
            ),
            client=ClientIdentity.from_row(row),
            metric_name=row.get("metric_name"),
            attributes_key=row.get("attributes_key"),
            observed=peak,
            expected=threshold,
            against=against,
            peer_group=row.get("peer_group"),
        )


def _delivery(frame: pd.DataFrame | None) -> Iterable[Finding]:
    for row in _rows(frame):
        if row.get("client_instance_id") is None:
            continue  # a broker row (instances the broker knows that do not push)
        status = row.get("status")
        if status == "silent":
            expected, landed = _number(row.get("expected_pushes")), _number(row.get("landed_pushes"))
            since = _time(row.get("silent_since") or row.get("last_push_time"))
            yield Finding(
                kind=FindingKind.SILENT_CLIENT,
                severity=Severity.CRITICAL,
                since=since,
                summary=(
                    f"no push since {since:%H:%M:%S} UTC and no terminating push "
                    f"({_shown(landed)} of {_shown(expected)} expected pushes landed)"
                ),
                client=ClientIdentity.from_row(row),
                observed=landed,
                expected=expected,
                against="expected_pushes",
            )
        elif status == "throttled":
            throttled = _number(row.get("throttled_pushes"))
            yield Finding(
                kind=FindingKind.THROTTLED_CLIENT,
                severity=Severity.WARNING,
                since=_time(row.get("first_push_time") or row["hour_start"]),
                summary=f"{_shown(throttled)} pushes throttled by the broker (faster than its interval)",
                client=ClientIdentity.from_row(row),
                observed=throttled,
                expected=0.0,
                against="expected_pushes",
            )


def _broker_client(frame: pd.DataFrame | None) -> Iterable[Finding]:
    for row in _rows(frame):
        if not row.get("high_throttle_ratio") or row.get("client_instance_id") is None:
            continue
        ratio = _number(row.get("throttle_ratio"))
        yield Finding(
            kind=FindingKind.THROTTLED_CLIENT,
            severity=Severity.CRITICAL if (ratio or 0) >= _SEVERE_THROTTLE_RATIO else Severity.WARNING,
            since=_time(row["bucket_start"]),
            summary=f"{_shown(ratio)} of its pushes throttled on broker {row.get('broker_node_id')}",
            client=ClientIdentity.from_row(row),
            observed=ratio,
            expected=0.0,
            against="ratio",
        )


def _plugin_errors(frame: pd.DataFrame | None) -> Iterable[Finding]:
    for row in _rows(frame):
        errors = _number(row.get("plugin_errors")) or 0.0
        if not row.get("plugin_failing") and errors <= 0:
            continue
        node = row.get("broker_node_id")
        yield Finding(
            kind=FindingKind.PLUGIN_ERRORS,
            severity=Severity.CRITICAL if row.get("plugin_failing") else Severity.WARNING,
            since=_time(row["bucket_start"]),
            summary=(
                f"{_shown(errors)} plugin export errors "
                f"(error ratio {_shown(_number(row.get('plugin_error_ratio')))})"
            ),
            broker_node_id=None if node is None else int(node),
            observed=errors,
            expected=0.0,
            against="ratio",
        )


def _shown(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.4g}"
