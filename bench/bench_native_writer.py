"""Staging CPU of the native writers: the hand-written Parquet writer against the arrow-rs ``parquet`` crate.

Landing's staging threads hand each chunk to ``write_natively`` (decode + the ``datapoints/`` files, one
call into the extension) and ``write_raw_natively`` (the ``raw/`` file). This times exactly those two
calls, ``thread_time`` of this thread (the extension releases the GIL but runs on the calling thread),
over 100,000 records of 10 points in chunks of 5,000 (landing's default), the records ``bench_landing.py``
lands (64 producer-like payloads, one client's 14 headers, as the native reader hands them over: Arrow
binary arrays). No broker, no file writes, no fsync.

Both writers run in the same process, in alternating rounds (``hand, crate, crate, hand, ...``) so that
drift on a shared machine hits both alike; the summary gives each writer's median CPU seconds per
100,000 records and crate/hand. The crate writer needs an extension built with the cargo feature
``parquet-crate`` (``--build`` builds it and puts it into the venv); before timing, both writers'
files are read back with pyarrow and must hold the same rows.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from otlp_payloads import client_headers, producer_like_payload  # noqa: E402

WRITERS = ("hand", "crate")


def build_with_crate() -> None:
    """Build the extension with the prototype's cargo feature (release profile, as the wheel is built) and
    put it in place of the installed one; ``make venv`` puts the default build back."""
    import importlib.util

    subprocess.run(
        ["cargo", "build", "--release", "--lib", "--features", "python,parquet-crate"],
        cwd=ROOT / "native",
        check=True,
    )
    spec = importlib.util.find_spec("kip714_native")
    assert spec is not None and spec.origin is not None, "kip714_native is not installed (make venv)"
    installed = Path(spec.origin)
    if installed.name == "__init__.py":
        installed = next(installed.parent.glob("kip714_native*.so"))
    staged = installed.with_name(installed.name + ".new")
    shutil.copyfile(ROOT / "native" / "target" / "release" / "libkip714_native.so", staged)
    os.replace(staged, installed)  # a new file: processes that loaded the old one keep it intact


def chunks(records: int, chunk: int, points: int) -> list[object]:
    from airflow_provider_kip714.decoding.header_sets import HeaderSets
    from airflow_provider_kip714.decoding.records import RecordColumns

    payloads = [producer_like_payload(points, seed=seed) for seed in range(64)]
    headers = client_headers()
    sets = HeaderSets()
    slot = sets.slots([headers])[0]
    topic = "bench-telemetry"
    out = []
    for start in range(0, records, chunk):
        n = min(chunk, records - start)
        offsets = list(range(start, start + n))
        out.append(
            RecordColumns(
                [topic] * n,
                [0] * n,
                offsets,
                [1_763_856_000_000 + o for o in offsets],
                pa.array([b"client-%02d" % (o % 64) for o in offsets], pa.binary()),
                sets.sets,
                [slot] * n,
                pa.array([payloads[o % 64] for o in offsets], pa.binary()),
            )
        )
    return out


def use(writer: str) -> None:
    """Point the extension's writer entry points (looked up at each call by ``decoding/native_writer.py``)
    at the hand-written writer or the crate prototype."""
    import kip714_native

    if not hasattr(kip714_native, "_hand"):
        kip714_native._hand = (kip714_native.write_datapoints, kip714_native.write_raw)
    if writer == "hand":
        kip714_native.write_datapoints, kip714_native.write_raw = kip714_native._hand
    else:
        kip714_native.write_datapoints = kip714_native.write_datapoints_crate
        kip714_native.write_raw = kip714_native.write_raw_crate


def stage(columns: list[object]) -> tuple[float, float, int]:
    """CPU seconds of datapoints and raw writing over the chunks, and the points written."""
    from airflow_provider_kip714.decoding.native_writer import write_natively, write_raw_natively

    datapoints = raw = 0.0
    points = 0
    for chunk in columns:
        started = time.thread_time()
        written = write_natively(chunk)  # type: ignore[arg-type]
        middle = time.thread_time()
        raw_file = write_raw_natively(chunk)  # type: ignore[arg-type]
        ended = time.thread_time()
        assert written is not None and raw_file is not None
        datapoints += middle - started
        raw += ended - middle
        points += written.points
    return datapoints, raw, points


def same_rows(columns: list[object]) -> None:
    """Both writers' files of the first chunk read back as the same rows and schema in pyarrow."""
    from airflow_provider_kip714.decoding.native_writer import write_natively, write_raw_natively

    tables: dict[str, list[pa.Table]] = {}
    for writer in WRITERS:
        use(writer)
        written = write_natively(columns[0])  # type: ignore[arg-type]
        raw_file = write_raw_natively(columns[0])  # type: ignore[arg-type]
        assert written is not None and raw_file is not None
        tables[writer] = [pq.read_table(io.BytesIO(f.data)) for f in written.files] + [
            pq.read_table(io.BytesIO(raw_file.data))
        ]
    for hand, crate in zip(tables["hand"], tables["crate"], strict=True):
        assert hand.schema.equals(crate.schema), (hand.schema, crate.schema)
        assert hand.equals(crate), "the two writers' files hold different rows"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=5_000, help="records per chunk (landing's default)")
    parser.add_argument("--points-per-record", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10, help="rounds per writer, interleaved")
    parser.add_argument(
        "--build", action="store_true", help="build the extension with the crate writer first"
    )
    args = parser.parse_args()
    if args.build:
        build_with_crate()
    import kip714_native

    if not hasattr(kip714_native, "write_datapoints_crate"):
        sys.exit("kip714_native: built without the cargo feature parquet-crate (rerun with --build)")
    columns = chunks(args.records, args.chunk, args.points_per_record)
    same_rows(columns)
    per = 100_000 / args.records
    for writer in WRITERS:  # warm-up: thread-local scratch, allocator, page cache
        use(writer)
        stage(columns)
    results: dict[str, list[tuple[float, float]]] = {writer: [] for writer in WRITERS}
    print(
        f"records={args.records} chunk={args.chunk} points/record={args.points_per_record} "
        f"rounds={args.rounds} per writer; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    order: list[str] = []
    for number in range(args.rounds):
        order += list(WRITERS) if number % 2 == 0 else list(reversed(WRITERS))
    for writer in order:
        use(writer)
        datapoints, raw, points = stage(columns)
        results[writer].append((datapoints * per, raw * per))
        print(
            f"  {writer:5}  datapoints {datapoints * per:.3f} s  raw {raw * per:.3f} s  "
            f"staging {(datapoints + raw) * per:.3f} CPU s per 100,000 records ({points:,} points)"
        )
    median: Callable[[list[float]], float] = statistics.median
    summary = {}
    for writer in WRITERS:
        runs = results[writer]
        summary[writer] = (
            median([d for d, _ in runs]),
            median([r for _, r in runs]),
            median([d + r for d, r in runs]),
        )
        d, r, s = summary[writer]
        print(
            f"median {writer:5}: datapoints {d:.3f} s, raw {r:.3f} s, staging {s:.3f} CPU s per 100k records"
        )
    hand, crate = summary["hand"], summary["crate"]
    print(
        f"crate / hand: datapoints {crate[0] / hand[0]:.2f}x, raw {crate[1] / hand[1]:.2f}x, "
        f"staging {crate[2] / hand[2]:.2f}x (adopt the crate at <= 1.15x)"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
