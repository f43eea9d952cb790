"""``kip714 local-spark start|stop|status``: a Spark standalone master and workers on 127.0.0.1."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Final

from kip714_dev.cli import service_commands as service
from kip714_dev.cli.options import bounded_int, data_dir
from kip714_dev.local_spark import cluster

DEFAULT_DIR: Final = Path.home() / ".local" / "state" / "kip714" / "local-spark"


def register(subparsers: service.SubParsers) -> None:
    commands = service.add_group(
        subparsers,
        "local-spark",
        help="run a Spark standalone cluster (master + workers, separate JVMs) on 127.0.0.1",
        description="Run a Spark standalone master and workers from the venv's pyspark (s3a ready).",
    )
    start, _ = service.add_lifecycle(
        commands,
        data_dir_option=_data_dir_option,
        helps=(
            "start the master and workers (idempotent) and wait until ALIVE",
            "exit 0 when it runs, 3 when it does not",
            "stop the workers and the master",
        ),
        run=(run_start, run_status, run_stop),
    )
    start.add_argument(
        "--workers",
        type=bounded_int(1, cluster.MAX_WORKERS, "a number of workers"),
        default=cluster.DEFAULT_WORKERS,
        help="workers (default %(default)s)",
    )


def _data_dir_option(parser: argparse.ArgumentParser) -> None:
    service.add_data_dir_option(
        parser, parse=data_dir, default=DEFAULT_DIR, help="work dirs, config, logs, PIDs"
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
        return service.not_running("local Spark", args.data_dir, as_json=args.json)
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
