"""``kip714 demo``: run the end-to-end demo (see devtools/kip714_dev/demo/runner.py)."""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_kip714.subscriptions.limits import MAX_WINDOW
from kip714_dev.cli.options import bounded_int, data_dir


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="local Kafka + real clients + the troubleshooting and rollup DAGs, end to end",
        description=__doc__,
    )
    parser.add_argument(
        "--work-dir",
        type=data_dir,
        default=None,
        help="default $KIP714_DEMO_DIR or ~/.local/state/kip714/demo",
    )
    parser.add_argument(
        "--warmup",
        type=bounded_int(1, 3600, "whole seconds"),
        default=None,
        help="seconds of fleet history before the window (default 40)",
    )
    parser.add_argument(
        "--window",
        type=bounded_int(10, int(MAX_WINDOW.total_seconds()), "whole seconds"),
        default=None,
        help="troubleshooting window length in seconds (default 120)",
    )
    parser.add_argument(
        "--topology",
        choices=("single", "cluster"),
        default="single",
        help="single: this machine, local folder, Spark local[*] (default); cluster: S3Proxy for the data "
        "root and a Spark standalone master with 2 workers",
    )
    parser.add_argument(
        "--spark",
        choices=("connect", "submit"),
        default="connect",
        help="single topology: connect = a Spark Connect server, started and warmed while the fleet runs, "
        "runs the analytics (default); submit = a spark-submit per analytics task",
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # Imported here: the demo pulls in pandas/pyarrow, which every other kip714 command can do without.
    from kip714_dev.demo.runner import DemoSettings, default_demo_dir, run_demo

    chosen = {
        "warmup_s": args.warmup,
        "window_s": args.window,
        "topology": args.topology,
        "spark": args.spark,
    }
    settings = DemoSettings(
        work_dir=(args.work_dir or default_demo_dir()).resolve(),
        **{name: value for name, value in chosen.items() if value is not None},
    )
    return run_demo(settings)
