"""Spark app: every analytics step of one run in one SparkSession (one JVM start instead of one per step).

    spark-submit --py-files kip714_common.zip spark_apps/pipeline.py \\
        --input <landing root> --output <analytics root> \\
        --start 2026-01-31T13:00:00Z --end 2026-01-31T14:00:00Z --bucket 1m \\
        --rules spark_apps/rules/default_rules.json --history 24h

Runs ``--steps`` (default: rollups, anomalies, broker_metrics, delivery, capabilities) with each app's
own ``run``: a step after the step it reads (``DEPENDS_ON``), independent ones ``--concurrency`` (2) at a
time, so one step's driver work overlaps another's tasks. The tables, their partitions and the
``KIP714_SUMMARY`` lines are the same as when the apps run one by one, and each app stays runnable alone.
The flags are the union of the steps' flags: each step gets the flags it knows among those given (shared
ones, such as ``--bucket``, go to every step). Every step's flags are checked before Spark starts.
``--remote sc://host:port`` runs the steps on a Spark Connect server instead of a JVM of its own
(``SPARK_REMOTE`` in the environment too: the URL may hold a token, which does not belong on a command
line). Each step's wall time is printed as a ``KIP714_TIMING`` line.

A new step is a module with ``APP_NAME``, ``build_parser()``, ``check_args(argv)`` and
``run(argv, spark)``, added to ``STEPS`` (and to ``DEPENDS_ON`` when it reads another step's table).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from types import ModuleType

from kip714_common.caching import run_caches
from kip714_common.cli import CommonArgs, base_parser, parse_common, run_main
from kip714_common.errors import SparkAppInputError
from kip714_common.landing import LATE_GRACE, chunk_selection, landed_bytes
from kip714_common.outputs import without_read_back
from kip714_common.run_shares import shared_reads
from kip714_common.session import get_session, tune_for_input
from kip714_common.shared_session import FLAG, begin_run, parse_session_id
from kip714_common.shared_session import connect as connect_shared
from kip714_common.timing import StepTimer, emit, jvm_report
from pyspark.sql import SparkSession

APP_NAME = "kip714-pipeline"
STEPS: dict[str, str] = {
    "rollups": "rollups",
    "anomalies": "anomalies",
    "broker_metrics": "broker_metrics",
    "delivery": "delivery",
    "capabilities": "capabilities",
    "convergence": "convergence",
}
"""Step name -> module (next to this file), in the order the steps run when all are asked for."""
DEPENDS_ON = {"anomalies": "rollups"}
"""Step -> the step whose output it reads (anomalies judge the rollups table); the others are independent."""
DEFAULT_CONCURRENCY = 2
MAX_CONCURRENCY = 8
DEFAULT_STEPS = ("rollups", "anomalies", "broker_metrics", "delivery", "capabilities")
"""Every step but ``convergence``, which needs ``--windows`` (the troubleshooting DAG writes it)."""


def step_module(name: str) -> ModuleType:
    return importlib.import_module(STEPS[name])


def parse_steps(text: str) -> list[str]:
    """``rollups,anomalies`` -> the steps in ``STEPS`` order (so a dependency always runs first)."""
    asked = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(asked - set(STEPS))
    if not asked or unknown:
        raise SparkAppInputError("--steps", f"must list steps among {', '.join(STEPS)}", text)
    return [name for name in STEPS if name in asked]


def build_parser(steps: Sequence[str] = DEFAULT_STEPS) -> argparse.ArgumentParser:
    """The union of the steps' parsers, every default suppressed (a step keeps its own defaults)."""
    parents = []
    for name in steps:
        parent = step_module(name).build_parser()
        parent.add_help = False
        parents.append(parent)
    parser = argparse.ArgumentParser(
        description="Run the KIP-714 analytics steps in one SparkSession.",
        parents=parents,
        conflict_handler="resolve",
    )
    for action in parser._actions:
        if action.dest != "help":
            action.default = argparse.SUPPRESS
    parser.add_argument("--steps", default=",".join(DEFAULT_STEPS), help="steps to run, in STEPS order")
    parser.add_argument("--remote", default=None, help="Spark Connect URL (sc://host:port) instead of a JVM")
    parser.add_argument(
        "--chunks-from",
        default=None,
        help='JSON {"partition": offset}: read only landing chunks at or after it (live mode: what is new)',
    )
    parser.add_argument(
        FLAG,
        default=None,
        help="a version-4 UUID: run in that Spark Connect server session, shared with runs before and after "
        "(live mode's cycles: no new session each run, so no code compiled again); a Connect run only",
    )
    parser.add_argument(
        "--no-read-back",
        action="store_true",
        help="do not read the written tables back for the summary lines (live mode: it reads them itself)",
    )
    parser.add_argument(
        "--concurrency",
        default=str(DEFAULT_CONCURRENCY),
        help="independent steps run at a time (1: in order)",
    )
    return parser


