"""``kip714_rollups`` in real Airflow with its Spark apps on a real Spark Connect server.

``KIP714_SPARK_CONNECT_CONN_ID`` names a ``spark_connect`` connection to the session's server
(``kip714 local-spark-connect``): the analytics task must be the Connect client, not a ``spark-submit``,
and write the same kind of tables as the ``spark-submit`` test of this DAG (``test_dags_rollups.py``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from dag_test_env import make_airflow_env, run_dag_test
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from test_dags_rollups import TABLES

from airflow_provider_kip714.storage.data_root import RunArea
from tests.support.synthetic_landing import generate_fleet

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

FLEET_START = datetime(2026, 1, 6, 10, 0, tzinfo=UTC)
RUN_AT = datetime(2026, 1, 6, 11, 0, tzinfo=UTC)  # data interval [10:00, 11:00)


def partition_rows(area: RunArea, table: str, hour: int) -> int:
    folder = area.table(table) / f"date={FLEET_START:%Y-%m-%d}" / f"hour={hour}"
    return ds.dataset(folder, format="parquet").count_rows() if folder.is_dir() else 0


def test_hourly_run_on_a_spark_connect_server(
    kafka_cluster: LocalKafkaCluster,
    spark_connect_server,
    tmp_path_factory: pytest.TempPathFactory,  # type: ignore[no-untyped-def]
) -> None:
    home = tmp_path_factory.mktemp("airflow-home-connect")
    env = make_airflow_env(home, home / "data", kafka_cluster)
    host, port = spark_connect_server.url.removeprefix("sc://").split(":")
    env["AIRFLOW_CONN_SPARK_CONNECT_KIP714"] = json.dumps(
        {"conn_type": "spark_connect", "host": host, "port": int(port)}
    )
    env["KIP714_SPARK_CONNECT_CONN_ID"] = "spark_connect_kip714"
    zone = RunArea(Path(env["KIP714_DATA_DIR"]))
    assert (
        generate_fleet(zone.landing, FLEET_START, hours=2, target_points=4000, push_interval_seconds=10) > 0
    )

    summary, output, _ = run_dag_test(env, "kip714_rollups", RUN_AT, timeout_s=900)

    assert summary is not None and summary["state"] == "success", (summary, output[-6000:])
    assert "Spark Connect (spark_connect_kip714)" in output  # the Connect client ran the apps
    assert "Spark-Submit cmd" not in output  # SparkSubmitHook logs this line for every spark-submit
    assert '"app": "kip714-rollups"' in output and '"app": "kip714-anomalies"' in output
    counts = {table: partition_rows(zone, table, 10) for table in TABLES}
    assert counts["rollups"] > 0 and counts["thresholds"] > 0, counts
    assert all(partition_rows(zone, table, 11) == 0 for table in TABLES)  # only its own hour
