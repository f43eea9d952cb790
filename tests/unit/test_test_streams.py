"""``make test``'s two streams hold every test file exactly once (a new folder would run in neither)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kip714_dev.test_streams import STREAMS, ignored

ROOT = Path(__file__).resolve().parents[2]


def _files(stream_paths: tuple[str, ...], ignores: list[str]) -> list[str]:
    files = []
    for path in stream_paths:
        target = ROOT / path
        found = [target] if target.is_file() else sorted(target.rglob("test_*.py"))
        files += [str(f.relative_to(ROOT)) for f in found if "__pycache__" not in f.parts]
    return [f for f in files if not any(f == i or f.startswith(f"{i}/") for i in ignores)]


def test_streams_cover_the_suite() -> None:
    run = Counter(f for stream in STREAMS for f in _files(stream.paths, ignored(stream)))
    everything = {
        str(f.relative_to(ROOT)) for f in (ROOT / "tests").rglob("test_*.py") if "__pycache__" not in f.parts
    }
    assert [f for f, n in run.items() if n > 1] == []  # no file in two streams
    assert everything - set(run) == set()  # none in neither
