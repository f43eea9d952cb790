"""``make test``: the suite in two pytest processes at once, so its waiting overlaps its computing.

Most of the integration tests wait: for clients to push (every second or every five), for a window to
end, for a live Airflow's scheduler to pick a task up. Run one after the other, the suite's wall time
is the sum of every wait; run as two streams side by side on the same machine (each with its own
Kafka, Spark Connect server and temporary folders, all on free ports), one stream's work fills the
other's waits. Each stream's tests are those of its folders; a stream's output is shown when it
ends, with its own summary, and the exit status fails if either stream failed.

    python -m kip714_dev.test_streams            # both streams (what make test runs)
    python -m kip714_dev.test_streams -k foo     # any argument: one ordinary pytest run with them
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final


@dataclass(frozen=True)
class Stream:
    name: str
    paths: tuple[str, ...]
    """Folders and files; a file named by another stream is left out of a folder here (``--ignore``)."""


STREAMS: Final = (
    Stream("integration", ("tests/integration",)),
    Stream(
        "unit-spark-and-two-long-stories",
        (
            "tests/unit",
            "tests/ui",
            "tests/spark",
            "tests/integration/test_live_mode_airflow.py",
            "tests/integration/test_cluster_topology.py",
        ),
    ),
)
"""Every test file belongs to exactly one stream (``test_streams_cover_the_suite`` checks it). Balanced
on one sequential run's durations (2026-12-05, 60 min in all): tests/integration 2,648 s, of which the
live-mode story 564 s and the cluster topology 370 s; tests/spark 763 s, tests/unit 164 s, tests/ui
38 s; plus the live-failures test since (about 300 s). So about 33 minutes each."""


def ignored(stream: Stream) -> list[str]:
    """Files other streams name that lie in one of this stream's folders."""
    others = [path for other in STREAMS if other is not stream for path in other.paths]
    return [path for path in others if any(path.startswith(f"{mine}/") for mine in stream.paths)]


HEARTBEAT_S: Final = 300.0


def _minutes(since: float) -> str:
    return f"{(time.monotonic() - since) / 60:.1f} min"


def _last_line(log: Path) -> str:
    """The stream's latest progress line (pytest's ``path .....  [ 42%]``)."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][-160:] if lines else "(starting)"


def _pytest() -> str:
    return str(Path(sys.executable).parent / "pytest")


def run_streams(root: Path) -> int:
    base = Path(tempfile.mkdtemp(prefix="kip714-test-streams-"))
    started = time.monotonic()
    running = []
    for stream in STREAMS:
        log = base / f"{stream.name}.log"
        command = [
            _pytest(),
            *stream.paths,
            *(f"--ignore={path}" for path in ignored(stream)),
            f"--basetemp={base / stream.name}",  # a shared pytest-of-<user> folder prunes the other's
            "-p",
            "no:cacheprovider",  # two writers of .pytest_cache would race
        ]
        print(f"stream {stream.name}: {' '.join(stream.paths)} (log {log})", flush=True)
        with log.open("w") as out:
            running.append(
                (stream, log, subprocess.Popen(command, cwd=root, stdout=out, stderr=subprocess.STDOUT))
            )
    failed = []
    waiting = list(running)
    last_heartbeat = time.monotonic()
    while waiting:
        time.sleep(2)
        if time.monotonic() - last_heartbeat >= HEARTBEAT_S:  # CI sees progress
            last_heartbeat = time.monotonic()
            for stream, log, _ in waiting:
                print(f"  [{_minutes(started)}] {stream.name}: {_last_line(log)}", flush=True)
        for entry in [entry for entry in waiting if entry[2].poll() is not None]:
            stream, log, process = entry
            waiting.remove(entry)
            print(f"\n===== stream {stream.name}: exit {process.returncode} after {_minutes(started)} =====")
            sys.stdout.write(log.read_text(errors="replace"))
            sys.stdout.flush()
            if process.returncode != 0:
                failed.append(stream.name)
    print(f"\nboth streams done in {_minutes(started)}", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", flush=True)
        return 1
    return 0


def main(argv: list[str]) -> int:
    root = Path.cwd()
    if argv:
        return subprocess.call([_pytest(), *argv], cwd=root, env=os.environ)
    return run_streams(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
