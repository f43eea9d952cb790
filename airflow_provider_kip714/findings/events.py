"""The findings of a DAG run's triggering ``kip714_findings`` asset events: read once, for every consumer."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_kip714.findings.model import FINDINGS_ASSET_NAME, Finding, FindingError

log = logging.getLogger(__name__)


def findings_of_events(events: Mapping[Any, Sequence[Any]]) -> tuple[list[Finding], int]:
    """The findings of a run's ``triggering_asset_events`` and how many events were not findings.

    Each event is listed under its asset and again under every alias it came through; only the asset's
    list is read, so an event counts once. A bad ``extra`` is logged in one line and counted; the
    other events are still read.
    """
    from airflow.sdk import Asset

    findings: list[Finding] = []
    bad = 0
    for key in list(events):
        if not isinstance(key, Asset) or key.name != FINDINGS_ASSET_NAME:
            continue
        for event in events[key]:
            try:
                findings.append(Finding.from_extra(event.extra))
            except FindingError as err:
                bad += 1
                log.warning("kip714: an asset event of %s is not a finding: %s", event.timestamp, err)
    return findings, bad
