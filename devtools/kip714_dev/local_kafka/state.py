"""The small JSON file a running local broker leaves in its data dir, for ``status``, ``stop`` and tools."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from kip714_dev.errors import LocalKafkaError


@dataclass(frozen=True)
class LocalKafkaState:
    """What a started broker is and where to reach it."""

    pid: int
    kafka_version: str
    bootstrap_servers: str
    sasl_bootstrap_servers: str | None
    sasl_users: list[str]
    controller_port: int
    node_id: int
    data_dir: str
    log_path: str
    console_log_path: str
    plugin_jar: str | None
    telemetry_topic: str
    started_at: str

    def write(self, path: Path) -> None:
        """Write atomically so a reader never sees half a file."""
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")
        os.replace(partial, path)

    @classmethod
    def read(cls, path: Path) -> LocalKafkaState | None:
        if not path.exists():
            return None
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError) as err:
            raise LocalKafkaError(
                f"state file {path} is unreadable ({err}); remove it if no broker runs"
            ) from err
