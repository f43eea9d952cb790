"""How the DAGs launch the Spark apps: one ``SparkSubmitOperator`` per app, through ``spark_default``
(or, with ``KIP714_SPARK_CONNECT_CONN_ID`` set, as clients of a Spark Connect server: ``connect.py``).

The master comes from the connection (``local[*]`` in the demo:
``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type":"spark","host":"local[*]"}'``), so pointing the DAGs at
a cluster means changing the connection only. The shared library goes with ``--py-files``; its zip
is built on the worker at run time (the ``kip714_common_zip()`` macro), not when the DAG is parsed.

Object storage needs no change in the DAGs either: when a rendered ``--input``/``--output`` is a data
root URL (``s3://<conn_id>@bucket/prefix``), the operator passes Spark the ``s3a://bucket/prefix`` path
and the ``spark.hadoop.fs.s3a.*`` settings built from that Airflow connection. The s3a jars
(hadoop-aws and the AWS SDK bundle) must be on the Spark hosts; ``KIP714_SPARK_EXTRA_CLASSPATH`` (or
``[kip714] spark_extra_classpath``) puts them on the driver's and executors' classpath.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, BaseOperator

from airflow_provider_kip714.settings import spark_connect_conn_id
from airflow_provider_kip714.spark.arguments import (
    storage_arguments,
)
from airflow_provider_kip714.spark.connect import Kip714SparkConnectOperator
from airflow_provider_kip714.storage.data_root import (
    RunArea,
    storage_uri,
)
from spark_apps.package import PERFORMANCE_CONF, application_args, application_path, build_common_zip

SPARK_CONN_ID = "spark_default"
SPARK_CONF = {
    **PERFORMANCE_CONF,
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}
"""Small-data defaults: hourly intervals and troubleshooting windows are small; override per task."""
ASSET_GROUP = "kip714"


def common_zip() -> str:
    """Path of ``kip714_common.zip`` (rebuilt only when a source changed); a Jinja macro for ``py_files``."""
    return str(build_common_zip())


SPARK_MACROS = {"kip714_common_zip": common_zip}
"""``user_defined_macros`` of a DAG that uses ``spark_app_operator``."""


def spark_environment() -> dict[str, str]:
    """``spark-submit`` from this Python's bin folder and Spark bound to loopback unless told otherwise."""
    python_bin = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    return {
        "PATH": path if python_bin in path.split(os.pathsep) else os.pathsep.join([python_bin, path]),
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    }


def analytics_asset(area: RunArea, table: str) -> Asset:
    """The Asset of one analytics table of the scheduled zone (``rollups``, ``anomalies``, ...)."""
    return Asset(name=f"kip714_{table}", uri=storage_uri(area.table(table)), group=ASSET_GROUP)


class Kip714SparkSubmitOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` that turns rendered data-root URLs into Spark paths and settings."""

    def execute(self, context: Any) -> None:
        args, storage_conf = storage_arguments([str(arg) for arg in self.application_args or []])
        self.application_args = args
        self.conf = {**storage_conf, **(self.conf or {})}
        return super().execute(context)


def spark_app_operator(
    *,
    task_id: str,
    app: str,
    input_root: str,
    output_root: str,
    start: str,
    end: str,
    bucket: str,
    extra_args: Mapping[str, str | int | float | bool | None] | None = None,
    outlets: Sequence[Asset] = (),
    conn_id: str = SPARK_CONN_ID,
    conf: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> BaseOperator:
    """The task running ``spark_apps/<app>.py``; every string argument may be a template.

    A ``spark-submit`` (``SparkSubmitOperator`` through ``conn_id``), or, when
    ``KIP714_SPARK_CONNECT_CONN_ID`` names a ``spark_connect`` connection, the same app as a client of
    that Spark Connect server (``spark.connect``; ``conf`` is then the server's business).
    """
    arguments = application_args(input_root, output_root, start, end, bucket, **(extra_args or {}))
    connect_conn_id = spark_connect_conn_id()
    if connect_conn_id is not None:
        return Kip714SparkConnectOperator(
            task_id=task_id,
            app=app,
            application_args=arguments,
            conn_id=connect_conn_id,
            outlets=list(outlets),
            **kwargs,
        )
    return Kip714SparkSubmitOperator(
        task_id=task_id,
        conn_id=conn_id,
        application=str(application_path(app)),
        py_files="{{ kip714_common_zip() }}",
        application_args=arguments,
        conf={**SPARK_CONF, **(conf or {})},
        env_vars=spark_environment(),
        name=f"kip714-{app}",
        outlets=list(outlets),
        **kwargs,
    )
