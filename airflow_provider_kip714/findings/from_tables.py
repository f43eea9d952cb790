"""The analytics tables' rows as findings: the one translation live mode, the report and the UI page share.

What counts as a finding (one episode of something wrong, ``model.FindingKind``), and how bad it is:

- ``anomaly``: a row of ``anomalies`` (a static rule, the series' own baseline or its peers'); its
  severity is the rule's;
- ``silent_client``: a ``delivery`` row with status ``silent`` (no push for several intervals and no
  terminating push): a warning. Silence is the absence of evidence (a crash, a partition, a client
  that closed without its terminating push), where an anomaly is a measurement: an anomaly of the same
  age leads. A broker row (instances the broker knows that never pushed, no instance id) counts only
  where the caller asks for it (``broker_silences``: the report; live mode alerts on clients);
- ``throttled_client``: a ``delivery`` row with status ``throttled``, or ``broker_client_metrics`` rows
  with ``high_throttle_ratio``: critical when the broker throttled half its pushes or more;
- ``plugin_errors``: a broker's ``broker_metrics`` rows with plugin errors: critical when the plugin is
  failing (``plugin_failing``), else a warning.

A finding comes with its source row (``Sourced``): the report adds details from it (the rule, the
labels, the last push). One finding per episode key (what and who), the earliest ``since`` winning.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import pandas as pd

from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind, Severity

SEVERE_THROTTLE_RATIO: Final = 0.5
"""A client the broker throttled this share of pushes or more is a critical finding."""
TABLES: Final = ("anomalies", "delivery", "broker_client_metrics", "broker_metrics")
"""The tables findings come from."""


@dataclass(frozen=True)
class Sourced:
    """A finding and the table row it was read from (the first row, for one spread over several)."""

    finding: Finding
    row: dict[str, Any]


def table_findings(tables: Mapping[str, pd.DataFrame], *, broker_silences: bool = False) -> list[Sourced]:
    """Every finding the tables show, one per episode key (the earliest ``since`` wins), oldest first."""
    found: dict[tuple[str, ...], Sourced] = {}
    for sourced in (
        *_anomalies(tables.get("anomalies")),
        *_delivery(tables.get("delivery"), broker_silences),
        *_throttled(tables.get("broker_client_metrics")),
        *_plugin_errors(tables.get("broker_metrics")),
    ):
        key = sourced.finding.episode_key
        known = found.get(key)
        if known is None or sourced.finding.since < known.finding.since:
            found[key] = sourced
    return sorted(found.values(), key=lambda sourced: sourced.finding.since)


def rows(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    """The rows as dicts, a missing value (NaN, NaT) as None: an absent label is no label, not "nan"."""
    if frame is None or frame.empty:
        return []
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def number(value: object) -> float | None:
    """A table value as a float; None for a missing one (None, NaN, NaT, ``pd.NA``)."""
    if value is None or (not isinstance(value, str) and bool(pd.isna(value))):
        return None
    result = float(value)  # type: ignore[arg-type]
    return None if math.isnan(result) else result


def utc(value: object) -> datetime:
    stamp = pd.Timestamp(value)  # type: ignore[arg-type]
    return (stamp.tz_convert("UTC") if stamp.tzinfo else stamp.tz_localize("UTC")).to_pydatetime()


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    whole = int(seconds)
    if whole < 120:
        return f"{whole} s"
    if whole < 7200:
        return f"{whole // 60} min"
    return f"{whole / 3600:.1f} h"


def _shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _anomalies(frame: pd.DataFrame | None) -> Iterable[Sourced]:
    for row in rows(frame):
        peak, threshold = number(row.get("peak_value")), number(row.get("threshold"))
        baseline = row.get("baseline_kind")
        against = "peers" if baseline == "peers" else "own" if row.get("kind") == "baseline" else "threshold"
        duration = duration_text(number(row.get("duration_seconds")))
        if against == "peers":
            summary = (
                f"{_shown(peak)} peer scales from the median of its peers for {duration} "
                f"(alarm above {_shown(threshold)})"
            )
        else:
            word = "its own baseline's threshold" if against == "own" else "the threshold"
            summary = (
                f"{row.get('field') or 'value'} reached {_shown(peak)}, {row.get('comparison') or 'against'} "
                f"{word} {_shown(threshold)}, for {duration}"
            )
        yield Sourced(
            Finding(
                kind=FindingKind.ANOMALY,
                severity=Severity(row.get("severity") or "warning"),
                since=utc(row["breach_start"]),
                summary=summary,
                client=ClientIdentity.from_row(row),
                metric_name=row.get("metric_name"),
                attributes_key=row.get("attributes_key"),
                observed=peak,
                expected=threshold,
                against=against,
                peer_group=row.get("peer_group"),
            ),
            row,
        )


def _delivery(frame: pd.DataFrame | None, broker_silences: bool) -> Iterable[Sourced]:
    for row in rows(frame):
        instance, status = row.get("client_instance_id"), row.get("status")
        expected, landed = number(row.get("expected_pushes")), number(row.get("landed_pushes"))
        if status == "silent" and instance is not None:
            since = utc(row.get("silent_since") or row.get("last_push_time"))
            finding = Finding(
                kind=FindingKind.SILENT_CLIENT,
                severity=Severity.WARNING,
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
            yield Sourced(finding, row)
        elif status == "silent" and broker_silences and row.get("silent_since") is not None:
            broker = None if row.get("broker_node_id") is None else int(row["broker_node_id"])
            unseen = number(row.get("unseen_instances"))
            finding = Finding(
                kind=FindingKind.SILENT_CLIENT,
                severity=Severity.WARNING,
                since=utc(row["silent_since"]),
                summary=row.get("reason")
                or f"{int(unseen or 0)} instance(s) known to broker {broker} not pushing",
                broker_node_id=broker,
                observed=unseen,
                against="expected_pushes",
            )
            yield Sourced(finding, row)
        elif status == "throttled" and instance is not None:
            throttled = number(row.get("throttled_pushes"))
            finding = Finding(
                kind=FindingKind.THROTTLED_CLIENT,
                severity=Severity.WARNING,
                since=utc(row.get("first_push_time") or row["hour_start"]),
                summary=f"{_shown(throttled)} pushes throttled by the broker (faster than its interval)",
                client=ClientIdentity.from_row(row),
                observed=throttled,
                expected=0.0,
                against="expected_pushes",
            )
            yield Sourced(finding, row)


def _throttled(frame: pd.DataFrame | None) -> Iterable[Sourced]:
    """One finding per instance over its ``high_throttle_ratio`` buckets: since the first, its worst ratio."""
    flagged = [row for row in rows(frame) if row.get("high_throttle_ratio") and row.get("client_instance_id")]
    by_instance: dict[str, list[dict[str, Any]]] = {}
    for row in flagged:
        by_instance.setdefault(str(row["client_instance_id"]), []).append(row)
    for part in by_instance.values():
        part.sort(key=lambda row: row["bucket_start"])
        first = part[0]
        ratio = max((number(row.get("throttle_ratio")) or 0.0) for row in part)
        broker = first.get("broker_node_id")
        finding = Finding(
            kind=FindingKind.THROTTLED_CLIENT,
            severity=Severity.CRITICAL if ratio >= SEVERE_THROTTLE_RATIO else Severity.WARNING,
            since=utc(first["bucket_start"]),
            summary=f"the broker throttled up to {ratio:.0%} of its pushes in {len(part)} bucket(s)",
            client=ClientIdentity.from_row(first),
            observed=ratio,
            expected=0.0,
            against="ratio",
        )
        yield Sourced(finding, {**first, "broker_node_id": broker})


def _plugin_errors(frame: pd.DataFrame | None) -> Iterable[Sourced]:
    """One finding per broker over the buckets with plugin errors (or a failing plugin)."""
    by_broker: dict[object, list[dict[str, Any]]] = {}
    for row in rows(frame):
        by_broker.setdefault(row.get("broker_node_id"), []).append(row)
    for node, part in by_broker.items():
        failing = any(bool(row.get("plugin_failing")) for row in part)
        bad = sorted(
            (
                row
                for row in part
                if (number(row.get("plugin_errors")) or 0.0) > 0 or row.get("plugin_failing")
            ),
            key=lambda row: row["bucket_start"],
        )
        if not bad:
            continue
        errors = sum(number(row.get("plugin_errors")) or 0.0 for row in part)
        exported = sum(number(row.get("pushes_exported")) or 0.0 for row in part)
        finding = Finding(
            kind=FindingKind.PLUGIN_ERRORS,
            severity=Severity.CRITICAL if failing else Severity.WARNING,
            since=utc(bad[0]["bucket_start"]),
            summary=f"{int(errors)} push(es) the plugin failed to export, {int(exported)} exported"
            + (" (plugin failing)" if failing else ""),
            broker_node_id=None if node is None else int(node),  # type: ignore[call-overload]
            observed=errors,
            expected=exported,
            against="ratio",
        )
        yield Sourced(finding, bad[0])


__all__ = [
    "SEVERE_THROTTLE_RATIO",
    "TABLES",
    "Sourced",
    "duration_text",
    "number",
    "rows",
    "table_findings",
    "utc",
]
