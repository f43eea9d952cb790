"""The runs the page can show: the scheduled analytics, or one troubleshooting run's folder.

A ``RunChoice`` is what the ``?run=`` parameter names; its ``zone`` is the storage ``RunArea`` (landing,
analytics, report folders) and its ``owner`` the DAG whose runs a user must be allowed to read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_kip714.analytics.run_owner import SCHEDULED_DAG_ID, read_run_owner
from airflow_provider_kip714.storage.data_root import RunArea, scheduled_area, troubleshoot_areas

SCHEDULED_KEY = "scheduled"
RUN_FOLDER = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
"""Folder names ``safe_run_name`` writes (and older ones with dots): never a separator, never leading '.'."""


@dataclass(frozen=True)
class RunChoice:
    """One entry of the page's run list."""

    key: str
    title: str
    area: RunArea
    owner_dag_id: str | None
    """The DAG whose runs wrote this folder; None when unknown (then only users who may read all runs)."""

    @property
    def report_file(self) -> Path:
        return self.area.report / "report.html"


def _troubleshooting_choice(area: RunArea) -> RunChoice:
    owner = read_run_owner(area)
    title = f"Troubleshooting run {owner.run_id}" if owner else f"Troubleshooting folder {area.root.name}"
    return RunChoice(area.root.name, title, area, owner.dag_id if owner else None)


def run_choices() -> list[RunChoice]:
    """The scheduled analytics first, then troubleshooting runs, newest first."""
    choices = [
        RunChoice(SCHEDULED_KEY, "Scheduled analytics (kip714_rollups)", scheduled_area(), SCHEDULED_DAG_ID)
    ]
    choices.extend(
        _troubleshooting_choice(zone) for zone in troubleshoot_areas() if RUN_FOLDER.fullmatch(zone.root.name)
    )
    return choices


def find_run(key: str) -> RunChoice | None:
    """The run a query parameter names; None for anything not listed (no path tricks)."""
    if key != SCHEDULED_KEY and not RUN_FOLDER.fullmatch(key):
        return None
    return next((choice for choice in run_choices() if choice.key == key), None)
