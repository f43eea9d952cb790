"""Findings from the analytics tables of one analysis, and the transitions against what is already open.

What counts as a finding, and how bad, is ``from_tables`` (shared with the report and the UI page).

``transitions`` compares what the tables show now with the ledger's open findings by episode key
(what and who, without since when): a new key opens a finding; an open key no longer seen resolves it,
except a silent client, which resolves only on evidence (the client is seen pushing again): a client
that stays silent drops out of a trailing window's tables, and that is not a recovery.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import pandas as pd

from airflow_provider_kip714.findings.from_tables import table_findings
from airflow_provider_kip714.findings.model import Finding, FindingKind
from airflow_provider_kip714.findings.store import FindingsLedger


def current_findings(tables: dict[str, pd.DataFrame]) -> list[Finding]:
    """Every client and broker finding the tables show, one per episode key (``from_tables``)."""
    return [sourced.finding for sourced in table_findings(tables)]


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
