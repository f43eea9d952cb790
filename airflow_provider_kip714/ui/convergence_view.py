"""Live convergence of the windows open now, for the page: no Spark, computed on each page load.

A window is followed when its subscription is on the cluster now, has not expired (its name,
``window_name.py``) and a troubleshooting run the user may read recorded it
(``troubleshooting.window.write_convergence_windows``, written by the DAG as soon as the subscription
exists; the name carries only the expiry, so the creation time comes from that record). The data is
what that run's ``land_window`` has committed to its landing zone so far (``analytics.landed``), and
the computation is ``analytics.convergence_live`` (the Spark app's definition, on pyarrow).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

import pandas as pd

from airflow_provider_kip714.analytics.convergence_live import (
    DEFAULT_LOOKBACK,
    POINT_COLUMNS,
    ConvergenceSoFar,
    ConvergenceWindow,
    convergence_so_far,
)
from airflow_provider_kip714.analytics.landed import read_landed_points
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.troubleshooting.window import read_convergence_windows
from airflow_provider_kip714.ui.runs import SCHEDULED_KEY, RunChoice
from airflow_provider_kip714.ui.subscriptions_view import SubscriptionsView

log = logging.getLogger(__name__)

CLOCK_SKEW: Final = timedelta(minutes=5)
"""Files are pruned by record time; points are judged by their own (client) time: read a margin more."""
MAX_CLIENT_ROWS: Final = 50


@dataclass(frozen=True)
class LiveWindow:
    """One open window's convergence so far, and the run whose landing zone it was read from."""

    run_key: str
    result: ConvergenceSoFar

    @property
    def clients(self) -> list[dict[str, str]]:
        """The first matched clients, fastest first, as text (``not yet`` for those still to push)."""
        frame = self.result.clients
        rows = [] if frame.empty else frame.head(MAX_CLIENT_ROWS).to_dict("records")
        return [
            {
                "client_id": str(row["client_id"] or ""),
                "client_instance_id": str(row["client_instance_id"]),
                "software": f"{row['client_software_name'] or ''} {row['client_software_version'] or ''}",
                "first_push_time": "not yet"
                if pd.isna(row["first_push_time"])
                else f"{row['first_push_time']:%Y-%m-%d %H:%M:%S}",
                "delay_seconds": "" if pd.isna(row["delay_seconds"]) else f"{row['delay_seconds']:.1f}",
            }
            for row in rows
        ]


@dataclass
class LiveConvergence:
    computed_at: datetime
    windows: list[LiveWindow] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    """Open window subscriptions no readable run recorded (opened by the CLI or another DAG)."""
    hidden: bool = False


def _recorded(runs: Sequence[RunChoice]) -> dict[str, tuple[RunChoice, ConvergenceWindow]]:
    """Window name -> (run, window) over the troubleshooting runs the user may read, newest run first."""
    found: dict[str, tuple[RunChoice, ConvergenceWindow]] = {}
    for run in runs:
        if run.key == SCHEDULED_KEY:
            continue
        for window in read_convergence_windows(run.area):
            found.setdefault(window.name, (run, window))
    return found


def _follow(area: RunArea, window: ConvergenceWindow, now: datetime) -> ConvergenceSoFar:
    try:
        since = window.subscribed_at - DEFAULT_LOOKBACK - CLOCK_SKEW
        points = read_landed_points(area.landing, POINT_COLUMNS, since=since)
        return convergence_so_far(points, window, now)
    except Exception as err:  # one unreadable zone must not take the page down
        log.warning("live convergence of %s: %s", window.name, err)
        return ConvergenceSoFar(window, now, problem=f"cannot read {area.landing}: {type(err).__name__}")


def live_convergence(
    subscriptions: SubscriptionsView, runs: Sequence[RunChoice], now: datetime
) -> LiveConvergence:
    """Convergence so far of every open window subscription the user may follow."""
    live = LiveConvergence(computed_at=now)
    if subscriptions.error is not None:
        live.hidden = True
        return live
    recorded = _recorded(runs)
    for row in subscriptions.rows:
        if row.expires_at is None or row.is_expired(now):
            continue
        if row.name not in recorded:
            live.untracked.append(row.name)
            continue
        run, window = recorded[row.name]
        live.windows.append(LiveWindow(run.key, _follow(run.area, window, now)))
    return live
