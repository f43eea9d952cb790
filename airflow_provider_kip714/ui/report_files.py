"""Serve a run's report files (``<zone>/report/``) without letting a URL leave that folder."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_kip714.storage.data_root import RunArea, StoragePath, is_local

SERVED_SUFFIXES = {".html": "text/html; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml"}


def report_file(area: RunArea, file_name: str) -> StoragePath | None:
    """The file to send, or None when the name or the file type is not allowed or absent.

    The run itself is chosen (and authorised) by the caller; only plain file names directly inside
    its ``report/`` folder qualify: no separators, no dot-files, no symlink that resolves elsewhere.
    """
    if (
        not file_name
        or "/" in file_name
        or "\\" in file_name
        or "\x00" in file_name
        or file_name.startswith(".")
    ):
        return None
    if Path(file_name).suffix.lower() not in SERVED_SUFFIXES:
        return None
    report_dir = area.report
    candidate = report_dir / file_name
    if not is_local(candidate):  # object stores have no symlinks; the name is one plain key part
        return candidate if candidate.is_file() else None
    try:
        resolved = candidate.resolve(strict=True)
        inside = resolved.is_relative_to(report_dir.resolve(strict=True))
    except (OSError, RuntimeError):
        return None
    return resolved if inside and resolved.is_file() else None


def media_type(path: StoragePath) -> str:
    return SERVED_SUFFIXES[path.suffix.lower()]
