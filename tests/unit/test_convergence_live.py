"""Live convergence without servers: the window record, committed-only reads, regexes RE2 refuses."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from airflow_provider_kip714.analytics.convergence_live import (
    POINT_COLUMNS,
    ConvergenceWindow,
    convergence_so_far,
)
from airflow_provider_kip714.analytics.landed import read_landed_points
from airflow_provider_kip714.storage.data_root import troubleshoot_area
from airflow_provider_kip714.troubleshooting.window import (
    CONVERGENCE_WINDOWS_FILE,
    read_convergence_windows,
    write_convergence_windows,
)
from tests.support.synthetic_landing import LandingWriter, make_client, series_table

AT = datetime(2026, 11, 24, 5, 0, tzinfo=UTC)
NANOS = 1_000_000_000
METRIC = "org.apache.kafka.producer.record.queue.time.avg"


def _land(root: Path, client_id: str, first_after_s: int) -> None:
    """One client pushing ``METRIC`` every 10 s from ``first_after_s`` after AT, for a minute."""
    base = int(AT.timestamp()) * NANOS
    times = np.array([[base + (first_after_s + 10 * i) * NANOS for i in range(6)]], dtype=np.int64)
    client = make_client(int(client_id.rsplit("-", 1)[1]), client_id=client_id)
    LandingWriter(root).write(series_table([client], METRIC, "gauge", None, {}, times, np.ones(times.shape)))


def test_window_record_round_trip_and_damaged_entries_skipped(tmp_path: Path) -> None:
    zone = troubleshoot_area("manual__x", tmp_path)
    window = {"name": "kip714-troubleshoot-exp20261124T053000Z-0a1b2c3d", "start": AT.isoformat()}
    window["end"] = (AT + timedelta(minutes=30)).isoformat()
    write_convergence_windows(zone, window, ["org.apache.kafka.producer."], {"client_id": "orders-.*"})
    (recorded,) = read_convergence_windows(zone)
    assert recorded == ConvergenceWindow(
        window["name"], AT, ("org.apache.kafka.producer.",), {"client_id": "orders-.*"}
    )
    path = zone.root / CONVERGENCE_WINDOWS_FILE
    entries = json.loads(path.read_text())
    entries += [{"name": "no-time"}, {"name": "naive", "subscribed_at": "2026-11-24T05:00:00"}, "text"]
    path.write_text(json.dumps(entries))
    assert [w.name for w in read_convergence_windows(zone)] == [window["name"]]
    path.write_text("{not json")
    assert read_convergence_windows(zone) == []
    assert read_convergence_windows(troubleshoot_area("other", tmp_path)) == []


def test_only_committed_chunks_are_read(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _land(landing, "orders-1", 5)
    window = ConvergenceWindow("w", AT, ("org.apache.kafka.producer.",), {"client_id": "orders-.*"})
    before = convergence_so_far(read_landed_points(landing, POINT_COLUMNS), window, AT + timedelta(hours=1))
    assert (before.matched_clients, before.converged_clients, before.shares["p100_seconds"]) == (1, 1, 5.0)
    # a lander's chunk without its commit marker (being written, or left by a crash) is not landed yet
    (landing / "_commits").mkdir()
    (landing / "_commits" / "PROTOCOL").write_text("kip714 landing commit markers v1\n")
    other = tmp_path / "other"
    _land(other, "orders-2", 1)
    (source,) = other.rglob("*.parquet")
    target = next(landing.rglob("*.parquet")).parent / f"p00000-{0:020d}-{9:020d}.abcdef12.parquet"
    shutil.copyfile(source, target)
    assert read_landed_points(landing, POINT_COLUMNS).num_rows == 6
    (landing / "_commits" / f"p00000-{0:020d}-{9:020d}.abcdef12.commit").write_text("{}")
    after = convergence_so_far(read_landed_points(landing, POINT_COLUMNS), window, AT + timedelta(hours=1))
    assert (after.matched_clients, after.converged_clients, after.shares["p50_seconds"]) == (2, 2, 1.0)


def test_since_prunes_and_an_empty_zone_is_empty(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    assert read_landed_points(landing, POINT_COLUMNS).num_rows == 0
    _land(landing, "orders-1", 5)
    assert read_landed_points(landing, POINT_COLUMNS, since=AT + timedelta(hours=2)).num_rows == 0
    assert read_landed_points(landing, POINT_COLUMNS, since=AT - timedelta(hours=2)).num_rows == 6


def test_a_regex_re2_refuses_is_reported_not_guessed(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _land(landing, "orders-1", 5)
    window = ConvergenceWindow("w", AT, ("*",), {"client_id": "orders-(?=1)\\d"})  # lookahead: Java only
    result = convergence_so_far(read_landed_points(landing, POINT_COLUMNS), window, AT + timedelta(hours=1))
    assert result.problem is not None and "cannot be judged" in result.problem
    assert result.matched_clients == 0
