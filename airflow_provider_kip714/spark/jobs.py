"""How the DAGs launch the Spark apps: one ``SparkSubmitOperator`` per app, through ``spark_default``.

The master comes from the connection (``local[*]`` in the demo:
``AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type":"spark","host":"local[*]"}'``), so pointing the DAGs at
a cluster means changing the connection only. The shared library goes with ``--py-files``; its zip
is built on the worker at run time (the ``kip714_common_zip()`` macro), not when the DAG is parsed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset

from airflow_provider_kip714.storage.data_root import RunArea
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


def analytics_asset(zone: RunArea, table: str) -> Asset:
    """The Asset of one analytics table of the scheduled zone (``rollups``, ``anomalies``, ...)."""
    return Asset(name=f"kip714_{table}", uri=zone.table(table).resolve().as_uri(), group=ASSET_GROUP)


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
) -> SparkSubmitOperator:
    """A ``SparkSubmitOperator`` for ``spark_apps/<app>.py``; every string argument may be a template."""
    return SparkSubmitOperator(
        task_id=task_id,
        conn_id=conn_id,
        application=str(application_path(app)),
        py_files="{{ kip714_common_zip() }}",
        application_args=application_args(input_root, output_root, start, end, bucket, **(extra_args or {})),
        conf={**SPARK_CONF, **(conf or {})},
        env_vars=spark_environment(),
        name=f"kip714-{app}",
        outlets=list(outlets),
        **kwargs,
    )
