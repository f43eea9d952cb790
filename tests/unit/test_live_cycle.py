"""A live cycle's plan and detection: which chunks it reads, which hour partitions it judges.

Chunks: a cycle reads the chunks from the offsets of the last cycle that began before its window (less
the clock slack), so no record accepted inside the window is skipped, whoever landed it.

Hours: each cycle's pipeline replaces the hour partitions of its trailing window in ``<root>/live/analytics``;
an hour the window has left keeps what the last cycle reaching into it wrote, until a cycle an hour later
removes it. The tables
here are Parquet files in the apps' ``date=/hour=`` layout, read by the same reader as in production.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from airflow_provider_kip714.analytics.tables import HourPartitions
from airflow_provider_kip714.findings.model import Transition
from airflow_provider_kip714.findings.store import CycleStart, LiveStore
from airflow_provider_kip714.live.cycle import (
    CLOCK_SLACK,
    HOURLY_LAG,
    SPARK_SESSION_IDLE,
    SPARK_SESSION_LIFETIME,
    baseline_history_end,
    baselines_cache,
    begin_cycle,
    chunks_from,
    detect,
    prune_left_hours,
    refreshes_capabilities,
    skipped_span,
    spark_session_for,
)
from airflow_provider_kip714.live.settings import LiveSettings
from airflow_provider_kip714.storage.data_root import RunArea, live_area, scheduled_area

NOON = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
LOOKBACK = timedelta(minutes=3)


def _anomaly(instance: str, start: datetime) -> dict[str, object]:
    return {
        "kind": "baseline",
        "rule_name": "peers:org.apache.kafka.producer.metric0.avg",
        "severity": "critical",
        "metric_name": "org.apache.kafka.producer.metric0.avg",
        "field": "peer_deviation",
        "client_group": "client_id~orders",
        "comparison": ">",
        "threshold": 4.0,
        "peak_value": 1e6,
        "duration_seconds": 40,
        "breach_start": pd.Timestamp(start),
        "breach_end": pd.Timestamp(start + timedelta(seconds=40)),
        "baseline_kind": "peers",
        "peer_group": "client_id~orders",
        "client_instance_id": instance,
        "client_instance_id_hex": None,
        "client_id": f"orders-{instance[-1]}",
        "client_software_name": "librdkafka",
        "client_software_version": "2.16.0",
        "client_source_address": "127.0.0.1",
        "principal": "User:ANONYMOUS",
        "attributes_key": "",
    }


def _write_hour(root: Path, hour: datetime, rows: list[dict[str, object]]) -> None:
    """What a cycle's pipeline leaves in one hour partition of the live ``anomalies`` table."""
    folder = live_area(root).table("anomalies") / f"date={hour:%Y-%m-%d}" / f"hour={hour.hour}"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    pd.DataFrame(rows).to_parquet(folder / "part-00000.parquet", index=False)


def _cycle(root: Path, store: LiveStore, end: datetime) -> list[tuple[str, Transition]]:
    changed = detect(store, live_area(root), end, end, f"cycle-{end:%H%M}", window_start=end - LOOKBACK)
    return [(finding.client.client_instance_id or "", finding.transition) for finding in changed]


def test_an_hour_the_window_left_neither_opens_nor_keeps_findings(tmp_path: Path) -> None:
    store = LiveStore(tmp_path)
    eleven = NOON - timedelta(hours=1)
    # 11:59: the window [11:56, 11:59) holds client A's breach, written into hour 11
    _write_hour(tmp_path, eleven, [_anomaly("instance-A", NOON - timedelta(minutes=2))])
    assert _cycle(tmp_path, store, NOON - timedelta(minutes=1)) == [("instance-A", Transition.OPENED)]
    # 12:05: the window [12:02, 12:05) is all hour 12 (B breaches there, A is fine); nothing rewrites
    # hour 11, which still holds A's row and a row of C that the last cycle reaching into it wrote
    stale = [
        _anomaly("instance-A", NOON - timedelta(minutes=2)),
        _anomaly("instance-C", NOON - timedelta(seconds=40)),
    ]
    _write_hour(tmp_path, eleven, stale)
    _write_hour(tmp_path, NOON, [_anomaly("instance-B", NOON + timedelta(minutes=3))])
    assert sorted(_cycle(tmp_path, store, NOON + timedelta(minutes=5))) == [
        ("instance-A", Transition.RESOLVED),
        ("instance-B", Transition.OPENED),
    ]
    assert [f.client.client_instance_id for f in store.open_findings()] == ["instance-B"]


