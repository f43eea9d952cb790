"""``kip714 local-spark-connect start|stop|status``: a long-running Spark Connect server on 127.0.0.1."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Final

from kip714_dev.cli import service_commands as service
from kip714_dev.cli.options import data_dir
from kip714_dev.local_spark import connect

DEFAULT_DIR: Final = Path.home() / ".local" / "state" / "kip714" / "local-spark-connect"
_MASTER: Final = re.compile(r"local\[(\*|[1-9]\d{0,2})\]|spark://127\.0\.0\.1:\d{1,5}")


def master(text: str) -> str:
    if not _MASTER.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"must be local[N], local[*] or spark://127.0.0.1:PORT (got {text!r})"
        )
    return text


def register(subparsers: service.SubParsers) -> None:
    commands = service.add_group(
        subparsers,
        "local-spark-connect",
        help="run a Spark Connect server (one long-lived JVM the DAGs' Spark apps run in) on 127.0.0.1",
        description="Run a Spark Connect server from the venv's pyspark (KIP714_SPARK_CONNECT_CONN_ID).",
    )
    start, _ = service.add_lifecycle(
        commands,
        data_dir_option=lambda parser: service.add_data_dir_option(
            parser, parse=data_dir, default=DEFAULT_DIR, help="config, log, PID"
        ),
        helps=(
            "start the server (idempotent) and wait until it accepts connections",
            "exit 0 when it runs, 3 when it does not",
            "stop the server",
        ),
        run=(run_start, run_status, run_stop),
    )
    start.add_argument(
        "--master", type=master, default="local[2]", help="where it runs its jobs (default %(default)s)"
    )


def _print(state: connect.ConnectServerState, as_json: bool) -> None:
    if as_json:
        print(state.as_json())
        return
    print(f"Spark Connect server {state.url} on {state.master} (pid {state.pid})")
    host, port = state.url.removeprefix("sc://").split(":")
    print(f'spark_connect connection: {{"conn_type":"spark_connect","host":"{host}","port":{port}}}')


def run_start(args: argparse.Namespace) -> int:
    _print(connect.start(args.data_dir.expanduser(), master=args.master), args.json)
    return 0


def run_status(args: argparse.Namespace) -> int:
    state = connect.status(args.data_dir.expanduser())
    if state is None:
        return service.not_running("Spark Connect server", args.data_dir, as_json=args.json)
    _print(state, args.json)
    return 0


def run_stop(args: argparse.Namespace) -> int:
    stopped = connect.stop(args.data_dir.expanduser())
    print(f"stopped pid {stopped[0]}" if stopped else f"no Spark Connect server runs from {args.data_dir}")
    return 0
