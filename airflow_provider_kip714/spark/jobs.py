"""How the DAGs launch the Spark apps: one ``SparkSubmitOperator`` per app, through ``spark_default``.

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
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset

from airflow_provider_kip714.storage.data_root import (
    RunArea,
    as_storage_path,
    is_local,
    spark_storage_conf,
    spark_uri,
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
EXTRA_CLASSPATH_ENV = "KIP714_SPARK_EXTRA_CLASSPATH"
_ROOT_FLAGS = frozenset({"--input", "--output"})
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


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
    return Asset(name=f"kip714_{table}", uri=storage_uri(zone.table(table)), group=ASSET_GROUP)


def extra_classpath() -> str | None:
    """Jars every Spark JVM needs beyond Spark's own (the s3a connector): environment, else airflow.cfg."""
    configured = os.environ.get(EXTRA_CLASSPATH_ENV)
    if configured:
        return configured
    try:
        from airflow.configuration import conf
    except Exception:
        return None
    return conf.get("kip714", "spark_extra_classpath", fallback=None) or None


def storage_arguments(args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``args`` with data-root URLs after ``--input``/``--output`` as Spark paths, plus the conf they need."""
    rewritten = list(args)
    conf: dict[str, str] = {}
    for index in range(1, len(rewritten)):
        if rewritten[index - 1] in _ROOT_FLAGS:
            root = as_storage_path(rewritten[index])
            if not is_local(root):
                rewritten[index] = spark_uri(root)
                conf.update(spark_storage_conf(root))
        elif rewritten[index - 1].startswith("--") and _URL.match(rewritten[index]):
            rewritten[index] = local_copy(rewritten[index])  # --rules, --windows, ...: files the driver reads
    classpath = extra_classpath()
    if classpath:
        conf["spark.driver.extraClassPath"] = classpath
        conf["spark.executor.extraClassPath"] = classpath
    return rewritten, conf


def local_copy(location: str) -> str:
    """A file the driver reads (rules, windows) on object storage, copied to a local temp file."""
    source = as_storage_path(location)
    if is_local(source):
        return str(source)
    handle, name = tempfile.mkstemp(prefix="kip714-rules-", suffix=".json")
    with os.fdopen(handle, "wb") as target:
        target.write(source.read_bytes())
    return name


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
) -> SparkSubmitOperator:
    """A ``SparkSubmitOperator`` for ``spark_apps/<app>.py``; every string argument may be a template."""
    return Kip714SparkSubmitOperator(
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
