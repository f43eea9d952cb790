"""Where the provider keeps its files: one root, overridable by ``KIP714_DATA_DIR``.

The DAGs, the Spark apps' arguments, the report and the UI page all find things through this, so
the layout is decided once:

    <root>/landing/                      raw/ datapoints/ quarantine/ of the scheduled landing
    <root>/analytics/                    rollups/ thresholds/ anomalies/ broker_metrics/ (kip714_rollups)
    <root>/troubleshoot/<run>/landing/   the same, for one troubleshooting window
    <root>/troubleshoot/<run>/analytics/
    <root>/troubleshoot/<run>/report/    report.html + PNG plots
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

DATA_DIR_ENV = "KIP714_DATA_DIR"
ANALYTICS_TABLES = ("rollups", "thresholds", "anomalies", "broker_metrics")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def data_root() -> Path:
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    airflow_home = os.environ.get("AIRFLOW_HOME")
    base = Path(airflow_home).expanduser() if airflow_home else Path.home() / ".local" / "share"
    return base / "kip714-data"


def safe_run_name(run_id: str) -> str:
    """Run ids contain ':' and '+'; keep folder names portable and readable."""
    return _UNSAFE.sub("_", run_id).strip("_") or "run"


@dataclass(frozen=True)
class Zone:
    """A landing zone plus the analytics computed from it."""

    root: Path

    @property
    def landing(self) -> Path:
        return self.root / "landing"

    @property
    def analytics(self) -> Path:
        return self.root / "analytics"

    @property
    def report(self) -> Path:
        return self.root / "report"

    def table(self, name: str) -> Path:
        return self.analytics / name


def scheduled_zone(root: Path | None = None) -> Zone:
    return Zone(root or data_root())


def troubleshoot_zone(run_id: str, root: Path | None = None) -> Zone:
    return Zone((root or data_root()) / "troubleshoot" / safe_run_name(run_id))


def troubleshoot_zones(root: Path | None = None) -> list[Zone]:
    """Every troubleshooting run's zone, newest first."""
    base = (root or data_root()) / "troubleshoot"
    if not base.is_dir():
        return []
    runs = sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    return [Zone(p) for p in runs]
