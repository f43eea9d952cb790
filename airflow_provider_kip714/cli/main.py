"""Entry point of the ``kip714`` console script.

Each command group lives in its own module exposing ``register(subparsers)``; a command sets
``func(args) -> int``. Errors the product raises on purpose print one line, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from airflow_provider_kip714.exceptions import Kip714Error

COMMAND_MODULES = (
    "airflow_provider_kip714.cli.local_kafka",
    "airflow_provider_kip714.cli.subscriptions",
    "airflow_provider_kip714.cli.telemetry",
    "airflow_provider_kip714.cli.demo",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kip714", description="Kafka KIP-714 client metrics tools.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name != module_name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.func(args) or 0)
    except Kip714Error as err:
        print(f"kip714: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kip714: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
