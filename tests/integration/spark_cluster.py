"""A Spark standalone cluster (``kip714 local-spark``, 2 workers) for the session, and spark-submit to it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from kip714_dev.local_spark import cluster

from airflow_provider_kip714.spark.arguments import EXTRA_CLASSPATH_ENV, storage_arguments
from airflow_provider_kip714.spark.jobs import SPARK_CONF, spark_environment
from spark_apps.package import application_path, build_common_zip


@pytest.fixture(scope="session")
def local_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[cluster.LocalSparkState]:
    data_dir: Path = tmp_path_factory.mktemp("local-spark")
    state = cluster.start(data_dir, workers=2)
    try:
        yield state
    finally:
        cluster.stop(data_dir)


def spark_submit(
    state: cluster.LocalSparkState, app: str, args: Sequence[str], timeout_s: float = 600
) -> subprocess.CompletedProcess[str]:
    """Submit ``app`` in client mode the way the DAGs' operator does (same argument and conf rewriting)."""
    import os

    os.environ[EXTRA_CLASSPATH_ENV] = state.s3a_classpath
    rewritten, storage_conf = storage_arguments(list(args))
    conf = {**storage_conf, **SPARK_CONF, "spark.executor.memory": "768m", "spark.cores.max": "2"}
    command = [str(Path(sys.executable).parent / "spark-submit"), "--master", state.master_url]
    command += ["--deploy-mode", "client", "--py-files", str(build_common_zip())]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    command += [str(application_path(app)), *rewritten]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        env={**os.environ, **spark_environment()},
    )
