"""Where the provider keeps its files: one root, a local path or an object-store URL.

The root comes from ``KIP714_DATA_DIR``, else ``[kip714] data_dir`` in airflow.cfg, else
``$AIRFLOW_HOME/kip714-data``. An object-store root is written the way Airflow's ``ObjectStoragePath``
writes one, ``s3://<conn_id>@bucket/prefix``: credentials and endpoint come from that Airflow
connection (for S3 the amazon provider's ``aws`` type, ``endpoint_url`` in its extra), for the
provider (fsspec), for pyarrow readers (``arrow_location``) and for Spark (``spark_uri`` gives the
``s3a://`` path, ``spark_storage_conf`` the matching ``spark.hadoop.fs.s3a.*`` settings).

The DAGs, the Spark apps' arguments, the report and the UI page all find things through this, so
the layout is decided once:

    <root>/landing/                      raw/ datapoints/ quarantine/ of the scheduled landing
    <root>/analytics/                    rollups/ thresholds/ anomalies/ broker_metrics/ (kip714_rollups)
    <root>/live/analytics/               live mode's tables (the trailing minutes); live/*.json its state
    <root>/live/baselines/ evidence/     own baselines kept for the current history; findings' evidence
    <root>/troubleshoot/<run>/landing/   the same, for one troubleshooting window
    <root>/troubleshoot/<run>/analytics/
    <root>/troubleshoot/<run>/report/    report.html + PNG plots
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TypeAlias

from airflow_provider_kip714.exceptions import Kip714Error

if TYPE_CHECKING:
    import pyarrow.fs
    from airflow.sdk import ObjectStoragePath

DATA_DIR_ENV = "KIP714_DATA_DIR"
ANALYTICS_TABLES = ("rollups", "thresholds", "anomalies", "broker_metrics")
_UNSAFE_SLUG = re.compile(r"[^A-Za-z0-9_-]+")
_SLUG_LENGTH = 80
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
StoragePath: TypeAlias = "Path | ObjectStoragePath"
"""A local ``Path`` or an Airflow ``ObjectStoragePath`` (both support ``/``, ``exists``, ``open``)."""


class StorageLocationError(Kip714Error, ValueError):
    """A data root or landing zone location that cannot hold the provider's files."""


def checked_location(
    value: str | os.PathLike[str] | StoragePath, field: str, *, writing: bool = False
) -> StoragePath:
    """``value`` as a storage path, refused in one line naming ``field`` when it cannot hold a zone.

    Refused: an empty value, the filesystem root, an existing file, a path under a file, an
    object-store URL without a bucket or whose scheme no installed filesystem serves, and a URL naming
    an Airflow connection that does not exist (``ObjectStoragePath`` would fall back to anonymous
    access to the public cloud). With ``writing``, also a local path whose nearest existing folder this
    user cannot write (readers such as the UI's API server may only read).
    """
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise StorageLocationError(f"{field}: must be a directory or an object-store URL, got ''")
        url = _URL.match(text) and not text.startswith("file://")
        if url:
            _check_url(text, field)
    location = as_storage_path(value)
    if isinstance(location, Path):
        resolved = location.resolve()
        if resolved == Path(resolved.anchor):
            raise StorageLocationError(f"{field}: must not be the filesystem root ({value!s})")
        if resolved.exists() and not resolved.is_dir():
            raise StorageLocationError(f"{field}: {resolved} is a file, not a directory")
        existing = next(parent for parent in (resolved, *resolved.parents) if parent.exists())
        if not existing.is_dir():
            raise StorageLocationError(f"{field}: cannot create {resolved}: {existing} is a file")
        if writing and not os.access(existing, os.W_OK | os.X_OK):  # readers (the UI) may only read
            raise StorageLocationError(f"{field}: cannot create {resolved}: {existing} is not writable")
    return location


_OBJECT_URL = re.compile(
    r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?:(?P<conn>[^@/]+)@)?(?P<bucket>[^/]*)(?P<rest>/.*)?$"
)


def _check_url(url: str, field: str) -> None:
    parts = _OBJECT_URL.match(url)
    if parts is None or not parts["bucket"]:
        raise StorageLocationError(
            f"{field}: an object-store URL needs a bucket: <scheme>://<conn_id>@bucket/prefix, got {url!r}"
        )
    from airflow.sdk.io.fs import has_fs

    if not has_fs(parts["scheme"]):
        raise StorageLocationError(
            f"{field}: no filesystem for {parts['scheme']}:// here (s3:// comes with "
            f"apache-airflow-providers-amazon; other schemes with their provider), got {url!r}"
        )
    conn_id = parts["conn"]
    if conn_id is None:
        return  # the scheme's default connection (aws_default for s3), as ObjectStoragePath does
    from airflow.exceptions import AirflowNotFoundException
    from airflow.sdk import BaseHook

    try:
        with contextlib.redirect_stdout(sys.stderr):
            BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise StorageLocationError(f"{field}: no Airflow connection {conn_id!r} (named in {url!r})") from None
    except Exception as err:  # the metadata DB or secrets backend cannot be read here
        raise StorageLocationError(f"{field}: cannot read Airflow connection {conn_id!r}: {err}") from None