def test_a_window_across_the_hour_reads_both_hours(tmp_path: Path) -> None:
    store = LiveStore(tmp_path)
    _write_hour(tmp_path, NOON - timedelta(hours=1), [_anomaly("instance-A", NOON - timedelta(minutes=1))])
    _write_hour(tmp_path, NOON, [_anomaly("instance-B", NOON + timedelta(seconds=30))])
    opened = _cycle(tmp_path, store, NOON + timedelta(minutes=1))  # window [11:58, 12:01)
    assert sorted(opened) == [("instance-A", Transition.OPENED), ("instance-B", Transition.OPENED)]


def test_a_record_landed_between_two_distant_cycles_is_still_read() -> None:
    """Cycle A at T lands offsets 100-199; a slow cycle B starts at T+150 s. Between them, at T+120 s,
    the hourly DAG lands 200-299 (accepted T+5 s..T+120 s). Cycle C at T+280 s analyses [T+100 s, ...):
    the records accepted from T+100 s on are in 200-299, below B's offsets."""
    t = NOON
    a = CycleStart(t, {0: 100})
    b = CycleStart(t + timedelta(seconds=150), {0: 300, 1: 40})
    c = CycleStart(t + timedelta(seconds=280), {0: 320, 1: 45})
    since = t + timedelta(seconds=100) - CLOCK_SLACK
    assert chunks_from([a, b, c], since) == {0: 100, 1: 0}  # partition 1 had nothing committed at T
    assert chunks_from([a, b, c], t - timedelta(seconds=1)) is None  # live mode younger than the window
    assert chunks_from([a, b, c], b.at) == {0: 300, 1: 40}


