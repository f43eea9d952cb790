"""The files of the landing zone and of the outputs, through the storage the session itself reads.

An app asks four questions of storage: does a path exist, which files (with their bytes) does a folder
hold, how many bytes are under a folder, and clear an output partition before a rerun writes it. A
classic session (``spark-submit``) answers them with Hadoop's ``FileSystem`` in its own driver JVM, so
``s3a://``, ``hdfs://`` and local paths all work. A Spark Connect session has no JVM on this side: it
asks the server, listing with the ``binaryFile`` source (paths and lengths only; Spark reads a file's
content only when the ``content`` column is selected) and clearing a partition by overwriting it with no
rows. ``session_files`` picks the right one, so no app needs to know which session it runs in.
"""

from __future__ import annotations

import re
from typing import Protocol

from kip714_common.session import is_connect
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType


class SessionFiles(Protocol):
    def exists(self, path: str) -> bool: ...

    def sizes(self, directory: str) -> dict[str, int]:
        """Name -> bytes of the visible files directly in ``directory`` ({} when it does not exist).

        Visible: not starting with ``.`` or ``_`` (temp files, checksums, ``_SUCCESS``), which Spark's
        own file listing never returns either.
        """
        ...

    def names(self, directory: str) -> list[str]:
        """The names of ``sizes``."""
        ...

    def size(self, directory: str) -> int:
        """Bytes of every file under ``directory`` (0 when it does not exist)."""
        ...

    def clear(self, directory: str, schema: StructType) -> None:
        """Leave ``directory`` holding no rows of ``schema``."""
        ...


def session_files(spark: SparkSession) -> SessionFiles:
    return ConnectFiles(spark) if is_connect(spark) else HadoopFiles(spark)


class HadoopFiles:
    """Hadoop's ``FileSystem`` in the driver JVM (classic sessions)."""

    def __init__(self, spark: SparkSession) -> None:
        context = spark.sparkContext
        self._jvm = context._jvm  # type: ignore[attr-defined]
        self._configuration = context._jsc.hadoopConfiguration()  # type: ignore[attr-defined]

    def _resolve(self, path: str):  # type: ignore[no-untyped-def]
        hadoop_path = self._jvm.org.apache.hadoop.fs.Path(path)
        return hadoop_path.getFileSystem(self._configuration), hadoop_path

    def exists(self, path: str) -> bool:
        filesystem, hadoop_path = self._resolve(path)
        return bool(filesystem.exists(hadoop_path))

    def sizes(self, directory: str) -> dict[str, int]:
        filesystem, path = self._resolve(directory)
        if not filesystem.exists(path):
            return {}
        files = [status for status in filesystem.listStatus(path) if status.isFile()]
        listed = {status.getPath().getName(): int(status.getLen()) for status in files}
        return {name: size for name, size in listed.items() if not name.startswith((".", "_"))}

    def names(self, directory: str) -> list[str]:
        return list(self.sizes(directory))

    def size(self, directory: str) -> int:
        filesystem, path = self._resolve(directory)
        return int(filesystem.getContentSummary(path).getLength()) if filesystem.exists(path) else 0

    def clear(self, directory: str, schema: StructType) -> None:
        filesystem, path = self._resolve(directory)
        filesystem.delete(path, True)


class ConnectFiles:
    """The Spark Connect server's own view of storage, through the ``binaryFile`` source."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    def _listing(self, directory: str, limit: int | None = None) -> list[tuple[str, int]] | None:
        """(path, length) of the files under ``directory`` (at most ``limit``); None if it does not exist."""
        listed = self._spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(directory)
        listed = listed.select("path", "length")
        try:
            rows = (listed.limit(limit) if limit is not None else listed).collect()
        except Exception as err:  # the server's AnalysisException, raised on this side
            if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
                return None
            raise
        return [(row["path"], int(row["length"])) for row in rows]

    def exists(self, path: str) -> bool:
        return self._listing(path, limit=1) is not None

    def sizes(self, directory: str) -> dict[str, int]:
        listed = self._listing(directory) or []
        folder = _without_scheme(directory)
        # the server spells paths in full (file:/..., s3a://...): keep the files directly in the folder
        return {
            name: length
            for (parent, name), length in ((path.rsplit("/", 1), length) for path, length in listed)
            if _without_scheme(parent) == folder
        }

    def names(self, directory: str) -> list[str]:
        return list(self.sizes(directory))

    def size(self, directory: str) -> int:
        return sum(length for _, length in self._listing(directory) or [])

    def clear(self, directory: str, schema: StructType) -> None:
        empty = self._spark.createDataFrame([], schema).where(F.lit(False))
        empty.write.mode("overwrite").parquet(directory)


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/*")


def _without_scheme(path: str) -> str:
    """``file:/a/b``, ``/a/b/`` -> ``a/b``; ``s3a://bucket/p`` -> ``bucket/p``."""
    return _SCHEME.sub("", path).strip("/")
