"""A landing zone's files on a local disk or an object store, through one fsspec code path.

The commit protocol (``landing_zone``) needs two things of storage: a file is whole once it is listed
(one PUT; locally a file fsynced, with its folder and every folder it had to create), and a listing shows
every file written before it. Files that are rewritten (the checkpoint, ``PROTOCOL``) are replaced whole:
a reader sees the old content or the new, never a part.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

from airflow_provider_kip714.telemetry.lease import fresh


class ZoneStorage:
    """Whole writes and fresh listings under one zone's root (``path``, in ``fs``)."""

    def __init__(self, fs: Any, path: str, *, fsync: bool = True) -> None:
        self.fs = fs
        self.path = path
        self.fsync = fsync
        protocol = fs.protocol
        self.local = "file" in ((protocol,) if isinstance(protocol, str) else tuple(protocol))
        self._folders = threading.Lock()

    def join(self, *parts: str) -> str:
        return "/".join([self.path.rstrip("/"), *parts])

    def put(self, path: str, data: bytes) -> None:
        """One whole object; locally a file fsynced (with its folder, and every folder it had to
        create) before this returns."""
        if not self.local:
            self.fs.pipe_file(path, data)
            return
        directory = os.path.dirname(path)
        self._make_folders(directory)
        with open(path, "wb") as handle:
            handle.write(data)
            if self.fsync:
                handle.flush()
                os.fsync(handle.fileno())
        if self.fsync:
            _fsync_folder(directory)

    def put_replacing(self, path: str, data: bytes) -> None:
        """``put`` for a file that is rewritten: a reader sees the old content or the new, never a part
        (locally a temp file renamed over it; a PUT is whole)."""
        if not self.local:
            self.fs.pipe_file(path, data)
            return
        temporary = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
        self.put(temporary, data)
        os.replace(temporary, path)
        if self.fsync:
            _fsync_folder(os.path.dirname(path))

    def read(self, path: str) -> bytes:
        """A file's bytes, read afresh; ``FileNotFoundError`` when it does not exist."""
        return bytes(fresh(self.fs).cat_file(path))

    def read_if_present(self, path: str) -> bytes | None:
        """``read``, or None when the file does not exist (one request, not an existence check first)."""
        try:
            return self.read(path)
        except FileNotFoundError:
            return None

    def names(self, directory: str) -> list[str]:
        """The names in ``directory`` (files and folders), listed afresh; none when it does not exist.

        One listing, no existence check before it: a live cycle lists a few of these folders each run."""
        try:
            entries = fresh(self.fs).ls(directory, detail=False)
        except FileNotFoundError:
            return []
        return [str(entry).rstrip("/").rsplit("/", 1)[-1] for entry in entries]

    def find(self, directory: str) -> list[str]:
        """Every file under ``directory`` (one recursive listing), afresh; none when it does not exist."""
        return list(fresh(self.fs).find(directory))

    def _make_folders(self, directory: str) -> None:
        """Create ``directory`` and its missing parents; fsync each parent that gained one, so a marker or
        data file in a new folder (a slot's, an hour's) survives a power loss with its folder."""
        with self._folders:  # a staging thread that finds the folder finds it fsynced into its parent
            missing = []
            while directory and not os.path.isdir(directory):
                missing.append(directory)
                directory = os.path.dirname(directory)
            for folder in reversed(missing):
                os.makedirs(folder, exist_ok=True)
                if self.fsync:
                    _fsync_folder(os.path.dirname(folder))


def _fsync_folder(directory: str) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