def test_a_cycle_reads_new_chunks_of_every_partition_even_one_no_cycle_knew() -> None:
    """The landing zone's chunk names decide: before the offset, skipped; at or after, read; a partition
    that had no chunk when the cycles began (created since, or first landed now) is read whole."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark_apps"))
    from kip714_common.landing import _chunk_selected

    selected = {0: 100, 1: 50}

    def name(partition: int, first: int, last: int) -> str:
        return f"p{partition:05d}-{first:020d}-{last:020d}.0123abcd.parquet"

    assert not _chunk_selected(name(0, 0, 99), selected)
    assert _chunk_selected(name(0, 90, 120), selected)  # straddles the offset: holds newer records
    assert _chunk_selected(name(1, 50, 60), selected)
    assert _chunk_selected(name(7, 0, 3), selected)  # a partition no cycle knew
    assert _chunk_selected("synthetic-part-0.parquet", selected)


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"KIP714_LIVE_LOOKBACK": "-3m"}, "KIP714_LIVE_LOOKBACK"),
        ({"KIP714_LIVE_LOOKBACK": "nan"}, "KIP714_LIVE_LOOKBACK"),
        ({"KIP714_LIVE_LOOKBACK": "\u0663m"}, "KIP714_LIVE_LOOKBACK"),
        ({"KIP714_LIVE_LOOKBACK": "99999h"}, "KIP714_LIVE_LOOKBACK"),
        ({"KIP714_LIVE_BUCKET": "7s"}, "KIP714_LIVE_BUCKET"),
        ({"KIP714_LIVE_BUCKET": "<b>1s</b>"}, "KIP714_LIVE_BUCKET"),
        ({"KIP714_LIVE_HISTORY": "0"}, "KIP714_LIVE_HISTORY"),
        ({"KIP714_UI_BASE_URL": "javascript:alert(1)"}, "KIP714_UI_BASE_URL"),
        ({"KIP714_LIVE_EVERY": "5s"}, "KIP714_LIVE_EVERY"),
        ({"KIP714_LIVE_EVERY": "often"}, "KIP714_LIVE_EVERY"),
        ({"KIP714_LIVE_EVERY": "2h"}, "KIP714_LIVE_EVERY"),
        ({"KIP714_LIVE_EVERY": "1m", "KIP714_LIVE_LOOKBACK": "1m"}, "KIP714_LIVE_EVERY"),
        ({"KIP714_LIVE_EVERY": "46s", "KIP714_LIVE_LOOKBACK": "1m"}, "KIP714_LIVE_EVERY"),
        ({"KIP714_LIVE_EVERY": "5m"}, "KIP714_LIVE_EVERY"),
        ({"KIP714_LIVE_CAPABILITIES_EVERY": "1s"}, "KIP714_LIVE_CAPABILITIES_EVERY"),
        ({"KIP714_LIVE_CAPABILITIES_EVERY": "2d"}, "KIP714_LIVE_CAPABILITIES_EVERY"),
    ],
)
def test_a_bad_live_setting_is_refused_naming_the_variable(environ: dict[str, str], named: str) -> None:
    from airflow_provider_kip714.exceptions import Kip714Error
    from airflow_provider_kip714.live.settings import LiveSettings

    with pytest.raises(Kip714Error) as refused:
        LiveSettings.from_env(environ)
    assert str(refused.value).startswith(named) and "\n" not in str(refused.value)


def test_an_interval_as_long_as_the_lookback_is_refused_in_one_line_naming_both() -> None:
    from airflow_provider_kip714.exceptions import Kip714Error
    from airflow_provider_kip714.live.settings import LiveSettings

    with pytest.raises(Kip714Error) as refused:
        LiveSettings.from_env({"KIP714_LIVE_EVERY": "1m", "KIP714_LIVE_LOOKBACK": "1m"})
    assert str(refused.value) == (
        "KIP714_LIVE_EVERY: must be at least 15s shorter than KIP714_LIVE_LOOKBACK (60s), "
        "or pushes between cycles fall in no live window (got 60s)"
    )


def test_live_mode_runs_back_to_back_or_once_per_interval() -> None:
    from datetime import timedelta

    from airflow_provider_kip714.live.settings import LiveSettings

    assert LiveSettings.from_env({}).schedule == "@continuous"
    assert LiveSettings.from_env({"KIP714_LIVE_EVERY": "continuous"}).schedule == "@continuous"
    assert LiveSettings.from_env({"KIP714_LIVE_EVERY": "1m"}).schedule == timedelta(minutes=1)
    # the longest interval whose windows still meet the last cycle's, Airflow's start delay allowed for
    paced = {"KIP714_LIVE_EVERY": "45s", "KIP714_LIVE_LOOKBACK": "1m"}
    assert LiveSettings.from_env(paced).schedule == timedelta(seconds=45)


def test_capabilities_are_refreshed_by_the_first_cycle_of_each_period_only() -> None:
    """Which metrics a library pushes changes with deployments: one cycle per ``capabilities_every``
    (epoch-aligned periods) runs that step, the others skip its ~4 s of task CPU."""
    every = timedelta(minutes=10)
    at = datetime(2026, 12, 6, 6, 0, 5, tzinfo=UTC)
    assert refreshes_capabilities(None, at, every)  # live mode's first cycle
    assert not refreshes_capabilities(at, at + timedelta(seconds=30), every)
    assert not refreshes_capabilities(at, at + timedelta(minutes=9, seconds=54), every)
    assert refreshes_capabilities(at, at + timedelta(minutes=9, seconds=55), every)  # 06:10:00
    assert refreshes_capabilities(at, at + timedelta(hours=3), every)


def test_a_cycle_that_begins_more_than_a_lookback_after_the_last_names_the_span_no_window_covered() -> None:
    """Measured at 10,000 instances on 2 cores: cycles of 3-6 minutes against a 3-minute lookback left
    pushes in no live window. ``begin_cycle`` logs that span (a WARNING), instead of losing it silently."""
    lookback = timedelta(minutes=3)
    at = datetime(2026, 12, 6, 7, 0, tzinfo=UTC)
    assert skipped_span(None, at, lookback) is None
    assert skipped_span(at, at + timedelta(minutes=2), lookback) is None  # windows overlap
    assert skipped_span(at, at + lookback, lookback) is None  # they meet
    assert skipped_span(at, at + timedelta(minutes=6, seconds=4), lookback) == (
        at,
        at + timedelta(minutes=3, seconds=4),
    )


def test_cycles_share_a_spark_session_until_a_pause_or_an_hour(tmp_path: Path) -> None:
    assert spark_session_for([], NOON) != spark_session_for([], NOON)  # the first cycle: a new one
    older = CycleStart(NOON - timedelta(minutes=1), {0: 5})  # a cursor written before sessions were kept
    first = spark_session_for([older], NOON)
    cycles = [older, CycleStart(NOON, {0: 7}, first)]
    assert spark_session_for(cycles, NOON + timedelta(seconds=30)) == first
    after_pause = NOON + SPARK_SESSION_IDLE + timedelta(seconds=1)
    assert spark_session_for(cycles, after_pause) != first
    hourly = [CycleStart(NOON + timedelta(minutes=m), {0: m}, first) for m in range(0, 60, 5)]
    assert spark_session_for(hourly, NOON + timedelta(minutes=59)) == first
    assert spark_session_for(hourly, NOON + SPARK_SESSION_LIFETIME) != first  # at most an hour in one session

    damaged = [*cycles[:1], CycleStart(NOON, {0: 7}, "not-a-session")]  # a hand-edited cursor
    assert spark_session_for(damaged, NOON + timedelta(seconds=30)) != "not-a-session"

    store = LiveStore(tmp_path)
    store.write_cycle_starts(cycles)
    assert store.cycle_starts() == cycles
    landing = tmp_path / "landing"
    plan = begin_cycle(
        store, landing, "kip714-telemetry", NOON + timedelta(seconds=30), LiveSettings.from_env({})
    )
    assert plan.spark_session == first == store.cycle_starts()[-1].spark_session  # what the cycle runs in


def test_the_fell_behind_warning_names_the_interval_only_when_cycles_are_paced() -> None:
    from airflow_provider_kip714.live.cycle import fell_behind_message
    from airflow_provider_kip714.live.settings import LiveSettings

    at = datetime(2026, 12, 7, 20, 7, 37, tzinfo=UTC)
    span = (at, at + timedelta(seconds=2))
    back_to_back = fell_behind_message(span, LiveSettings(lookback=timedelta(minutes=3)))
    assert "KIP714_LIVE_EVERY" not in back_to_back and "(180s) ago" in back_to_back
    assert back_to_back.endswith("give the Spark server more cores, or raise KIP714_LIVE_LOOKBACK.")
    paced = fell_behind_message(span, LiveSettings(lookback=timedelta(minutes=3), every=timedelta(minutes=1)))
    assert "begin further apart than it (KIP714_LIVE_EVERY=60s)" in paced
    assert "shorten KIP714_LIVE_EVERY" in paced and "\n" not in paced


def _rollups(hourly: RunArea) -> HourPartitions:
    """The hourly rollups table's partitions as a cycle lists them (afresh: the test writes between calls)."""
    return HourPartitions(hourly, "rollups")


