"""``kip714 local-s3 start|stop|status``: a real S3 server (S3Proxy, filesystem backend) on 127.0.0.1."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Final

from kip714_dev.cli.options import bucket, data_dir, port
from kip714_dev.local_s3 import server

EXIT_NOT_RUNNING: Final = 3
DEFAULT_DIR: Final = Path.home() / ".local" / "state" / "kip714" / "local-s3"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = subparsers.add_parser(
        "local-s3",
        help="run a real S3 server (S3Proxy from Maven Central) on 127.0.0.1",
        description="Run S3Proxy with its filesystem backend: a real S3 API for the cluster topology.",
    )
    commands = group.add_subparsers(dest="local_s3_command", required=True, metavar="ACTION")
    start = commands.add_parser("start", help="start S3Proxy (idempotent) and create the bucket")
    _data_dir_option(start)
    start.add_argument(
        "--port", type=port, default=server.DEFAULT_PORT, help="HTTP port (default %(default)s)"
    )
    start.add_argument(
        "--bucket", type=bucket, default=server.DEFAULT_BUCKET, help="bucket to create (default %(default)s)"
    )
    start.add_argument("--json", action="store_true", help="print the state as JSON")
    start.set_defaults(func=run_start)
    status = commands.add_parser("status", help="exit 0 when it runs, 3 when it does not")
    _data_dir_option(status)
    status.add_argument("--json", action="store_true", help="print the state as JSON")
    status.set_defaults(func=run_status)
    stop = commands.add_parser("stop", help="stop S3Proxy (the stored objects stay in the data dir)")
    _data_dir_option(stop)
    stop.set_defaults(func=run_stop)


def _data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=data_dir, default=DEFAULT_DIR, help="objects, config, logs, PID")


def airflow_connection(state: server.LocalS3State) -> dict[str, object]:
    """The Airflow ``aws`` connection for this server (``AIRFLOW_CONN_<ID>`` takes it as JSON)."""
    return {
        "conn_type": "aws",
        "login": state.access_key,
        "password": state.secret_key,
        "extra": {
            "endpoint_url": state.endpoint_url,
            "region_name": state.region,
            "config_kwargs": {
                "request_checksum_calculation": "when_required",
                "response_checksum_validation": "when_required",
            },
        },
    }


def _print(state: server.LocalS3State, as_json: bool) -> None:
    if as_json:
        document = json.loads(state.as_json())
        document["airflow_connection"] = airflow_connection(state)
        print(json.dumps(document, indent=2, sort_keys=True))
        return
    print(f"S3Proxy ready at {state.endpoint_url} (pid {state.pid}), bucket {state.bucket}")
    print(f"access key {state.access_key}; data root URL: s3://<aws conn id>@{state.bucket}/<prefix>")
    print(f"logs: {state.log_path}")


def run_start(args: argparse.Namespace) -> int:
    _print(server.start(args.data_dir.expanduser(), port=args.port, bucket=args.bucket), args.json)
    return 0


def run_status(args: argparse.Namespace) -> int:
    state = server.status(args.data_dir.expanduser())
    if state is None:
        print(f"no local S3 runs from {args.data_dir}", file=sys.stderr if args.json else sys.stdout)
        return EXIT_NOT_RUNNING
    _print(state, args.json)
    return 0


def run_stop(args: argparse.Namespace) -> int:
    pid = server.stop(args.data_dir.expanduser())
    print(f"stopped pid {pid}" if pid else f"no local S3 runs from {args.data_dir}")
    return 0
