"""``python -m kip714_dev.compat [--quick]``: run the compatibility matrix and print its table."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from kip714_dev.compat.clients import ClientSpec
from kip714_dev.compat.matrix import BrokerRun, run_matrix
from kip714_dev.compat.table import cell, metrics_section, render
from kip714_dev.compat.versions import (
    BROKERS,
    CONFLUENT_KAFKA,
    JAVA_CLIENTS,
    QUICK_BROKERS,
    QUICK_CONFLUENT_KAFKA,
    QUICK_JAVA_CLIENTS,
)


def _versions(text: str | None, default: Sequence[str], field: str) -> tuple[str, ...]:
    if text is None:
        return tuple(default)
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    for version in chosen:
        parts = version.split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise SystemExit(f"{field}: each version must look like 4.4.0, got {version!r}")
    return chosen


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kip714_dev.compat", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="the CI subset: oldest and newest broker, librdkafka 2.5"
    )
    parser.add_argument("--brokers", help=f"comma list of Kafka versions (default: {','.join(BROKERS)})")
    parser.add_argument(
        "--confluent-kafka", help="comma list of confluent-kafka releases (one per librdkafka)"
    )
    parser.add_argument("--java", help="comma list of kafka-clients releases ('' for none)")
    parser.add_argument("--seconds", type=float, default=8.0, help="how long each client runs (default 8)")
    parser.add_argument("--parallel", type=int, default=3, help="clients run at once per broker (default 3)")
    parser.add_argument("--budget-minutes", type=float, help="start no further broker after this long")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    if not 1 <= args.seconds <= 120:
        print("--seconds: must be between 1 and 120", file=sys.stderr)
        return 2
    if not 1 <= args.parallel <= 8:
        print("--parallel: must be between 1 and 8", file=sys.stderr)
        return 2
    brokers = _versions(args.brokers, QUICK_BROKERS if args.quick else BROKERS, "--brokers")
    librdkafka = _versions(
        args.confluent_kafka, QUICK_CONFLUENT_KAFKA if args.quick else CONFLUENT_KAFKA, "--confluent-kafka"
    )
    java = _versions(args.java, QUICK_JAVA_CLIENTS if args.quick else JAVA_CLIENTS, "--java")
    specs = [*(ClientSpec("librdkafka", v) for v in librdkafka), *(ClientSpec("java", v) for v in java)]
    began = datetime.now(UTC)

    def progress(run: BrokerRun) -> None:
        cells = ", ".join(f"{spec.label}: {cell(run, spec)}" for spec in specs)
        print(
            f"broker {run.version} ({run.seconds:.0f} s){' ' + run.error if run.error else ''}: {cells}",
            flush=True,
        )

    budget = args.budget_minutes * 60 if args.budget_minutes else None
    runs = run_matrix(
        brokers, specs, seconds=args.seconds, parallel=args.parallel, budget_s=budget, progress=progress
    )
    print()
    print(
        f"Compatibility matrix, {began:%Y-%m-%d %H:%M} UTC, "
        f"`python -m kip714_dev.compat {' '.join(argv or sys.argv[1:])}`"
    )
    print()
    print(render(runs, specs))
    print()
    print("Metric names each client release pushed (producer and consumer, newest broker it landed on):")
    print()
    print(metrics_section(runs, specs))
    broken = [run for run in runs if run.error and not run.error.startswith("not run")]
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