def _hourly_rollups(root: Path, *hours: datetime, visible: bool = True) -> None:
    """What ``kip714_rollups`` leaves for each hour: one partition of the hourly ``rollups`` table."""
    for hour in hours:
        folder = scheduled_area(root).table("rollups") / f"date={hour:%Y-%m-%d}" / f"hour={hour.hour}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ("part-00000.parquet" if visible else "_SUCCESS")).write_bytes(b"")


def test_own_baselines_learn_from_the_last_whole_hour_the_hourly_table_holds(tmp_path: Path) -> None:
    """Not from ``[start - history, start)``: the hourly table holds no minute of the current hour, so late
    in an hour that span held a few minutes of the hour before, fewer buckets than a baseline needs."""
    hourly = scheduled_area(tmp_path)
    late = NOON + timedelta(minutes=55)  # a window beginning at 12:55
    assert baseline_history_end(_rollups(hourly), late) is None  # no hourly table yet
    _hourly_rollups(tmp_path, NOON - timedelta(hours=2))  # 10:00-11:00 only: the 11:00 run is still going
    assert baseline_history_end(_rollups(hourly), late) == NOON - timedelta(hours=1)
    _hourly_rollups(tmp_path, NOON - timedelta(hours=1), NOON)  # 11:00 and 12:00 written
    assert baseline_history_end(_rollups(hourly), late) == NOON  # not 13:00: that hour is the window's own
    assert baseline_history_end(_rollups(hourly), NOON + timedelta(hours=1)) == NOON + timedelta(hours=1)

    behind = NOON + HOURLY_LAG + timedelta(hours=1, minutes=5)  # 14:05, the 13:00 hour not written yet
    assert baseline_history_end(_rollups(hourly), behind) == NOON + timedelta(hours=1)
    stale = behind + timedelta(hours=1)  # 15:05: the hourly DAG stopped after its 12:00-13:00 run
    assert baseline_history_end(_rollups(hourly), stale) is None
    _hourly_rollups(tmp_path, NOON + timedelta(hours=1), visible=False)  # Spark's marker, no rows
    assert baseline_history_end(_rollups(hourly), NOON + timedelta(hours=2)) == NOON + timedelta(
        hours=1
    )  # not 14:00


