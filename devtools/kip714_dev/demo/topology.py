"""Where the demo's parts run: one machine (the default) or the cluster topology.

The cluster topology starts S3Proxy (``kip714 local-s3``) and a Spark standalone master with two
workers (``kip714 local-spark``) and changes only what production changes: the data root becomes
``s3://kip714_demo_s3@kip714/demo`` (the Airflow ``aws`` connection ``kip714_demo_s3``), and
``spark_default`` points at the master (client deploy mode: the driver runs in the Airflow task).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kip714_dev.cli.local_s3 import airflow_connection
from kip714_dev.local_kafka.ports import free_ports
from kip714_dev.local_s3 import server as local_s3
from kip714_dev.local_spark import cluster as local_spark

TOPOLOGIES = ("single", "cluster")
S3_CONN_ID = "kip714_demo_s3"


@dataclass
class Topology:
    """The data root, the environment Airflow's tasks run with, and where each part runs."""

    data_root: str
    env: dict[str, str] = field(default_factory=dict)
    where: list[str] = field(default_factory=list)


@contextmanager
def demo_topology(name: str, work_dir: Path, kafka: str, spark_connect: bool = False) -> Iterator[Topology]:
    """Start what ``name`` needs under ``work_dir`` and stop it on exit.

    ``spark_connect``: the single topology's Spark is the demo's Connect server (started by the caller,
    ``kip714_dev.demo.spark_server``)."""
    if name == "single":
        data_dir = work_dir / "data"
        spark = (
            "Spark: a Spark Connect server (local[2], in the idle CPU class), started now; "
            "the DAGs' analytics tasks are its clients (KIP714_SPARK_CONNECT_CONN_ID)"
            if spark_connect
            else "Spark: local[*] inside each Airflow task (spark-submit)"
        )
        yield Topology(
            str(data_dir),
            where=[
                f"Kafka: {kafka} (one broker, this machine)",
                f"Storage: local folder {data_dir}",
                spark,
                "Airflow: `airflow dags test` on this machine (SQLite)",
            ],
        )
        return
    s3_dir, spark_dir = work_dir / "s3", work_dir / "spark"
    local_s3.stop(s3_dir)
    local_spark.stop(spark_dir)
    shutil.rmtree(s3_dir / "blobs", ignore_errors=True)  # a previous demo's objects
    try:
        (port,) = free_ports(1)
        s3 = local_s3.start(s3_dir, port=port)
        spark = local_spark.start(spark_dir, workers=2)
        env = {
            f"AIRFLOW_CONN_{S3_CONN_ID.upper()}": json.dumps(airflow_connection(s3)),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
                {"conn_type": "spark", "host": spark.master_url, "extra": {"deploy-mode": "client"}}
            ),
            "KIP714_SPARK_EXTRA_CLASSPATH": spark.s3a_classpath,
        }
        yield Topology(
            f"s3://{S3_CONN_ID}@{s3.bucket}/demo",
            env=env,
            where=[
                f"Kafka: {kafka}",
                f"Storage: S3 (S3Proxy pid {s3.pid}) at {s3.endpoint_url}, bucket {s3.bucket}, prefix demo/",
                f"Spark: standalone master {spark.master_url} (pid {spark.master_pid}), "
                f"{len(spark.worker_pids)} workers (pids {', '.join(map(str, spark.worker_pids))}); "
                f"web UI {spark.web_ui_url}",
                "Spark drivers: in the Airflow tasks (client mode); executors: on the workers, s3a to S3",
                "Airflow: `airflow dags test` on this machine (SQLite); the landing and the report use S3",
            ],
        )
    finally:
        local_spark.stop(spark_dir)
        local_s3.stop(s3_dir)