def as_storage_path(value: str | os.PathLike[str] | StoragePath) -> StoragePath:
    """``s3://conn@bucket/prefix`` (any fsspec URL) -> ``ObjectStoragePath``; anything else -> ``Path``."""
    if isinstance(value, Path) or (not isinstance(value, str) and not hasattr(value, "fs")):
        return Path(value)
    if not isinstance(value, str):
        _never_reuse_listings(value.fs)  # already an ObjectStoragePath, perhaps made elsewhere
        return value
    if value.startswith("file://"):
        return Path(value.removeprefix("file://")).expanduser()
    if _URL.match(value):
        return _object_storage_path(value)
    return Path(value).expanduser()


@functools.lru_cache(maxsize=32)
def _object_storage_path(url: str) -> ObjectStoragePath:
    """One ``ObjectStoragePath`` (and so one connection lookup and one client) per URL and process."""
    from airflow.sdk import ObjectStoragePath

    # The connection lookup logs "credentials retrieved" at INFO; outside a task Airflow's log output
    # is stdout, where it would land in the middle of the JSON that `kip714 ... --json` prints.
    with contextlib.redirect_stdout(sys.stderr):
        path = ObjectStoragePath(url)
    if getattr(path.fs, "endpoint_url", None) and hasattr(path.fs, "_bulk_delete"):  # S3-compatible
        _delete_one_by_one(path.fs)
    _never_reuse_listings(path.fs)
    wrapped = getattr(path, "__wrapped__", None)  # a URL without a connection: calls go to its own fs
    if wrapped is not None:
        _never_reuse_listings(wrapped.fs)
    return path


def _never_reuse_listings(fs: Any) -> None:
    """Make the filesystem list afresh each time instead of answering from listings it kept.

    fsspec's object stores keep every listing for the life of the process by default, and answer ``ls``,
    ``exists`` and a file's size from it. Other processes rewrite the data root all the time (Spark's
    table writes, each live cycle's task, the hourly DAG), and some readers live for days (the UI's API
    server): a kept listing then misses the files written since (pyarrow lists a rewritten table afresh,
    then s3fs denies the new files exist), misses new runs, or gives a rewritten document's old size and
    ETag (``tests/integration/test_live_object_storage.py``). A listing is one request; a stale one is a
    failed page."""
    from fsspec.dircache import DirCache

    kept = getattr(fs, "dircache", None)
    if isinstance(kept, DirCache) and kept.use_listings_cache:
        fs.dircache = DirCache(use_listings_cache=False)


def _delete_one_by_one(fs: Any) -> None:
    """s3fs removes files with DeleteObjects (fsspec's rm, and mv = copy + rm); botocore >= 1.36 sends
    it a CRC32 checksum that S3-compatible servers such as S3Proxy refuse. Use DeleteObject per key."""

    async def bulk_delete(pathlist: list[str], **_: Any) -> list[str]:
        for path in pathlist:
            await fs._rm_file(path)
        return list(pathlist)

    fs._bulk_delete = bulk_delete


def is_local(path: StoragePath) -> bool:
    return isinstance(path, Path)


def fsspec_location(path: StoragePath) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) of ``path``: what the landing zone writes through."""
    if isinstance(path, Path):
        from fsspec.implementations.local import LocalFileSystem

        return LocalFileSystem(), str(path.resolve())
    return path.fs, path.path


def remove_tree(path: StoragePath) -> None:
    """Delete a folder and everything under it, local or on an object store.

    On an object store only the objects are deleted: a folder is their keys' common prefix and goes with
    them. fsspec's recursive ``rm`` also deletes each folder's own name as a key, which no object holds;
    S3Proxy takes 10 s to answer each such delete, so ``prune_left_hours`` took 40 s to remove 4 hour
    partitions (``docs/benchmarks.md``, session 30)."""
    if is_local(path):
        shutil.rmtree(path)
    else:
        filesystem, where = fsspec_location(path)
        objects = filesystem.find(where)
        if objects:
            filesystem.rm(objects)


def arrow_location(path: StoragePath) -> tuple[pyarrow.fs.FileSystem, str]:
    """(pyarrow filesystem, path inside it): ``pq.read_table(p, filesystem=fs)`` for readers of the root."""
    import pyarrow.fs

    if isinstance(path, Path):
        return pyarrow.fs.LocalFileSystem(), str(path.resolve())
    return pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(path.fs)), path.path


def storage_uri(path: StoragePath) -> str:
    """A URI naming ``path`` without credentials or connection: ``file:///...`` or ``s3://bucket/key``."""
    if isinstance(path, Path):
        return path.resolve().as_uri()
    protocol = path.protocol if isinstance(path.protocol, str) else path.protocol[0]
    return f"{protocol}://{path.path}"


