"""Entry point of the ``kip714`` console script.

Each command group lives in its own module exposing ``register(subparsers)``; a command sets
``func(args) -> int``. Errors the product raises on purpose print one line, never a traceback.
Other installed packages add groups through the ``kip714.cli`` entry point (the development
tooling's ``local-kafka``, ``local-s3``, ``local-spark`` and ``demo``); the provider never imports them.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points
from typing import NoReturn

from airflow_provider_kip714.cli import output
from airflow_provider_kip714.exceptions import Kip714Error

COMMAND_MODULES = {
    "subscriptions": "airflow_provider_kip714.cli.subscriptions",
    "telemetry": "airflow_provider_kip714.cli.telemetry",
}
PLUGIN_GROUP = "kip714.cli"


def _registrars(wanted: str | None = None) -> Iterator[Callable[[argparse._SubParsersAction], None]]:
    """Every group's ``register``, or only the named group's (its module alone is imported: a
    ``kip714 subscriptions`` call does not pay for the telemetry decoder's imports)."""
    for name, module_name in COMMAND_MODULES.items():
        if wanted in (None, name):
            yield importlib.import_module(module_name).register
    for entry_point in sorted(entry_points(group=PLUGIN_GROUP), key=lambda ep: ep.name):
        if wanted in (None, entry_point.name):
            yield entry_point.load()


def _command_of(argv: Sequence[str]) -> str | None:
    """The group the arguments name (the first non-option word), when it is a known one."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    known = {*COMMAND_MODULES, *(ep.name for ep in entry_points(group=PLUGIN_GROUP))}
    return first if first in known else None


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``kip714: error: ...``) and exit 2, like ours."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("kip714 ")
        self.exit(2, f"kip714: error: {_one_line(f'{command}: {message}')}\n")


def build_parser(wanted: str | None = None) -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kip714", description="Kafka KIP-714 client metrics tools.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in _registrars(wanted):
        register(subparsers)
    return parser


MAX_ERROR_LINE = 16_384
"""Characters of an error line: room for the log tail a failed start quotes (about 4 KB), not for a
megabyte of echoed input (values quoted in errors are bounded where they are quoted, too)."""


def non_utf8_argument(arguments: Sequence[str]) -> str | None:
    """One line naming the first argument that is not UTF-8 (Python keeps such bytes as lone surrogates,
    which every later encode refuses: the broker request, a file name, a log line), or None."""
    for position, argument in enumerate(arguments):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            flag, equals, value = argument.partition("=")
            if argument.startswith("--") and equals:
                name = flag
            elif position and arguments[position - 1].startswith("-"):
                name, value = arguments[position - 1], argument
            else:
                name, value = f"argument {position + 1}", argument
            return f"{name}: must be UTF-8 text (got {value!r})"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if (problem := non_utf8_argument(arguments)) is not None:
        print(f"kip714: error: {_one_line(problem)}", file=sys.stderr)
        return 2
    parser = build_parser(_command_of(arguments))
    args = parser.parse_args(arguments)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    if not args.verbose:
        # Airflow announces its config and timezone at INFO whenever a command touches a setting or a
        # connection; without -v only the command's own lines (and a one-line error) reach stderr.
        logging.getLogger("airflow").setLevel(logging.WARNING)
    ours = getattr(args.func, "__module__", "").startswith("airflow_provider_kip714.")
    try:
        # the provider's commands print results through cli.output; plug-in groups (kip714_dev) print theirs
        with output.results_only_on_stdout() if ours else contextlib.nullcontext():
            return int(args.func(args) or 0)
    except Kip714Error as err:
        print(f"kip714: error: {_one_line(str(err))}", file=sys.stderr)
        return 2
    except (ValueError, OverflowError) as err:
        # A parser that missed a case: still one line, never a traceback (the parsers are the fix).
        print(f"kip714: error: bad input: {_one_line(f'{type(err).__name__}: {err}')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kip714: interrupted", file=sys.stderr)
        return 130


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_ERROR_LINE else f"{line[: MAX_ERROR_LINE - 1]}… ({len(line)} characters)"


if __name__ == "__main__":
    sys.exit(main())
