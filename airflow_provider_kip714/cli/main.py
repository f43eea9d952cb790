"""Entry point of the ``kip714`` console script.

Each command group lives in its own module exposing ``register(subparsers)``; a command sets
``func(args) -> int``. Errors the product raises on purpose print one line, never a traceback.
Other installed packages add groups through the ``kip714.cli`` entry point (the development
tooling's ``local-kafka``, ``local-s3``, ``local-spark`` and ``demo``); the provider never imports them.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points

from airflow_provider_kip714.exceptions import Kip714Error

COMMAND_MODULES = (
    "airflow_provider_kip714.cli.subscriptions",
    "airflow_provider_kip714.cli.telemetry",
)
PLUGIN_GROUP = "kip714.cli"


def _registrars() -> Iterator[Callable[[argparse._SubParsersAction], None]]:
    for module_name in COMMAND_MODULES:
        yield importlib.import_module(module_name).register
    for entry_point in sorted(entry_points(group=PLUGIN_GROUP), key=lambda ep: ep.name):
        yield entry_point.load()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kip714", description="Kafka KIP-714 client metrics tools.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in _registrars():
        register(subparsers)
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
