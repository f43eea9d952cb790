"""``kip714 local-s3 start|stop|status``: a real S3 server (S3Proxy, filesystem backend) on 127.0.0.1."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Final

from kip714_dev.cli import service_commands as service
from kip714_dev.cli.options import bucket, data_dir, port
from kip714_dev.local_s3 import server

DEFAULT_DIR: Final = Path.home() / ".local" / "state" / "kip714" / "local-s3"


def register(subparsers: service.SubParsers) -> None:
    commands = service.add_group(
        subparsers,
        "local-s3",
        help="run a real S3 server (S3Proxy from Maven Central) on 127.0.0.1",
        description="Run S3Proxy with its filesystem backend: a real S3 API for the cluster topology.",
    )
    start, _ = service.add_lifecycle(
        commands,
        data_dir_option=_data_dir_option,
        helps=(
            "start S3Proxy (idempotent) and create the bucket",
            "exit 0 when it runs, 3 when it does not",
            "stop S3Proxy (the stored objects stay in the data dir)",
        ),
        run=(run_start, run_status, run_stop),
    )
    start.add_argument(
        "--port", type=port, default=server.DEFAULT_PORT, help="HTTP port (default %(default)s)"
    )
    start.add_argument(
        "--bucket", type=bucket, default=server.DEFAULT_BUCKET, help="bucket to create (default %(default)s)"
    )


def _data_dir_option(parser: argparse.ArgumentParser) -> None:
    service.add_data_dir_option(
        parser, parse=data_dir, default=DEFAULT_DIR, help="objects, config, logs, PID"
    )


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
        service.print_json({**json.loads(state.as_json()), "airflow_connection": airflow_connection(state)})
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
        return service.not_running("local S3", args.data_dir, as_json=args.json)
    _print(state, args.json)
    return 0


def run_stop(args: argparse.Namespace) -> int:
    pid = server.stop(args.data_dir.expanduser())
    print(f"stopped pid {pid}" if pid else f"no local S3 runs from {args.data_dir}")
    return 0
