"""Which Kafka connections the scheduled DAGs use, from the environment of the DAG processor.

The scheduled DAGs (``kip714_rollups``, ``kip714_reaper``) have no form, so their connection comes
from ``KIP714_KAFKA_CONN_ID`` (default ``kafka_default``). The reaper sweeps every cluster that
troubleshooting windows may be opened on: ``KIP714_REAPER_CONN_IDS`` (comma separated; default: the
scheduled connection). Environment variables, not Airflow Variables: DAG files are parsed often and
must not query the metadata database at parse time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final

from airflow_provider_kip714.exceptions import Kip714Error

KAFKA_CONN_ENV: Final = "KIP714_KAFKA_CONN_ID"
REAPER_CONN_IDS_ENV: Final = "KIP714_REAPER_CONN_IDS"
DEFAULT_KAFKA_CONN_ID: Final = "kafka_default"
# Airflow connection ids: letters, digits, dashes, dots, underscores (also what task ids may hold).
_CONN_ID: Final = re.compile(r"[A-Za-z0-9_.-]{1,250}")


def _checked(conn_id: str, variable: str) -> str:
    if not _CONN_ID.fullmatch(conn_id):
        raise Kip714Error(
            f"{variable}: {conn_id!r} is not a connection id (letters, digits, '.', '-', '_'; 1 to 250)"
        )
    return conn_id


def scheduled_kafka_conn_id(environ: Mapping[str, str] = os.environ) -> str:
    """The connection ``kip714_rollups`` lands from (and the reaper's default)."""
    return _checked(environ.get(KAFKA_CONN_ENV, "").strip() or DEFAULT_KAFKA_CONN_ID, KAFKA_CONN_ENV)


def reaper_conn_ids(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The connections ``kip714_reaper`` sweeps, in order, each once."""
    listed = [part.strip() for part in environ.get(REAPER_CONN_IDS_ENV, "").split(",") if part.strip()]
    if not listed:
        return [scheduled_kafka_conn_id(environ)]
    return list(dict.fromkeys(_checked(conn_id, REAPER_CONN_IDS_ENV) for conn_id in listed))


__all__ = [
    "DEFAULT_KAFKA_CONN_ID",
    "KAFKA_CONN_ENV",
    "REAPER_CONN_IDS_ENV",
    "reaper_conn_ids",
    "scheduled_kafka_conn_id",
]