def test_the_history_end_crosses_midnight_and_reaches_the_pipeline(tmp_path: Path) -> None:
    midnight = datetime(2026, 11, 28, tzinfo=UTC)
    _hourly_rollups(tmp_path, midnight - timedelta(hours=1))  # 23:00-24:00 of the day before
    plan = begin_cycle(
        LiveStore(tmp_path),
        tmp_path / "landing",
        "kip714-telemetry",
        midnight + timedelta(minutes=4),
        LiveSettings.from_env({}),
        hourly=scheduled_area(tmp_path),
    )
    assert plan.history_end == midnight
    assert plan.history_end_flag() == "2026-11-28T00:00:00+00:00"
    assert plan.baselines_cache_flag() == str(
        baselines_cache(
            live_area(tmp_path).root,
            _rollups(scheduled_area(tmp_path)),
            midnight - timedelta(hours=1),
            midnight,
        )
    )
    without = begin_cycle(
        LiveStore(tmp_path / "other"), tmp_path / "landing", "t", midnight, LiveSettings.from_env({})
    )
    assert (without.history_end, without.history_end_flag(), without.baselines_cache_flag()) == (
        None,
        None,
        None,
    )


def test_learned_baselines_are_kept_per_history_and_learned_again_when_an_hour_is_rewritten(
    tmp_path: Path,
) -> None:
    hourly, live_root = scheduled_area(tmp_path), live_area(tmp_path).root
    _hourly_rollups(tmp_path, NOON - timedelta(hours=1))
    span = (NOON - timedelta(hours=1), NOON)
    first = baselines_cache(live_root, _rollups(hourly), *span)
    assert first.parent == live_root / "baselines" and first.name.startswith("2026-11-27T12-")
    first.mkdir(parents=True)
    assert (
        baselines_cache(live_root, _rollups(hourly), *span) == first
    )  # the next cycle reads what this one learned
    hour = scheduled_area(tmp_path).table("rollups") / "date=2026-11-27" / "hour=11"
    (hour / "part-00000.parquet").write_bytes(b"rewritten by a rerun of the 11:00 hour")
    rewritten = baselines_cache(live_root, _rollups(hourly), *span)
    assert rewritten != first and not first.exists()  # learned again; the stale folder removed
    _hourly_rollups(tmp_path, NOON)
    later = baselines_cache(live_root, _rollups(hourly), NOON, NOON + timedelta(hours=1))
    assert later.name.startswith("2026-11-27T13-") and later != rewritten


