"""The page's findings-first view of one run's tables, and of live mode's state.

The same content as the report (``report.assemble``: finding cards with their charts, one chart per
metric across clients), over the newest ``span`` of the run's data and narrowed by the page's filters:
client (id or instance, a substring), consumer group, library and version, principal. Live mode's
state is read only through ``findings.store.LiveStore``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

import pandas as pd

from airflow_provider_kip714.analytics.tables import read_table
from airflow_provider_kip714.findings.model import Finding
from airflow_provider_kip714.findings.store import AutoWindow, LiveStatus, LiveStore
from airflow_provider_kip714.report import fleet_health
from airflow_provider_kip714.report.assemble import GROUP_COLUMN, Content, Tables, assemble, read_rollups
from airflow_provider_kip714.storage.data_root import RunArea, StoragePath

DEFAULT_SPAN: Final = timedelta(hours=1)
PAGE_CHARTS: Final = 24
PAGE_CARDS: Final = 12
PAGE_TOP: Final = 8


@dataclass(frozen=True)
class Filters:
    """What the page's filter form asked for; empty strings filter nothing."""

    client: str = ""
    group: str = ""
    library: str = ""
    principal: str = ""

    @property
    def active(self) -> bool:
        return any((self.client, self.group, self.library, self.principal))


@dataclass(frozen=True)
class Choices:
    """The values the filter form offers, from the run's rollups."""

    groups: list[str] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)
    principals: list[str] = field(default_factory=list)


def _library(frame: pd.DataFrame) -> pd.Series:
    name = frame.get("client_software_name", pd.Series("", index=frame.index)).fillna("")
    version = frame.get("client_software_version", pd.Series("", index=frame.index)).fillna("")
    return (name + " " + version).str.strip()


def _groups(rollups: pd.DataFrame) -> pd.DataFrame:
    """client_instance_id -> consumer group (``group_id`` resource attribute), one row per pair."""
    if rollups.empty or GROUP_COLUMN not in rollups.columns:
        return pd.DataFrame(columns=["client_instance_id", "group"])
    firsts = rollups.drop_duplicates("client_instance_id")
    return pd.DataFrame(
        {"client_instance_id": firsts["client_instance_id"], "group": firsts[GROUP_COLUMN].fillna("")}
    )


def choices(rollups: pd.DataFrame) -> Choices:
    if rollups.empty:
        return Choices()
    groups = _groups(rollups)["group"]
    return Choices(
        groups=sorted({g for g in groups if g}),
        libraries=sorted({lib for lib in _library(rollups.drop_duplicates("client_instance_id")) if lib}),
        principals=sorted({str(p) for p in rollups["principal"].dropna().unique() if p}),
    )


def matching_instances(rollups: pd.DataFrame, filters: Filters) -> set[str] | None:
    """The instances the filters keep (None: no filter), judged on the rollups' identities."""
    if not filters.active:
        return None
    if rollups.empty:
        return set()
    clients = rollups.drop_duplicates("client_instance_id")
    keep = pd.Series(True, index=clients.index)
    if filters.client:
        needle = filters.client.lower()
        ids = clients["client_id"].fillna("").str.lower().str.contains(needle, regex=False)
        keep &= ids | clients["client_instance_id"].fillna("").str.lower().str.contains(needle, regex=False)
    if filters.library:
        keep &= _library(clients) == filters.library
    if filters.principal:
        keep &= clients["principal"].fillna("") == filters.principal
    if filters.group:
        groups = _groups(rollups).set_index("client_instance_id")["group"]
        keep &= clients["client_instance_id"].map(groups).fillna("") == filters.group
    return set(clients.loc[keep, "client_instance_id"])


def _only(frame: pd.DataFrame, instances: set[str] | None) -> pd.DataFrame:
    if instances is None or frame.empty or "client_instance_id" not in frame.columns:
        return frame
    return frame[frame["client_instance_id"].isin(instances)]


def _newest(frame: pd.DataFrame, column: str, since: pd.Timestamp | None) -> pd.DataFrame:
    if frame.empty or since is None or column not in frame.columns:
        return frame
    return frame[frame[column] >= since]


@dataclass
class RunView:
    content: Content
    choices: Choices
    since: pd.Timestamp | None
    anomalies: pd.DataFrame
    rollup_rows: int


def run_view(area: RunArea, filters: Filters, span: timedelta = DEFAULT_SPAN) -> RunView:
    """Findings and metric charts of the newest ``span`` of a run's data, for the clients the filters keep."""
    rollups = read_rollups(area)
    since = rollups["bucket_start"].max() - span if not rollups.empty else None
    rollups = _newest(rollups, "bucket_start", since)
    keep = matching_instances(rollups, filters)
    anomalies = read_table(area, "anomalies")
    delivery = _only(read_table(area, "delivery"), keep)
    silent, _ = fleet_health.delivery_rows(delivery)
    broker_clients = read_table(area, "broker_client_metrics")
    tables = Tables(
        rollups=_only(rollups, keep),
        thresholds=read_table(area, "thresholds"),
        anomalies=_only(_newest(anomalies, "breach_end", since), keep),
        broker_metrics=_newest(read_table(area, "broker_metrics"), "bucket_start", since),
        broker_clients=_only(_newest(broker_clients, "bucket_start", since), keep),
        delivery=delivery,
        silent=silent,
    )
    content = assemble(tables, max_plots=PAGE_CHARTS, top=PAGE_TOP, max_cards=PAGE_CARDS)
    return RunView(content, choices(rollups), since, anomalies, len(rollups))


@dataclass(frozen=True)
class LiveView:
    """Live mode's state: how fresh, what is open, which windows it opened (and why)."""

    status: LiveStatus | None
    open_findings: Sequence[Finding]
    auto_windows: Sequence[AutoWindow]
    error: str | None = None

    @property
    def exists(self) -> bool:
        return self.status is not None or bool(self.open_findings) or bool(self.auto_windows)


def live_view(root: StoragePath | None, now: datetime) -> LiveView:
    """Read through ``LiveStore``; an unreadable document is said in one line, not a 500."""
    store = LiveStore(root)
    try:
        windows = [w for w in store.auto_windows() if w.expires_at > now]
        return LiveView(store.status(), store.open_findings(), windows)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return LiveView(None, [], [], error=f"cannot read live mode's state under {store.root}: {err}")
