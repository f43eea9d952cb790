"""``kip714_rollups`` in real Airflow (dag.test) with real Spark (local[2]) and the local Kafka.

The landing zone holds a generated fleet for two past hours (a backfill interval, so the counts do not
move while the real topic keeps receiving broker records) and the land task lands the session
cluster's real telemetry topic into the same zone. A rerun of the same interval must leave the
same row counts, and a run must touch only its own hour.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from dag_test_env import make_airflow_env, run_dag_test
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

from airflow_provider_kip714.storage.data_root import RunArea
from tests.support.synthetic_landing import generate_fleet

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

DAG_ID = "kip714_rollups"
FLEET_START = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
RUN_AT = datetime(2026, 1, 5, 11, 0, tzinfo=UTC)  # data interval [10:00, 11:00)
TABLES = ("rollups", "thresholds", "anomalies", "broker_metrics")


def partition_rows(area: RunArea, table: str, hour: int) -> int:
    folder = area.table(table) / f"date={FLEET_START:%Y-%m-%d}" / f"hour={hour}"
    if not folder.is_dir():
        return 0
    return ds.dataset(folder, format="parquet").count_rows()


def raw_records(area: RunArea) -> int:
    raw = area.landing / "raw"
    return ds.dataset(raw, format="parquet").count_rows() if any(raw.rglob("*.parquet")) else 0


def test_hourly_run_rolls_up_its_interval_and_rerun_is_idempotent(
    kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.mktemp("airflow-home-rollups")
    env = make_airflow_env(home, home / "data", kafka_cluster)
    zone = RunArea(Path(env["KIP714_DATA_DIR"]))
    generated = generate_fleet(
        zone.landing, FLEET_START, hours=2, target_points=4000, push_interval_seconds=10
    )
    assert generated > 0

    first, output, _ = run_dag_test(env, DAG_ID, RUN_AT, timeout_s=900)
    assert first is not None and first["state"] == "success", (first, output[-6000:])
    landed = first["xcom"]["land"]
    assert landed["quarantined"] == 0 and raw_records(zone) == landed["records"]
    counts = {table: partition_rows(zone, table, 10) for table in TABLES}
    assert counts["rollups"] > 0 and counts["thresholds"] > 0, counts
    assert all(partition_rows(zone, table, 11) == 0 for table in TABLES)  # only its own hour
    assert "KIP714_SUMMARY" in output and '"app": "kip714-rollups"' in output

    second, output, _ = run_dag_test(env, DAG_ID, RUN_AT, timeout_s=900)
    assert second is not None and second["state"] == "success", (second, output[-6000:])
    assert {table: partition_rows(zone, table, 10) for table in TABLES} == counts
    # landing is exactly-once by offsets: the rerun lands only what arrived since, never a record twice
    assert raw_records(zone) == landed["records"] + second["xcom"]["land"]["records"]