def test_hours_the_window_left_an_hour_ago_are_removed_from_the_tables_cycles_rewrite(tmp_path: Path) -> None:
    """Kept, every cycle read them again: its cost grew with live mode's age."""
    live = live_area(tmp_path)
    yesterday = NOON - timedelta(days=1)
    held = [yesterday, NOON - timedelta(hours=2), NOON - timedelta(hours=1), NOON]
    for table in ("anomalies", "rollups", "capabilities"):
        for hour in held:
            folder = live.table(table) / f"date={hour:%Y-%m-%d}" / f"hour={hour.hour}"
            folder.mkdir(parents=True)
            (folder / "part-00000.parquet").write_bytes(b"")
        (live.table(table) / "_SUCCESS").write_bytes(b"")
    removed = prune_left_hours(live, NOON + timedelta(minutes=2))
    assert sorted(removed) == sorted(
        f"{table}/date={hour:%Y-%m-%d}/hour={hour.hour}"
        for table in ("anomalies", "rollups")
        for hour in held[:2]
    )
    for table in ("anomalies", "rollups"):
        days = sorted(folder.name for folder in live.table(table).iterdir())
        assert days == ["_SUCCESS", f"date={NOON:%Y-%m-%d}"]  # yesterday's emptied folder is gone too
        hours = sorted(folder.name for folder in (live.table(table) / f"date={NOON:%Y-%m-%d}").iterdir())
        assert hours == ["hour=11", "hour=12"]  # the window's hour and the one before
    kept = live.table("capabilities") / f"date={yesterday:%Y-%m-%d}" / f"hour={yesterday.hour}"
    assert kept.exists()  # refreshed once per KIP714_LIVE_CAPABILITIES_EVERY: its last refresh is kept
    assert prune_left_hours(live, NOON + timedelta(minutes=3)) == []

    store = LiveStore(tmp_path)  # what a cycle does first
    begin_cycle(
        store, tmp_path / "landing", "t", NOON + timedelta(hours=2, minutes=1), LiveSettings.from_env({})
    )
    assert not (live.table("rollups") / f"date={NOON:%Y-%m-%d}" / "hour=11").exists()


def test_housekeeping_that_fails_never_stops_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Removing old hours and listing the hourly table are tidying and an optimisation: a cycle whose
    listing fails (a transient object-store error) lands and analyses, learning baselines as before."""
    import airflow_provider_kip714.live.cycle as cycle

    def unreachable(*_: object) -> None:
        raise OSError("Service Unavailable")

    monkeypatch.setattr(cycle, "remove_tree", unreachable)
    monkeypatch.setattr(cycle.HourPartitions, "last_held", unreachable)
    old = live_area(tmp_path).table("rollups") / "date=2026-11-26" / "hour=3"
    old.mkdir(parents=True)
    plan = begin_cycle(
        LiveStore(tmp_path),
        tmp_path / "landing",
        "t",
        NOON,
        LiveSettings.from_env({}),
        hourly=scheduled_area(tmp_path),
    )
    assert (plan.history_end, plan.baselines_cache) == (None, None)
    assert old.exists()
