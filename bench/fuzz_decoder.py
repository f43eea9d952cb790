"""Coverage-guided fuzzing of both OTLP decoders, each bounded in time (not run in CI).

``--python``: atheris (libFuzzer for CPython) drives ``decode_batch`` with the Python decoder and the
native one on the same bytes; any exception, or any difference between the two paths (rows, reasons,
point counts), is a finding. atheris is installed into the venv only when this runs
(``uv pip install atheris``); it is not a project dependency.
``--native``: cargo-fuzz runs the targets in ``native/fuzz/`` (no panic; consistent Arrow columns;
float text that round-trips). Needs ``cargo install cargo-fuzz`` and the nightly toolchain.

Seeds are the test payloads (``tests/unit/otlp_payloads.py``); corpora and crash artifacts go under
``native/fuzz/`` (ignored by git). Example: ``python bench/fuzz_decoder.py
--seconds 60`` (both). Prints each run's duration, executions and findings.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUZZ_DIR = ROOT / "native" / "fuzz"
PY_WORK = FUZZ_DIR / "python"  # atheris corpus and artifacts (ignored by git)
NATIVE_TARGETS = ("decode_metrics", "python_float_repr")


def _seeds() -> list[bytes]:
    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    from otlp_payloads import every_kind_payload, producer_like_payload

    return [producer_like_payload(5), producer_like_payload(1, seed=3), every_kind_payload()]


def _write_corpus(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for index, seed in enumerate(_seeds()):
        (directory / f"seed-{index}").write_bytes(seed)


def _executions(output: str) -> str:
    found = re.findall(r"Done (\d+) runs in (\d+) second", output)
    return f"{found[-1][0]} executions in {found[-1][1]} s" if found else "executions: not reported"


def run_python(seconds: int) -> int:
    """atheris over ``decode_batch``, in a child process (libFuzzer owns its process)."""
    subprocess.run(
        [str(ROOT / ".tools" / "bin" / "uv"), "pip", "install", "--python", sys.executable, "-q", "atheris"],
        check=True,
    )
    corpus = PY_WORK / "corpus"
    _write_corpus(corpus)
    artifacts = PY_WORK / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            __file__,
            "--atheris-child",
            f"-max_total_time={seconds}",
            f"-artifact_prefix={artifacts}/",
            "-print_final_stats=1",
            str(corpus),
        ],
        capture_output=True,
        text=True,
    )
    output = result.stdout + result.stderr
    crashes = sorted(path.name for path in artifacts.iterdir())
    print(
        f"python (atheris): {time.monotonic() - started:.0f} s wall, {_executions(output)}, "
        f"exit {result.returncode}, artifacts {crashes or 'none'}"
    )
    if result.returncode != 0:
        print(output[-3000:])
    return result.returncode


def _atheris_child() -> None:
    import atheris

    with atheris.instrument_imports():
        from airflow_provider_kip714.decoding.decoder import TopicRecord, decode_batch
        from airflow_provider_kip714.native_switches import DECODER_ENV

    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    from otlp_payloads import client_headers

    headers = client_headers()

    def one_input(data: bytes) -> None:
        records = [TopicRecord("_client_telemetry", 0, 0, 1_763_800_000_000, None, headers, data)]
        os.environ[DECODER_ENV] = "python"
        reference = decode_batch(records)
        os.environ[DECODER_ENV] = "native"
        fast = decode_batch(records)
        same_rows = repr(fast.datapoints.to_pylist()) == repr(reference.datapoints.to_pylist())
        if fast.failures != reference.failures or not same_rows:
            raise AssertionError(f"paths differ: {fast.failures} vs {reference.failures}")
        decode_batch(records, "auto")  # JSON-looking inputs through the OTLP/JSON parser

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
    atheris.Fuzz()


def run_native(seconds: int) -> int:
    """cargo-fuzz, ``seconds`` per target."""
    worst = 0
    for target in NATIVE_TARGETS:
        corpus = FUZZ_DIR / "corpus" / target
        if target == "decode_metrics":
            _write_corpus(corpus)
        corpus.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        result = subprocess.run(
            [
                "cargo",
                "+nightly",
                "fuzz",
                "run",
                target,
                "--",
                f"-max_total_time={seconds}",
                "-print_final_stats=1",
            ],
            cwd=FUZZ_DIR.parent,
            capture_output=True,
            text=True,
        )
        output = result.stdout + result.stderr
        artifacts = FUZZ_DIR / "artifacts" / target
        crashes = sorted(p.name for p in artifacts.iterdir()) if artifacts.exists() else []
        print(
            f"native {target} (cargo-fuzz): {time.monotonic() - started:.0f} s wall incl. build, "
            f"{_executions(output)}, exit {result.returncode}, artifacts {crashes or 'none'}"
        )
        if result.returncode != 0:
            print(output[-3000:])
        worst = worst or result.returncode
    return worst


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--atheris-child":
        _atheris_child()
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=int, default=60, help="fuzzing time per run (default 60)")
    parser.add_argument("--python", action="store_true", help="only the Python decoder (atheris)")
    parser.add_argument("--native", action="store_true", help="only the native decoder (cargo-fuzz)")
    args = parser.parse_args()
    if args.seconds <= 0:
        parser.error("--seconds: must be a positive number of seconds")
    both = not (args.python or args.native)
    if (args.native or both) and shutil.which("cargo") is None:
        parser.error("--native: cargo is not installed")
    status = 0
    if args.python or both:
        status = run_python(args.seconds) or status
    if args.native or both:
        status = run_native(args.seconds) or status
    sys.exit(1 if status else 0)


if __name__ == "__main__":
    main()
