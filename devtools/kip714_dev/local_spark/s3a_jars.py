"""Spark's s3a connector: hadoop-aws matching pyspark's Hadoop client (3.5.0) and its AWS SDK bundle.

pyspark 4.2 ships ``hadoop-client-api/runtime-3.5.0`` but not ``hadoop-aws``. The SDK bundle is 686 MB:
it is resolved once into the cache (``~/.cache/kip714/hadoop-aws-3.5.0/``) and put on the driver and
executor classpaths from there, never shipped with ``--jars`` per run.
"""

from __future__ import annotations

import os
from pathlib import Path

from kip714_dev.maven_jars import JarSet, classpath

HADOOP_AWS = JarSet(
    "hadoop-aws-3.5.0",
    ("org.apache.hadoop:hadoop-aws:3.5.0", "software.amazon.awssdk:bundle:2.35.4"),
)


def s3a_classpath(root: Path | None = None) -> str:
    """The jars as one classpath string (``spark.driver/executor.extraClassPath``), resolving them once."""
    return os.pathsep.join(str(jar) for jar in classpath(HADOOP_AWS, root))
