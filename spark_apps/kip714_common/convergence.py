"""Subscription convergence: how long a new subscription took to reach each matched client.

A client learns of a new subscription only when it next asks (GetTelemetrySubscriptions), which takes up
to its current push interval (5 minutes for a client no subscription matched). No Kafka plugin API passes
the push's subscription id, so "pushed under the window" is read from the data: the client's first push
at or after ``subscribed_at`` that carries a metric matching the window's prefixes. A client another
subscription already asked for the same metrics therefore converges at its first push after creation.

*Matched clients* are the instances seen in ``[subscribed_at - lookback, end)`` whose identity matches
every selector of the window (the whole value, as the broker matches). Clients that match but never pushed
under the window keep a row with a null ``first_push_time``. Per window, ``p50/p90/p100_seconds`` are the
delays by which 50, 90 and 100 % of the matched clients had pushed (null while not reached).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kip714_common.cli import parse_instant
from kip714_common.errors import SparkAppInputError
from kip714_common.landing_contract import CLIENT_IDENTITY_COLUMNS
from kip714_common.selectors import SELECTORS, selector_condition
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

SHARES = {"p50_seconds": 0.5, "p90_seconds": 0.9, "p100_seconds": 1.0}


@dataclass(frozen=True)
class WindowSpec:
    """One subscription to follow: its name, creation time, metric prefixes and selectors."""

    name: str
    subscribed_at: datetime
    metrics: tuple[str, ...] = ("*",)
    match: dict[str, str] = field(default_factory=dict)


def _window(index: int, entry: object) -> WindowSpec:
    where = f"--windows[{index}]"
    if not isinstance(entry, dict):
        raise SparkAppInputError(where, "must be an object with name, subscribed_at, metrics, match")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise SparkAppInputError(f"{where}.name", "must be a non-empty string", name)
    metrics = entry.get("metrics", ["*"])
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise SparkAppInputError(f"{where}.metrics", "must be a list of metric-name prefixes", metrics)
    match = entry.get("match", {})
    if not isinstance(match, dict) or not all(isinstance(v, str) for v in match.values()):
        raise SparkAppInputError(f"{where}.match", "must map selectors to regex strings", match)
    for selector in match:
        if selector not in SELECTORS:
            raise SparkAppInputError(
                f"{where}.match.{selector}", f"is not a selector ({', '.join(SELECTORS)})"
            )
    subscribed_at = parse_instant(f"{where}.subscribed_at", entry.get("subscribed_at", ""))
    return WindowSpec(name, subscribed_at, tuple(metrics), dict(match))


def load_windows(path: str) -> list[WindowSpec]:
    """``--windows FILE``: a JSON list of ``{name, subscribed_at, metrics, match}``."""
    try:
        loaded = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise SparkAppInputError("--windows", f"must be a readable JSON file ({err})", path) from err
    if not isinstance(loaded, list) or not loaded:
        raise SparkAppInputError("--windows", "must hold a non-empty JSON list of windows", path)
    return [_window(index, entry) for index, entry in enumerate(loaded)]


def metric_filter(prefixes: tuple[str, ...]) -> Column:
    """Kafka's prefix rule on the name the client sent: ``*`` or an empty prefix is every metric."""
    if any(prefix in ("*", "") for prefix in prefixes):
        return F.lit(True)
    condition = F.lit(False)
    for prefix in prefixes:
        condition = condition | F.col("source_metric_name").startswith(prefix)
    return condition


def window_rows(client_points: DataFrame, window: WindowSpec) -> DataFrame:
    """Per matched instance: identity, ``first_push_time`` under the window (or null), ``delay_seconds``."""
    at = F.lit(window.subscribed_at).cast("timestamp")
    push_time = F.coalesce(F.col("record_timestamp"), F.col("ts"))
    matched = client_points.where(selector_condition(window.match))
    under = push_time >= at
    return (
        matched.groupBy("client_instance_id")
        .agg(
            F.min(F.when(under & metric_filter(window.metrics), push_time)).alias("first_push_time"),
            F.max_by(
                F.struct(*CLIENT_IDENTITY_COLUMNS[1:]),
                "time_ns",
            ).alias("who"),
        )
        .select("client_instance_id", "who.*", "first_push_time")
        .withColumns(
            {
                "subscription_name": F.lit(window.name),
                "subscribed_at": at,
                "delay_seconds": (F.unix_micros("first_push_time") - F.unix_micros(at)) / 1e6,
            }
        )
    )


def with_shares(rows: DataFrame) -> DataFrame:
    """Add matched/converged counts and the 50/90/100 % delays of each window (null when not reached)."""
    counts = rows.groupBy("subscription_name").agg(
        F.count(F.lit(1)).cast("int").alias("matched_clients"),
        F.count("first_push_time").cast("int").alias("converged_clients"),
        F.sort_array(F.collect_list("delay_seconds")).alias("_delays"),
    )
    shares = {
        name: F.when(
            F.size("_delays") >= F.ceil(F.col("matched_clients") * share),
            F.element_at(
                "_delays", F.greatest(F.ceil(F.col("matched_clients") * share), F.lit(1)).cast("int")
            ),
        )
        for name, share in SHARES.items()
    }
    return rows.join(counts.withColumns(shares).drop("_delays"), "subscription_name")
