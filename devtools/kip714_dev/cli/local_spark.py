"""``kip714 local-spark start|stop|status``: a Spark standalone master and workers on 127.0.0.1."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Final

from kip714_dev.cli.options import bounded_int, data_dir
from kip714_dev.local_spark import cluster

EXIT_NOT_RUNNING: Final = 3
DEFAULT_DIR: Final = Path.home() / ".local" / "state" / "kip714" / "local-spark"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = subparsers.add_parser(
        "local-spark",
        help="run a Spark standalone cluster (master + workers, separate JVMs) on 127.0.0.1",
        description="Run a Spark standalone master and workers from the venv's pyspark (s3a ready).",
    )
    commands = group.add_subparsers(dest="local_spark_command", required=True, metavar="ACTION")
    start = commands.add_parser(
        "start", help="start the master and workers (idempotent) and wait until ALIVE"
    )
    _data_dir_option(start)
    start.add_argument(
        "--workers",
        type=bounded_int(1, cluster.MAX_WORKERS, "a number of workers"),
        default=cluster.DEFAULT_WORKERS,
        help="workers (default %(default)s)",
    )
    start.add_argument("--json", action="store_true", help="print the state as JSON")
    start.set_defaults(func=run_start)
    status = commands.add_parser("status", help="exit 0 when it runs, 3 when it does not")
    _data_dir_option(status)
    status.add_argument("--json", action="store_true", help="print the state as JSON")
    status.set_defaults(func=run_status)
    stop = commands.add_parser("stop", help="stop the workers and the master")
    _data_dir_option(stop)
    stop.set_defaults(func=run_stop)


def _data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", type=data_dir, default=DEFAULT_DIR, help="work dirs, config, logs, PIDs"
    )


def _print(state: cluster.LocalSparkState, as_json: bool) -> None:
    if as_json:
        print(state.as_json())
        return
    print(f"Spark standalone master {state.master_url} with {len(state.worker_pids)} workers")
    print(f'web UI {state.web_ui_url}; spark_default: {{"conn_type":"spark","host":"{state.master_url}"}}')


def run_start(args: argparse.Namespace) -> int:
    _print(cluster.start(args.data_dir.expanduser(), workers=args.workers), args.json)
    return 0


def run_status(args: argparse.Namespace) -> int:
    state = cluster.status(args.data_dir.expanduser())
    if state is None:
        print(f"no local Spark runs from {args.data_dir}", file=sys.stderr if args.json else sys.stdout)
        return EXIT_NOT_RUNNING
    _print(state, args.json)
    return 0


def run_stop(args: argparse.Namespace) -> int:
    stopped = cluster.stop(args.data_dir.expanduser())
    print(
        f"stopped pids {', '.join(map(str, stopped))}"
        if stopped
        else f"no local Spark runs from {args.data_dir}"
    )
    return 0
