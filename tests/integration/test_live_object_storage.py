"""Live mode on a real S3 server (S3Proxy): its housekeeping, and its analysis on Spark standalone.

On an object store a folder is a key prefix: once its last key is removed it no longer exists, and listing
it fails rather than returning nothing. A cycle must get through that every day, when a date's hours go.
A cycle's own baselines are learned from the hourly table on S3 and kept on S3 (``--history-root``,
``--baselines-cache``): both are folders Spark itself reads and writes, through s3a.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from kip714_dev.local_spark.cluster import LocalSparkState
from object_storage import LocalS3
from spark_cluster import local_spark, spark_submit  # noqa: F401 (fixture)

from airflow_provider_kip714.analytics.tables import read_table
from airflow_provider_kip714.findings.store import LiveStatus, LiveStore
from airflow_provider_kip714.live.cycle import CyclePlan, begin_cycle, prune_left_hours
from airflow_provider_kip714.live.settings import LiveSettings
from airflow_provider_kip714.storage.data_root import (
    StoragePath,
    as_storage_path,
    live_area,
    scheduled_area,
    troubleshoot_areas,
)
from tests.spark import scenarios

pytestmark = pytest.mark.cluster  # S3Proxy; the Spark test also runs the standalone cluster

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


def _upload(local: Path, remote: StoragePath) -> None:
    for path in sorted(local.rglob("*.parquet")):
        (remote / path.relative_to(local).as_posix()).write_bytes(path.read_bytes())


def _submit(state: LocalSparkState, app: str, args: list[str]) -> None:
    run = spark_submit(state, app, args)
    errors = [line for line in run.stderr.splitlines() if "Exception" in line or "Error" in line]
    assert run.returncode == 0, "\n".join(errors[:30]) or run.stderr[-4000:]


def _parquet_rows(folder: StoragePath) -> pd.DataFrame:
    files = sorted(path for path in folder.iterdir() if path.name.endswith(".parquet"))
    return pd.concat([pd.read_parquet(io.BytesIO(path.read_bytes())) for path in files], ignore_index=True)


@pytest.mark.spark
def test_a_live_cycle_on_s3_learns_own_baselines_from_the_hourly_table_once_and_reads_them_back(
    local_s3: LocalS3,
    local_spark,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The pipeline as ``kip714_live`` runs it, every root on S3: a window at 14:51 learns each client's own
    baseline from the hourly table's 13:00 hour, finds the spike, and keeps the baselines on S3; the next
    cycle reads them from there instead of learning again."""
    spiking = scenarios.write_late_spike(tmp_path / "landing").spiking
    root = as_storage_path(local_s3.url())
    hourly, live = scheduled_area(root), live_area(root)
    _upload(tmp_path / "landing", hourly.landing)
    landing = ["--input", str(hourly.landing), "--bucket", "1m"]
    hour = ("--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T14:00:00Z")
    _submit(local_spark, "rollups", [*landing, "--output", str(hourly.analytics), *hour])
    cache = live.root / "baselines" / "2026-01-31T14-test"

    def cycle() -> pd.DataFrame:
        _submit(
            local_spark,
            "pipeline",
            [
                *landing,
                *("--output", str(live.analytics), "--start", "2026-01-31T14:51:00Z"),
                *("--end", "2026-01-31T15:00:00Z", "--steps", "rollups,anomalies"),
                *("--history", "1h", "--history-root", str(hourly.analytics)),
                *("--history-end", "2026-01-31T14:00:00Z", "--baselines-cache", str(cache)),
                *("--baseline-for", "2m", "--peer-groups", "none", "--no-read-back"),
            ],
        )
        found = read_table(live, "anomalies", columns=["kind", "client_instance_id", "breach_start"])
        return found[found["kind"] == "baseline"]

    found = cycle()
    assert [(row.client_instance_id, row.breach_start.minute) for row in found.itertuples()] == [
        (spiking.instance_id, 52)
    ]
    (kept,) = [folder for folder in cache.iterdir() if folder.name.startswith("learned-")]
    learned = _parquet_rows(kept)
    assert len(learned) == 2 and set(learned["_learned_rows"]) == {2}
    assert set(learned["history_buckets"]) == {60}  # the whole 13:00 hour of the table on S3

    # the next cycle reads what is kept on S3: thresholds put there are what it judges with
    for path in [path for path in kept.iterdir() if path.name.endswith(".parquet")]:
        path.unlink()
    buffer = io.BytesIO()
    learned.assign(threshold=1e9, critical_threshold=2e9).to_parquet(buffer, index=False)
    (kept / "part-00000.parquet").write_bytes(buffer.getvalue())
    assert cycle().empty  # 8000 ms is under a kept threshold of 10^9: read back, not learned again


def test_a_long_lived_reader_sees_what_other_processes_rewrote_on_s3(local_s3: LocalS3) -> None:
    """The UI's API server lives for days while live mode's Spark and tasks rewrite its tables and documents
    every cycle. A listing the reader's filesystem kept must not make it read files that are gone, or an
    old size of a document rewritten since."""
    root = as_storage_path(local_s3.url())
    live = live_area(root)
    prefix = str(root).split("@", 1)[1].split("/", 1)[1]
    s3 = local_s3.client()
    hour = f"{prefix}/live/analytics/rollups/date=2026-11-27/hour=12"

    def put_table(name: str, rows: int) -> None:
        buffer = io.BytesIO()
        pd.DataFrame({"count": list(range(rows))}).to_parquet(buffer, index=False)
        s3.put_object(Bucket=local_s3.state.bucket, Key=f"{hour}/{name}", Body=buffer.getvalue())

    def put_status(through: datetime) -> None:
        status = LiveStatus(updated_at=through, data_through=through, run_id="r" * (through.minute + 1))
        body = json.dumps(status.as_json()).encode()
        s3.put_object(Bucket=local_s3.state.bucket, Key=f"{prefix}/live/status.json", Body=body)

    put_table("part-00000-first.parquet", 1)
    put_status(NOON)
    store = LiveStore(root)
    assert len(read_table(live, "rollups")) == 1 and store.status() is not None
    assert sorted(path.name for path in store.root.iterdir()) == ["analytics", "status.json"]

    # another process (Spark, the next cycle's task) replaces both
    s3.delete_object(Bucket=local_s3.state.bucket, Key=f"{hour}/part-00000-first.parquet")
    put_table("part-00000-second.parquet", 3)
    put_status(NOON + timedelta(minutes=30))
    assert len(read_table(live, "rollups")) == 3
    status = store.status()
    assert status is not None and status.data_through == NOON + timedelta(minutes=30)

    # troubleshooting runs that appear later are seen too (the UI lists them on every page)
    assert troubleshoot_areas(root) == []
    for run in ("manual__a", "manual__b"):
        s3.put_object(Bucket=local_s3.state.bucket, Key=f"{prefix}/troubleshoot/{run}/run.json", Body=b"{}")
    assert [area.root.name for area in troubleshoot_areas(root)] == ["manual__b", "manual__a"]
