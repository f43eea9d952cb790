"""The shape every ``kip714 local-*`` group shares: ``start | status | stop`` over one data dir.

A stand-in is a background service whose state lives in a data dir. ``start`` and ``status`` print
that state for a human or, with ``--json``, for a script; ``status`` exits 3 when nothing runs, so a
script can test it. Each group adds only its own options and its own way of printing a state.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

EXIT_NOT_RUNNING: Final = 3

if TYPE_CHECKING:  # subscriptable for type checkers only
    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
Command = Callable[[argparse.Namespace], int]


def add_group(subparsers: SubParsers, name: str, *, help: str, description: str) -> SubParsers:
    """``kip714 <name> ACTION``: the group's parser, whose actions the caller adds."""
    group = subparsers.add_parser(name, help=help, description=description)
    dest = f"{name.replace('-', '_')}_command"
    return group.add_subparsers(dest=dest, required=True, metavar="ACTION")


def add_data_dir_option(
    parser: argparse.ArgumentParser,
    *,
    parse: Callable[[str], Path],
    default: Path | None,
    help: str,
) -> None:
    parser.add_argument("--data-dir", type=parse, default=default, help=help)


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the state as JSON")


def add_lifecycle(
    commands: SubParsers,
    *,
    data_dir_option: Callable[[argparse.ArgumentParser], None],
    helps: tuple[str, str, str],
    run: tuple[Command, Command, Command],
) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """Add ``start``, ``status`` and ``stop`` (helps and commands in that order).

    Returns ``start`` and ``stop`` for the group's own options; ``start`` and ``status`` take
    ``--json``, all three the data dir.
    """
    parsers = []
    for (name, with_json), help, func in zip(
        (("start", True), ("status", True), ("stop", False)), helps, run, strict=True
    ):
        parser = commands.add_parser(name, help=help)
        data_dir_option(parser)
        if with_json:
            add_json_option(parser)
        parser.set_defaults(func=func)
        parsers.append(parser)
    return parsers[0], parsers[2]


def print_json(document: object) -> None:
    print(json.dumps(document, indent=2, sort_keys=True))


def not_running(what: str, data_dir: Path, *, as_json: bool) -> int:
    """Say nothing runs (on stderr when stdout is for JSON) and return the status exit code."""
    print(f"no {what} runs from {data_dir}", file=sys.stderr if as_json else sys.stdout)
    return EXIT_NOT_RUNNING
