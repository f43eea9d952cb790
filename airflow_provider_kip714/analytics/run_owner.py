"""Which DAG run a troubleshooting folder belongs to, so the UI can ask Airflow who may read it.

Folder names are a slug plus a hash of the run id (``storage.data_root.safe_run_name``): the DAG id
cannot be read back from them. The report task records it in ``<zone>/run.json``; the scheduled
analytics belong to ``kip714_rollups``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from airflow_provider_kip714.storage.data_root import RunArea

RUN_OWNER_FILE = "run.json"
SCHEDULED_DAG_ID = "kip714_rollups"


@dataclass(frozen=True)
class RunOwner:
    dag_id: str
    run_id: str


def write_run_owner(area: RunArea, dag_id: str, run_id: str) -> None:
    """Record the DAG run that writes ``zone`` (idempotent)."""
    area.root.mkdir(parents=True, exist_ok=True)
    # One small object, rewritten whole; a torn read is "unknown owner", which only narrows who sees it.
    (area.root / RUN_OWNER_FILE).write_text(json.dumps({"dag_id": dag_id, "run_id": run_id}))


def read_run_owner(area: RunArea) -> RunOwner | None:
    """The recorded owner, or None when the file is missing or not what ``write_run_owner`` writes."""
    try:
        data = json.loads((area.root / RUN_OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    dag_id, run_id = data.get("dag_id"), data.get("run_id")
    if not isinstance(dag_id, str) or not dag_id or not isinstance(run_id, str):
        return None
    return RunOwner(dag_id, run_id)
