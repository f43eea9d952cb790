"""Subscription convergence so far, from landed data with pyarrow: the UI's live view of open windows.

The definition is ``spark_apps/kip714_common/convergence.py`` (its module docstring); the Spark app
``convergence.py`` writes it as the ``convergence`` table once a window is over. The API server never
starts a JVM, so this module computes the same thing with pyarrow and pandas over what has landed so
far. It follows that definition rule for rule, and ``tests/spark/test_convergence_live_agrees.py``
runs both on the same landed data and requires the same rows:

- *matched clients*: instances with a client data point whose own time is in
  ``[subscribed_at - lookback, now)`` (the app's read window, ``now`` being its ``--end``) and whose
  identity matches every selector of the window (whole value; a null value never matches);
- *pushed under the window*: the first push at or after ``subscribed_at`` (its record timestamp, else
  the point's time) carrying a metric whose name, as the client sent it, starts with one of the
  window's prefixes (``*`` or ``""`` is every metric);
- the identity shown is the instance's newest data point's;
- ``pN_seconds``: with ``k = ceil(matched * share)``, the k-th smallest delay (at least the first) when
  at least k clients have pushed, else null (not reached yet).

Selector regexes run on RE2 (``contract.selectors.compile_pattern``: linear in the client-controlled
value); a regex only Java's engine takes cannot be judged here and is reported, not guessed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_kip714.contract.selectors import compile_pattern
from spark_apps.kip714_common.landing_contract import CLIENT_IDENTITY_COLUMNS

SHARES: Final = {"p50_seconds": 0.5, "p90_seconds": 0.9, "p100_seconds": 1.0}
"""The same shares as ``kip714_common.convergence.SHARES`` (a test keeps them equal)."""
DEFAULT_LOOKBACK: Final = timedelta(minutes=10)
"""The Spark app's ``--seen-lookback`` default."""
IDENTITY_COLUMNS: Final = CLIENT_IDENTITY_COLUMNS[1:]
"""What describes a matched instance beside its key (the newest data point's values)."""
POINT_COLUMNS: Final = [
    "record_type",
    "client_instance_id",
    *IDENTITY_COLUMNS,
    "client_source_port",
    "metric_name",
    "record_timestamp",
    "time",
]
"""The landing columns the computation reads (``analytics.landed.read_landed_points(columns=...)``)."""


@dataclass(frozen=True)
class ConvergenceWindow:
    """A window to follow: its subscription's name, creation time, metric prefixes and selectors."""

    name: str
    subscribed_at: datetime
    metrics: tuple[str, ...] = ("*",)
    match: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ConvergenceSoFar:
    """One window's convergence up to ``computed_at``: counts, shares and the per-client rows."""

    window: ConvergenceWindow
    computed_at: datetime
    matched_clients: int = 0
    converged_clients: int = 0
    shares: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(SHARES))
    clients: pd.DataFrame = field(default_factory=pd.DataFrame)
    problem: str | None = None
    """Why it could not be computed (a selector regex RE2 refuses), else None."""


def _matches(values: pa.ChunkedArray, pattern: str) -> pa.ChunkedArray:
    """Whole-value match of each value (null never matches); the regex runs once per distinct value."""
    compiled = compile_pattern(pattern)
    text = values.cast(pa.string())
    distinct = pc.unique(text).drop_null().to_pylist()
    hits = pa.array([value for value in distinct if compiled.fullmatch(value) is not None], pa.string())
    return pc.fill_null(pc.is_in(text, value_set=hits), False)


def _prefix_mask(names: pa.ChunkedArray, prefixes: Sequence[str]) -> pa.ChunkedArray | bool:
    if any(prefix in ("*", "") for prefix in prefixes):
        return True
    mask = None
    for prefix in prefixes:
        term = pc.fill_null(pc.starts_with(names, prefix), False)
        mask = term if mask is None else pc.or_(mask, term)
    return False if mask is None else mask


def _times(points: pa.Table) -> tuple[pd.Series, pd.Series]:
    """(the point's own time, the push's time: the record timestamp, else the point's time)."""
    point = points["time"].to_pandas().dt.tz_convert("UTC").dt.floor("us")
    record = points["record_timestamp"].to_pandas().dt.tz_convert("UTC")
    return point, record.fillna(point)


def share_delays(delays: Sequence[float], matched: int) -> dict[str, float | None]:
    """The delay by which each share of ``matched`` clients had pushed (null while not reached)."""
    ordered = sorted(delays)
    result: dict[str, float | None] = {}
    for name, share in SHARES.items():
        needed = math.ceil(matched * share)  # the Spark app's double arithmetic, kept identical
        result[name] = ordered[max(needed, 1) - 1] if ordered and len(ordered) >= needed else None
    return result


def convergence_so_far(
    points: pa.Table, window: ConvergenceWindow, now: datetime, lookback: timedelta = DEFAULT_LOOKBACK
) -> ConvergenceSoFar:
    """``window``'s convergence from landed ``points`` (``POINT_COLUMNS``) up to ``now``."""
    result = ConvergenceSoFar(window, now)
    client = pc.and_(
        pc.fill_null(pc.equal(points["record_type"], "client"), False),
        pc.and_(pc.is_valid(points["client_instance_id"]), pc.is_valid(points["metric_name"])),
    )
    rows = points.filter(client)
    point_time, times = _times(rows)
    seen = (point_time >= window.subscribed_at - lookback) & (point_time < now)  # the app's read window
    mask = pa.array(seen.to_numpy(dtype=bool))
    try:
        for selector, pattern in window.match.items():
            mask = pc.and_(mask, _matches(rows[selector], pattern))
    except ValueError as err:
        result.problem = f"a selector regex cannot be judged here ({err})"
        return result
    under = pc.and_(
        pa.array((times >= window.subscribed_at).to_numpy(dtype=bool)),
        _prefix_mask(rows["metric_name"], window.metrics),
    )
    frame = rows.select(["client_instance_id", *IDENTITY_COLUMNS]).to_pandas()
    frame["_time"] = times.to_numpy()
    frame["_point"] = point_time.to_numpy()
    frame["_under"] = under.to_numpy(zero_copy_only=False)
    frame = frame[mask.to_numpy(zero_copy_only=False)]
    if frame.empty:
        return result
    newest = frame.sort_values("_point").groupby("client_instance_id").tail(1).set_index("client_instance_id")
    first = frame[frame["_under"]].groupby("client_instance_id")["_time"].min()
    clients = newest[list(IDENTITY_COLUMNS)].copy()
    clients["first_push_time"] = first.reindex(clients.index)
    at = pd.Timestamp(window.subscribed_at).tz_convert("UTC")
    clients["delay_seconds"] = (clients["first_push_time"] - at).dt.total_seconds()
    clients = clients.reset_index().sort_values(["delay_seconds", "client_instance_id"], na_position="last")
    delays = [float(d) for d in clients["delay_seconds"].dropna()]
    result.matched_clients = len(clients)
    result.converged_clients = len(delays)
    result.shares = share_delays(delays, len(clients))
    result.clients = clients.reset_index(drop=True)
    return result
