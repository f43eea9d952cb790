"""Command-line arguments every app shares: ``--input --output --start --end --bucket``.

Validated here, before Spark starts, so a wrong flag fails in milliseconds with the flag's name.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kip714_common.errors import SparkAppInputError
from kip714_common.selectors import SELECTORS, RunSelection, regex_problem

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SECONDS_PER_HOUR = 3600
DEFAULT_COUNTER_LOOKBACK = "10m"


def parse_duration_seconds(field: str, text: str) -> int:
    """``"90s"``, ``"5m"``, ``"1h"``, ``"2d"`` or a bare number of seconds -> seconds."""
    match = _DURATION.match(str(text))
    if not match or match.group(2) == "ms":
        raise SparkAppInputError(field, "must be a whole number of seconds with unit s, m, h or d", text)
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]


def parse_instant(field: str, text: str) -> datetime:
    """ISO-8601 instant; a naive value is taken as UTC (Airflow's ``data_interval_*`` are UTC)."""
    try:
        value = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError as err:
        raise SparkAppInputError(
            field, "must be an ISO-8601 instant such as 2026-01-31T13:00:00Z", text
        ) from err
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True)
class Interval:
    """The half-open interval ``[start, end)`` an app processes, widened to whole buckets."""

    start: datetime
    end: datetime
    bucket_seconds: int

    @property
    def hours(self) -> list[datetime]:
        """Every hour partition the interval touches (the partitions a run overwrites)."""
        first = self.start.replace(minute=0, second=0, microsecond=0)
        count = math.ceil((self.end - first).total_seconds() / SECONDS_PER_HOUR)
        return [first + timedelta(hours=i) for i in range(count)]

    def describe(self) -> str:
        return f"[{self.start.isoformat()}, {self.end.isoformat()}) in {self.bucket_seconds}s buckets"


def make_interval(start: datetime, end: datetime, bucket_seconds: int) -> Interval:
    """Validate and widen ``[start, end)`` outwards to bucket boundaries (epoch-aligned, UTC)."""
    if bucket_seconds <= 0 or SECONDS_PER_HOUR % bucket_seconds:
        raise SparkAppInputError(
            "--bucket", "must divide one hour (1s..1h, e.g. 10s, 1m, 5m, 15m, 1h)", bucket_seconds
        )
    if end <= start:
        raise SparkAppInputError("--end", f"must be after --start ({start.isoformat()})", end.isoformat())
    start_epoch = int(start.timestamp()) // bucket_seconds * bucket_seconds
    end_epoch = math.ceil(end.timestamp() / bucket_seconds) * bucket_seconds
    return Interval(
        datetime.fromtimestamp(start_epoch, UTC), datetime.fromtimestamp(end_epoch, UTC), bucket_seconds
    )


@dataclass(frozen=True)
class CommonArgs:
    input: str
    output: str
    interval: Interval
    metric_aliases: dict[str, str]
    counter_lookback: timedelta
    selection: RunSelection | None = None
    """``--selection``: a troubleshooting run's clients; None (the hourly runs) is every client."""

    @property
    def read_start(self) -> datetime:
        """Where reading the landing zone starts: ``--start`` minus the counter lookback."""
        return self.interval.start - self.counter_lookback


def base_parser(description: str) -> argparse.ArgumentParser:
    """Parser with the shared flags; apps add their own before calling ``parse_common``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--input", required=True, help="landing zone root (holds datapoints/)")
    parser.add_argument("--output", required=True, help="analytics root (rollups/, anomalies/, ...)")
    parser.add_argument("--start", required=True, help="interval start, ISO-8601 (UTC if naive)")
    parser.add_argument("--end", required=True, help="interval end (exclusive), ISO-8601")
    parser.add_argument("--bucket", default="1m", help="time bucket dividing one hour, e.g. 1m (default)")
    parser.add_argument("--metric-aliases", default=None, help="JSON file {normalised name: common name}")
    parser.add_argument(
        "--selection",
        default=None,
        help='JSON file {"match": {selector: regex}, "since": instant}: only those clients, from then on',
    )
    parser.add_argument(
        "--counter-lookback",
        default=DEFAULT_COUNTER_LOOKBACK,
        help="read this much before --start so cumulative counters have a previous point (default 10m)",
    )
    return parser


def _load_aliases(path: str | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        loaded = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise SparkAppInputError("--metric-aliases", f"must be a readable JSON file ({err})", path) from err
    if not isinstance(loaded, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
    ):
        raise SparkAppInputError("--metric-aliases", "must hold one JSON object of string -> string", path)
    return loaded


def load_selection(path: str | None) -> RunSelection | None:
    """``--selection FILE``: ``{"match": {selector: regex}, "since": ISO instant}`` (kip714_troubleshoot
    writes it), checked before Spark starts."""
    if path is None:
        return None
    try:
        loaded = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise SparkAppInputError("--selection", f"must be a readable JSON file ({err})", path) from err
    if not isinstance(loaded, dict) or set(loaded) - {"match", "since"}:
        raise SparkAppInputError("--selection", 'must hold one object with "match" and "since"', path)
    match = loaded.get("match") or {}
    if not isinstance(match, dict):
        raise SparkAppInputError("--selection.match", "must be an object of selector -> regex", match)
    for selector, pattern in match.items():
        if selector not in SELECTORS:
            raise SparkAppInputError(
                f"--selection.match.{selector}", f"is not a selector ({', '.join(SELECTORS)})"
            )
        if not isinstance(pattern, str) or not pattern:
            raise SparkAppInputError(f"--selection.match.{selector}", "must be a non-empty regex", pattern)
        if (problem := regex_problem(pattern)) is not None:
            raise SparkAppInputError(
                f"--selection.match.{selector}", f"must be a valid regex ({problem})", pattern
            )
    since = parse_instant("--selection.since", loaded.get("since", ""))
    return RunSelection(since=since, match=dict(match))


def parse_common(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> tuple[argparse.Namespace, CommonArgs]:
    """Parse ``argv`` and validate the shared flags."""
    namespace = parser.parse_args(argv)
    for field in ("input", "output"):
        if not str(getattr(namespace, field)).strip():
            raise SparkAppInputError(f"--{field}", "must be a non-empty path or URI")
    interval = make_interval(
        parse_instant("--start", namespace.start),
        parse_instant("--end", namespace.end),
        parse_duration_seconds("--bucket", namespace.bucket),
    )
    common = CommonArgs(
        input=namespace.input.rstrip("/"),
        output=namespace.output.rstrip("/"),
        interval=interval,
        metric_aliases=_load_aliases(namespace.metric_aliases),
        counter_lookback=timedelta(
            seconds=parse_duration_seconds("--counter-lookback", namespace.counter_lookback)
        ),
        selection=load_selection(namespace.selection),
    )
    return namespace, common


def common_flags_step(
    description: str,
) -> tuple[Callable[[], argparse.ArgumentParser], Callable[[Sequence[str] | None], CommonArgs]]:
    """``build_parser`` and ``check_args`` of a pipeline step that takes only the shared flags.

    ``check_args`` validates the flags before Spark starts: the first bad one raises ``SparkAppInputError``.
    """

    def build_parser() -> argparse.ArgumentParser:
        return base_parser(description)

    def check_args(argv: Sequence[str] | None) -> CommonArgs:
        return parse_common(build_parser(), argv)[1]

    return build_parser, check_args


def run_main(run: Callable[[Sequence[str]], object], argv: Sequence[str]) -> int:
    """``__main__`` entry of an app: bad input prints one line naming the flag and exits 2, no traceback."""
    try:
        run(argv)
    except SparkAppInputError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return 2
    return 0
