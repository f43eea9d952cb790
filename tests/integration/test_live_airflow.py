"""The product DAGs under a live Airflow, as production runs them, driven only through the REST API v2.

One Airflow for the module (``tests/support/live_airflow.py``: scheduler, dag-processor, triggerer and
API server as separate processes, LocalExecutor, SQLite, 127.0.0.1), the session's Kafka with the
broker plugin, real librdkafka clients, Spark in local mode through ``spark_default``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

from tests.support.live_airflow import LiveAirflow, live_airflow_for

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

PRODUCT_DAGS = ("kip714_troubleshoot", "kip714_rollups", "kip714_reaper")


@pytest.fixture(scope="module")
def live_airflow(
    request: pytest.FixtureRequest, kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveAirflow]:
    home = tmp_path_factory.mktemp("live-airflow")
    env = {
        "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps(
            {"conn_type": "kafka", "extra": kafka_cluster.client_config()}
        ),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "KIP714_DATA_DIR": str(home / "data"),
        "KIP714_SPARK_BUILD_DIR": str(home / "spark-build"),
    }
    with live_airflow_for(request, home, env) as airflow:
        yield airflow


def test_product_dags_parse_without_import_errors(live_airflow: LiveAirflow) -> None:
    live_airflow.api.wait_for_dags(PRODUCT_DAGS)
    assert live_airflow.api.import_errors() == []
    assert set(PRODUCT_DAGS) <= live_airflow.api.dag_ids()