def spark_uri(path: StoragePath) -> str:
    """The path as Spark (Hadoop) names it: a local absolute path, or ``s3a://bucket/prefix``."""
    if isinstance(path, Path):
        return str(path.resolve())
    protocol = path.protocol if isinstance(path.protocol, str) else path.protocol[0]
    scheme = "s3a" if protocol in ("s3", "s3a", "s3n") else protocol
    return f"{scheme}://{path.path}"


def spark_storage_conf(path: StoragePath) -> dict[str, str]:
    """``spark-submit --conf`` settings that let executors reach ``path`` (s3a from the aws connection)."""
    if isinstance(path, Path):
        return {}
    from airflow_provider_kip714.storage.s3a import s3a_conf

    return s3a_conf(path.conn_id)


def data_root() -> StoragePath:
    configured = os.environ.get(DATA_DIR_ENV) or _configured_data_dir()
    if configured:
        return checked_location(configured, DATA_DIR_ENV)
    airflow_home = os.environ.get("AIRFLOW_HOME")
    base = Path(airflow_home).expanduser() if airflow_home else Path.home() / ".local" / "share"
    return base / "kip714-data"


def safe_run_name(run_id: str) -> str:
    """One folder name per run id: a readable slug plus a hash of the exact run id.

    Run ids may hold ':', '+', '~', '/', or be ``.``/``..``; the slug alone would map ``a:b`` and
    ``a+b`` to one folder and ``..`` onto the data root. The 16-hex-digit SHA-256 suffix makes distinct
    run ids distinct folders, and the name holds only ``[A-Za-z0-9_-]``: never a separator or a dot.
    """
    slug = _UNSAFE_SLUG.sub("_", run_id).strip("_")[:_SLUG_LENGTH].strip("_") or "run"
    digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{slug}-{digest}"


def _configured_data_dir() -> str | None:
    """``[kip714] data_dir`` from airflow.cfg (or ``AIRFLOW__KIP714__DATA_DIR``), when Airflow is set up."""
    try:
        from airflow.configuration import conf
    except Exception:  # Airflow's config cannot load (e.g. a bare spark-submit host): no setting
        return None
    return conf.get("kip714", "data_dir", fallback=None) or None


@dataclass(frozen=True)
class RunArea:
    """The folders of one run kind under the data root: its landing zone, analytics and report."""

    root: StoragePath

    @property
    def landing(self) -> StoragePath:
        return self.root / "landing"

    @property
    def analytics(self) -> StoragePath:
        return self.root / "analytics"

    @property
    def report(self) -> StoragePath:
        return self.root / "report"

    def table(self, name: str) -> StoragePath:
        return self.analytics / name


def scheduled_area(root: StoragePath | None = None) -> RunArea:
    return RunArea(root or data_root())


def live_area(root: StoragePath | None = None) -> RunArea:
    """``<root>/live``: live mode's analytics (``analytics/``) beside its state documents."""
    return RunArea((root or data_root()) / "live")


def troubleshoot_area(run_id: str, root: StoragePath | None = None) -> RunArea:
    return RunArea((root or data_root()) / "troubleshoot" / safe_run_name(run_id))


def troubleshoot_areas(root: StoragePath | None = None) -> list[RunArea]:
    """Every troubleshooting run's area, newest first on a local disk (``is_local``); by name on object
    stores, whose folders have no time."""
    base = (root or data_root()) / "troubleshoot"
    if is_local(base):
        if not base.is_dir():
            return []
        runs = [p for p in base.iterdir() if p.is_dir()]
        return [RunArea(p) for p in sorted(runs, key=lambda p: p.stat().st_mtime, reverse=True)]
    filesystem, where = fsspec_location(base)
    try:  # one listing: asking each entry whether it is a folder is a request each
        entries = filesystem.ls(where, detail=True)
    except FileNotFoundError:
        return []
    names = sorted((PurePosixPath(e["name"]).name for e in entries if e["type"] == "directory"), reverse=True)
    return [RunArea(base / name) for name in names]
