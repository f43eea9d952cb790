"""Rendered app arguments -> what Spark needs: data-root URLs as Spark paths, their settings, local copies.

Shared by both ways of running an app (``jobs.py``: ``spark-submit``; ``connect.py``: Spark Connect).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence

from airflow_provider_kip714.storage.data_root import as_storage_path, is_local, spark_storage_conf, spark_uri

EXTRA_CLASSPATH_ENV = "KIP714_SPARK_EXTRA_CLASSPATH"
_ROOT_FLAGS = frozenset({"--input", "--output", "--history-root", "--baselines-cache"})
"""Flags naming folders of the data root that Spark itself reads or writes (the others name files the
driver opens: ``local_copy``)."""
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


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
    """``args`` with data-root URLs after ``_ROOT_FLAGS`` as Spark paths, plus the conf they need."""
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