def step_argv(name: str, given: argparse.Namespace) -> list[str]:
    """The flags of ``given`` that step ``name`` knows, as its command line."""
    return parser_argv(step_module(name).build_parser(), given)


def parser_argv(parser: argparse.ArgumentParser, given: argparse.Namespace) -> list[str]:
    """The flags of ``given`` that ``parser`` knows, as a command line."""
    argv: list[str] = []
    for action in parser._actions:
        if action.dest == "help" or not hasattr(given, action.dest):
            continue
        value = getattr(given, action.dest)
        flag = max(action.option_strings, key=len)
        if action.nargs == 0:
            argv += [flag] if value else []
        elif value is not None:
            argv += [flag, str(value)]
    return argv


@dataclass(frozen=True)
class Plan:
    """Each step with its command line, checked before any Spark work; the shared flags; the Connect URL;
    how many independent steps run at a time; the landing chunks to read (None: every committed one)."""

    steps: list[tuple[str, list[str]]]
    common: CommonArgs
    remote: str | None
    concurrency: int
    chunks_from: dict[int, int] | None
    read_back: bool = True
    connect_session: str | None = None
    """A server session shared with other runs (``shared_session``); None: one of the run's own."""


def parse_chunks_from(text: str | None) -> dict[int, int] | None:
    """``--chunks-from``: a JSON object of partition -> first offset, both non-negative integers; empty (or
    absent): every committed chunk."""
    if text is None or not text.strip():
        return None
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as err:
        raise SparkAppInputError("--chunks-from", f"must be JSON ({err.msg})", text) from err
    if not isinstance(loaded, dict) or not all(
        str(k).isascii() and str(k).isdigit() and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in loaded.items()
    ):
        raise SparkAppInputError("--chunks-from", "must be a JSON object of partition -> offset >= 0", text)
    return {int(k): v for k, v in loaded.items()}


def plan(argv: Sequence[str]) -> Plan:
    """Parse and check every step's flags before any Spark work."""
    args = list(argv)
    steps_parser = argparse.ArgumentParser(add_help=False)
    steps_parser.add_argument("--steps", default=",".join(DEFAULT_STEPS))
    steps = parse_steps(steps_parser.parse_known_args(args)[0].steps)
    given = build_parser(steps).parse_args(args)
    planned = [(name, step_argv(name, given)) for name in steps]
    for name, arguments in planned:
        step_module(name).check_args(arguments)
    common = parse_common(base_parser(APP_NAME), parser_argv(base_parser(APP_NAME), given))[1]
    return Plan(
        planned,
        common,
        getattr(given, "remote", None),
        parse_concurrency(given.concurrency),
        parse_chunks_from(getattr(given, "chunks_from", None)),
        read_back=not getattr(given, "no_read_back", False),
        connect_session=parse_session_id(getattr(given, "connect_session", None)),
    )


