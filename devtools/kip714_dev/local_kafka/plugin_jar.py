"""Locating the ``broker_plugin/`` jar the local broker loads, when it has been built."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

PLUGIN_JAR_ENV: Final = "KIP714_PLUGIN_JAR"
PLUGIN_JAR_RELATIVE: Final = Path("broker_plugin") / "target" / "kip714-broker-plugin.jar"


def repository_root() -> Path:
    """The source checkout this package runs from (editable installs and the tests)."""
    return Path(__file__).resolve().parents[3]


def default_plugin_jar() -> Path | None:
    """``$KIP714_PLUGIN_JAR``, else the Maven output in the working dir or the checkout; None if unbuilt."""
    override = os.environ.get(PLUGIN_JAR_ENV)
    if override:
        return Path(override).expanduser().resolve()
    for base in (Path.cwd(), repository_root()):
        candidate = base / PLUGIN_JAR_RELATIVE
        if candidate.is_file():
            return candidate.resolve()
    return None
