"""Serve troubleshooting reports (``troubleshoot/<run>/report/``) without letting a URL leave them."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_kip714.storage.data_root import data_root, safe_run_name

SERVED_SUFFIXES = {".html": "text/html; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml"}


def report_file(run_folder: str, file_name: str, root: Path | None = None) -> Path | None:
    """The file to send, or None when the run, the name or the file type is not allowed or absent.

    Only plain file names directly inside one run's ``report/`` folder qualify: no separators, no
    dot-files, no symlink that resolves outside that folder.
    """
    if not run_folder or run_folder != safe_run_name(run_folder) or run_folder.startswith("."):
        return None
    if not file_name or "/" in file_name or "\\" in file_name or file_name.startswith("."):
        return None
    if Path(file_name).suffix.lower() not in SERVED_SUFFIXES:
        return None
    report_dir = (root or data_root()) / "troubleshoot" / run_folder / "report"
    candidate = report_dir / file_name
    try:
        resolved = candidate.resolve(strict=True)
        inside = resolved.is_relative_to(report_dir.resolve(strict=True))
    except (FileNotFoundError, NotADirectoryError, RuntimeError):
        return None
    return resolved if inside and resolved.is_file() else None


def media_type(path: Path) -> str:
    return SERVED_SUFFIXES[path.suffix.lower()]
