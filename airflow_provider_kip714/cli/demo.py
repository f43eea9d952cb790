"""``kip714 demo``: run the end-to-end demo (see airflow_provider_kip714/demo/runner.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="local Kafka + real clients + the troubleshooting and rollup DAGs, end to end",
        description=__doc__,
    )
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="default $KIP714_DEMO_DIR or ~/.local/state/kip714/demo"
    )
    parser.add_argument("--warmup", type=int, default=45, help="seconds of fleet history before the window")
    parser.add_argument("--window", type=int, default=150, help="troubleshooting window length in seconds")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # Imported here: the demo pulls in pandas/pyarrow, which every other kip714 command can do without.
    from airflow_provider_kip714.demo.runner import DemoSettings, default_demo_dir, run_demo

    settings = DemoSettings(
        work_dir=(args.work_dir or default_demo_dir()).resolve(), warmup_s=args.warmup, window_s=args.window
    )
    return run_demo(settings)
