"""Finding the ``java`` executable the broker runs on: ``$JAVA_HOME/bin/java`` first, then ``PATH``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from kip714_dev.errors import LocalKafkaError


def find_java() -> Path:
    """Return a runnable ``java``; a JAVA_HOME that lacks one is an error, not silently skipped."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
        raise LocalKafkaError(f"JAVA_HOME={java_home} has no executable bin/java; fix JAVA_HOME or unset it")
    on_path = shutil.which("java")
    if on_path is None:
        raise LocalKafkaError("no Java found: install a JDK 17+ and put java on PATH or set JAVA_HOME")
    return Path(on_path)
