"""Live mode's housekeeping on a real S3 server (S3Proxy): the hours the window left, the kept baselines.

On an object store a folder is a key prefix: once its last key is removed it no longer exists, and listing
it fails rather than returning nothing. A cycle must get through that every day, when a date's hours go.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from object_storage import LocalS3

from airflow_provider_kip714.findings.store import LiveStore
from airflow_provider_kip714.live.cycle import CyclePlan, begin_cycle, prune_left_hours
from airflow_provider_kip714.live.settings import LiveSettings
from airflow_provider_kip714.storage.data_root import as_storage_path, live_area, scheduled_area

NOON = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def _partition(area, table: str, hour: datetime) -> None:  # type: ignore[no-untyped-def]
    folder = area.table(table) / f"date={hour:%Y-%m-%d}" / f"hour={hour.hour}"
    (folder / "part-00000.parquet").write_bytes(b"not read here")


def test_a_cycle_removes_the_hours_its_window_left_and_keeps_baselines_per_history_on_s3(
    local_s3: LocalS3,
) -> None:
    root = as_storage_path(local_s3.url())
    live, hourly = live_area(root), scheduled_area(root)
    yesterday = NOON - timedelta(days=1)
    for hour in (yesterday, yesterday + timedelta(hours=1), NOON - timedelta(hours=1), NOON):
        for table in ("rollups", "anomalies"):
            _partition(live, table, hour)
    _partition(hourly, "rollups", NOON - timedelta(hours=1))  # the hourly DAG's 11:00 hour

    removed = prune_left_hours(live, NOON + timedelta(minutes=5))  # yesterday's date prefix empties
    assert len(removed) == 4
    prefix = str(root).split("@", 1)[1].split("/", 1)[1]
    kept = [
        key for key in local_s3.keys(f"{prefix}/live/analytics/") if not key.endswith("/")
    ]  # no folder keys
    assert kept == sorted(
        f"{prefix}/live/analytics/{table}/date=2026-11-27/hour={hour}/part-00000.parquet"
        for table in ("anomalies", "rollups")
        for hour in (11, 12)
    )

    def cycle_at(moment: datetime) -> CyclePlan:
        return begin_cycle(
            LiveStore(root), root / "landing", "t", moment, LiveSettings.from_env({}), hourly=hourly
        )

    plan = cycle_at(NOON + timedelta(minutes=5))
    assert plan.history_end == NOON
    assert plan.baselines_cache is not None and plan.baselines_cache.startswith(
        f"s3://kip714_s3@{local_s3.state.bucket}/"
    )
    first = plan.baselines_cache
    (as_storage_path(first) / "learned-x" / "part-00000.parquet").write_bytes(b"kept")
    again = cycle_at(NOON + timedelta(minutes=6))
    assert again.baselines_cache == first and local_s3.keys(f"{prefix}/live/baselines/")  # read, kept
    _partition(hourly, "rollups", NOON)  # the 12:00 hour written: a new history
    later = cycle_at(NOON + timedelta(hours=1, minutes=5))
    assert later.history_end == NOON + timedelta(hours=1) and later.baselines_cache != first
    assert [key for key in local_s3.keys(f"{prefix}/live/baselines/") if key.endswith(".parquet")] == []