def parse_concurrency(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_CONCURRENCY:
        raise SparkAppInputError("--concurrency", f"must be an integer from 1 to {MAX_CONCURRENCY}", text)
    return int(text)


def session(remote: str | None, shared_id: str | None = None) -> SparkSession:
    """A Spark Connect session when given a URL (``--remote``, else ``SPARK_REMOTE``), else the JVM's own;
    with ``shared_id``, the server session runs before and after this one use too (``shared_session``)."""
    remote = remote or os.environ.get("SPARK_REMOTE") or None
    if remote is None:
        return get_session(APP_NAME)
    from kip714_common.session import configure, remote_session

    if shared_id is None:
        spark = remote_session(remote)
    else:
        spark = connect_shared(remote, shared_id)
        begin_run(spark)
    return configure(spark)


def chains(planned: Sequence[tuple[str, list[str]]]) -> list[list[tuple[str, list[str]]]]:
    """The planned steps as independent chains: a step joins the chain of the step it reads the output of."""
    found: list[list[tuple[str, list[str]]]] = []
    chain_of: dict[str, list[tuple[str, list[str]]]] = {}
    for name, arguments in planned:
        chain = chain_of.get(DEPENDS_ON.get(name, ""))
        if chain is None:
            chain = []
            found.append(chain)
        chain.append((name, arguments))
        chain_of[name] = chain
    return found


def run_chains(
    spark: SparkSession, planned: Sequence[tuple[str, list[str]]], timer: StepTimer, concurrency: int
) -> dict[str, object]:
    """Run the chains, up to ``concurrency`` at a time; each chain's steps in order. Summaries in plan order.

    Concurrent chains overlap one step's driver work (planning, scheduling, small result round trips,
    which is most of a small window's time) with another's tasks on the executors.
    """
    summaries: dict[str, object] = {}

    def run_chain(chain: list[tuple[str, list[str]]]) -> None:
        for name, arguments in chain:
            with timer.phase(name):
                summaries[name] = step_module(name).run(arguments, spark)

    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="kip714-step") as pool:
        for done in [pool.submit(run_chain, chain) for chain in chains(planned)]:
            done.result()  # the first failure, once every chain has ended
    return {name: summaries[name] for name, _ in planned}


def run(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> dict[str, object]:
    """Run the planned steps in one session (``spark``, else one of its own); returns each step's summary."""
    planned = plan(sys.argv[1:] if argv is None else argv)
    common = planned.common
    timer, began = StepTimer(APP_NAME), time.perf_counter()
    own: SparkSession | None = None
    with timer.phase("session"):
        if spark is None:
            spark = own = session(planned.remote, planned.connect_session)
    try:
        read_back = nullcontext() if planned.read_back else without_read_back()
        with run_caches(), chunk_selection(planned.chunks_from), shared_reads() as reads, read_back:
            with timer.phase("size_input"):
                # the bytes this run reads (a live cycle: its recent chunks), listed once for every step
                size = landed_bytes(spark, common.input, common.read_start, common.interval.end + LATE_GRACE)
                reads.persist = tune_for_input(spark, size)
            emit({"step": APP_NAME, "phase": "input", "bytes": size, "small_input_conf": reads.persist})
            summaries = run_chains(spark, planned.steps, timer, planned.concurrency)
        # wall time: concurrent steps overlap, so the phases' sum would overstate it
        emit(
            {
                "step": APP_NAME,
                "phase": "total",
                "seconds": round(time.perf_counter() - began, 3),
                "ended": time.time(),
            }
        )
        emit({"step": APP_NAME, "phase": "jvm", **jvm_report(spark)})
        return summaries
    finally:
        if own is not None:
            # a Spark Connect server keeps an unreleased session (its plans and state) until its idle
            # timeout (an hour by default); a shared session is left for the next run (not released)
            own.stop()


if __name__ == "__main__":
    sys.exit(run_main(run, sys.argv[1:]))
