"""The anomalies app's flags, checked before Spark starts: the first bad one raises ``SparkAppInputError``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from kip714_common.baselines import PEER_KINDS, BaselineSettings, PeerSettings
from kip714_common.breaches import DEFAULT_MAX_GAP_BUCKETS
from kip714_common.cli import CommonArgs, base_parser, parse_common, parse_duration_seconds, parse_instant
from kip714_common.errors import SparkAppInputError
from kip714_common.identity import DEFAULT_CLIENT_GROUP_BY
from kip714_common.rules import MAX_FOR_SECONDS, StaticRule, load_rules
from kip714_common.selectors import RULE_SELECTORS

MAX_GAP_BUCKETS = 1440
"""Bridged gaps: a day of 1-minute buckets; more would let any two blips join one breach."""


@dataclass(frozen=True)
class AnomalyArgs:
    """Everything one run needs, validated: the common interval flags, the rules, the baseline settings."""

    common: CommonArgs
    rollups_source: str
    rules: list[StaticRule]
    settings: BaselineSettings
    group_by: tuple[str, ...]
    history: timedelta
    baseline_for: int
    max_gap_buckets: int
    baselines: bool
    peers: PeerSettings
    history_root: str | None = None
    """Learn own baselines from this analytics root's rollups table only (live mode: the hourly tables),
    never rolling history up from the landing zone."""
    history_end: datetime | None = None
    """Where the baseline history ends (at or before ``--start``); None: at ``--start``. Live mode ends it
    with the last hour the hourly table holds, so each cycle learns from a whole ``--history``."""

    baselines_cache: str | None = None
    """Read own baselines learned for the same history and settings below this folder, or write them there
    (``baseline_store``); only with ``history_end`` (so successive runs share a history) and
    ``history_root``."""

    @property
    def history_span(self) -> tuple[datetime, datetime]:
        """``[end - history, end)``: the buckets own baselines learn from."""
        end = self.common.interval.start if self.history_end is None else self.history_end
        return end - self.history, end


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser("Learn thresholds and find sustained anomalies in KIP-714 rollups.")
    parser.add_argument("--rules", default=None, help="static rules JSON file (none by default)")
    parser.add_argument("--history", default="24h", help="baseline history before --start (default 24h)")
    parser.add_argument("--rollups-source", choices=("output", "landing"), default="output")
    parser.add_argument(
        "--history-root",
        default=None,
        help="analytics root whose rollups/ hold the baseline history (default: --output, then landing)",
    )
    parser.add_argument(
        "--history-end",
        default=None,
        help="end the baseline history here, at or before --start, ISO-8601 (default and empty: --start)",
    )
    parser.add_argument(
        "--baselines-cache",
        default=None,
        help="keep own baselines learned for this history below this folder, for later runs (needs "
        "--history-end and --history-root; empty: none)",
    )
    parser.add_argument(
        "--group-by", default=",".join(DEFAULT_CLIENT_GROUP_BY), help="client group columns (own baselines)"
    )
    _add_baseline_options(parser)
    _add_peer_options(parser)
    return parser


def _add_baseline_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k", type=float, default=4.0, help="MAD multiplier (default 4)")
    parser.add_argument("--relative-floor", type=float, default=0.1, help="scale floor x |median| (0.1)")
    parser.add_argument("--absolute-floor", type=float, default=1.0, help="scale floor when median is 0")
    parser.add_argument("--min-history-buckets", type=int, default=10)
    parser.add_argument(
        "--baseline-for", default="1m", help="baseline breaches must last more than this (default 1m)"
    )
    parser.add_argument(
        "--max-gap-buckets",
        type=int,
        default=DEFAULT_MAX_GAP_BUCKETS,
        help="a breach survives this many non-breaching buckets in a row (default 1; 0 = none)",
    )
    parser.add_argument("--no-baselines", action="store_true", help="static rules only")


def _add_peer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--peer-groups",
        default="group_id,client_id_pattern",
        help=f"peer baselines among {', '.join(PEER_KINDS)}, comma-separated; 'none' turns them off",
    )
    parser.add_argument("--min-peers", type=int, default=3, help="clients a peer group needs (default 3)")
    parser.add_argument(
        "--peer-absolute-floor", type=float, default=0.05, help="peers' scale floor when their median is 0"
    )


def parse_anomaly_args(argv: Sequence[str] | None) -> AnomalyArgs:
    """Validate the flags and load the rules; the first bad one raises ``SparkAppInputError``."""
    namespace, common = parse_common(build_parser(), argv)
    settings = _settings(namespace)
    group_by = _group_by(namespace.group_by)
    history = timedelta(seconds=parse_duration_seconds("--history", namespace.history))
    baseline_for = parse_duration_seconds("--baseline-for", namespace.baseline_for)
    if baseline_for > MAX_FOR_SECONDS:
        raise SparkAppInputError(
            "--baseline-for", f"must be at most {MAX_FOR_SECONDS // 86_400}d", namespace.baseline_for
        )
    if namespace.max_gap_buckets < 0:
        raise SparkAppInputError("--max-gap-buckets", "must be >= 0", namespace.max_gap_buckets)
    if namespace.max_gap_buckets > MAX_GAP_BUCKETS:
        raise SparkAppInputError(
            "--max-gap-buckets", f"must be at most {MAX_GAP_BUCKETS}", namespace.max_gap_buckets
        )
    rules = load_rules(namespace.rules, common.metric_aliases)
    history_end = _history_end(namespace.history_end, common)
    return AnomalyArgs(
        common=common,
        rollups_source=namespace.rollups_source,
        rules=rules,
        settings=settings,
        group_by=group_by,
        history=history,
        baseline_for=baseline_for,
        max_gap_buckets=namespace.max_gap_buckets,
        baselines=not namespace.no_baselines,
        peers=_peer_settings(namespace),
        history_root=_history_root(namespace.history_root),
        history_end=history_end,
        baselines_cache=_baselines_cache(namespace.baselines_cache, history_end, namespace.history_root),
    )


def _history_root(text: str | None) -> str | None:
    if text is None:
        return None
    if not text.strip():
        raise SparkAppInputError("--history-root", "must be a non-empty path or URI", text)
    return text.rstrip("/")


def _history_end(text: str | None, common: CommonArgs) -> datetime | None:
    """``--history-end``: empty is absent (a template with no value); never after ``--start``, or the
    baselines would learn from the window they judge."""
    if text is None or not text.strip():
        return None
    end = parse_instant("--history-end", text)
    if end > common.interval.start:
        raise SparkAppInputError(
            "--history-end", "must be at or before --start (rounded down to its --bucket)", text
        )
    return end


def _baselines_cache(text: str | None, history_end: datetime | None, history_root: str | None) -> str | None:
    """``--baselines-cache``: empty is absent. It needs ``--history-end`` (a history ending at ``--start``
    moves with every run, so nothing learned would be read again) and ``--history-root`` (a history rolled
    up from ``--output`` and the landing zone depends on more than the key names)."""
    if text is None or not text.strip():
        return None
    if history_end is None:
        raise SparkAppInputError(
            "--baselines-cache", "needs --history-end: a history ending at --start moves with every run"
        )
    if history_root is None or not history_root.strip():
        raise SparkAppInputError(
            "--baselines-cache", "needs --history-root: only a rollups table's history is kept"
        )
    return text.rstrip("/")


def _settings(namespace: argparse.Namespace) -> BaselineSettings:
    for flag, value in (("--k", namespace.k), ("--min-history-buckets", namespace.min_history_buckets)):
        if value <= 0:
            raise SparkAppInputError(flag, "must be > 0", value)
    for flag, value in (
        ("--relative-floor", namespace.relative_floor),
        ("--absolute-floor", namespace.absolute_floor),
    ):
        if value < 0:
            raise SparkAppInputError(flag, "must be >= 0", value)
    return BaselineSettings(
        k=namespace.k,
        relative_floor=namespace.relative_floor,
        absolute_floor=namespace.absolute_floor,
        min_history_buckets=namespace.min_history_buckets,
    )


def _group_by(text: str) -> tuple[str, ...]:
    columns = tuple(part.strip() for part in text.split(",") if part.strip())
    if not columns or any(c not in RULE_SELECTORS for c in columns):
        raise SparkAppInputError("--group-by", f"must list columns among {', '.join(RULE_SELECTORS)}", text)
    return columns


def _peer_settings(namespace: argparse.Namespace) -> PeerSettings:
    text = namespace.peer_groups.strip()
    kinds = () if text == "none" else tuple(part.strip() for part in text.split(",") if part.strip())
    if any(kind not in PEER_KINDS for kind in kinds):
        raise SparkAppInputError("--peer-groups", f"must list among {', '.join(PEER_KINDS)} or be none", text)
    if namespace.min_peers < 3:
        raise SparkAppInputError("--min-peers", "must be >= 3 (a median of two cannot tell who deviates)")
    if namespace.peer_absolute_floor <= 0:
        raise SparkAppInputError("--peer-absolute-floor", "must be > 0", namespace.peer_absolute_floor)
    return PeerSettings(kinds, namespace.min_peers, namespace.peer_absolute_floor)
