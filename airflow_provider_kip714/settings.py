"""Which Kafka (and Spark Connect) connections the DAGs use, from the environment of the DAG processor.

The scheduled DAGs (``kip714_rollups``, ``kip714_reaper``) have no form, so their connection comes
from ``KIP714_KAFKA_CONN_ID`` (default ``kafka_default``). The reaper sweeps every cluster a window was
ever opened on: the connections in ``KIP714_REAPER_CONN_IDS`` (comma separated; default: the
scheduled connection), plus every connection an operator opened a window on, which the operator
records as the Airflow Variable ``kip714_window_conn__<conn_id>`` *before* it calls the broker (so a
create whose task then dies is still swept). The DAG file reads only the environment (DAG files are
parsed often and must not query the metadata database at parse time); the recorded connections are
read by the reaper's first task, at run time.

``KIP714_SPARK_CONNECT_CONN_ID`` names a ``spark_connect`` connection: when set, the DAGs run their
Spark apps as clients of that long-running server instead of one ``spark-submit`` per task
(``airflow_provider_kip714.spark.connect``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from airflow_provider_kip714.exceptions import Kip714Error

KAFKA_CONN_ENV: Final = "KIP714_KAFKA_CONN_ID"
REAPER_CONN_IDS_ENV: Final = "KIP714_REAPER_CONN_IDS"
DEFAULT_KAFKA_CONN_ID: Final = "kafka_default"
_CONN_ID: Final = re.compile(r"[A-Za-z0-9_.-]{1,250}")
CONN_ID_RULE: Final = "letters, digits, '.', '-', '_'; 1 to 250"
"""What an Airflow connection id may hold, as the one-line errors say it (also what task ids may hold)."""


def is_conn_id(value: object) -> bool:
    """Whether ``value`` can be an Airflow connection id: the one check every entry point makes."""
    return isinstance(value, str) and _CONN_ID.fullmatch(value) is not None


def _checked(conn_id: str, variable: str) -> str:
    if not is_conn_id(conn_id):
        raise Kip714Error(f"{variable}: {conn_id!r} is not a connection id ({CONN_ID_RULE})")
    return conn_id


def scheduled_kafka_conn_id(environ: Mapping[str, str] = os.environ) -> str:
    """The connection ``kip714_rollups`` lands from (and the reaper's default)."""
    return _checked(environ.get(KAFKA_CONN_ENV, "").strip() or DEFAULT_KAFKA_CONN_ID, KAFKA_CONN_ENV)


SPARK_CONNECT_CONN_ENV: Final = "KIP714_SPARK_CONNECT_CONN_ID"


def spark_connect_conn_id(environ: Mapping[str, str] = os.environ) -> str | None:
    """The ``spark_connect`` connection the DAGs run their Spark apps on, or None: ``spark-submit``."""
    configured = environ.get(SPARK_CONNECT_CONN_ENV, "").strip()
    return _checked(configured, SPARK_CONNECT_CONN_ENV) if configured else None


def reaper_conn_ids(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The connections ``kip714_reaper`` sweeps, in order, each once."""
    listed = [part.strip() for part in environ.get(REAPER_CONN_IDS_ENV, "").split(",") if part.strip()]
    if not listed:
        return [scheduled_kafka_conn_id(environ)]
    return list(dict.fromkeys(_checked(conn_id, REAPER_CONN_IDS_ENV) for conn_id in listed))


WINDOW_CONN_VARIABLE_PREFIX: Final = "kip714_window_conn__"


def record_window_cluster(conn_id: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Make sure ``kip714_reaper`` sweeps ``conn_id``; call before opening a window on it.

    Returns True when a Variable was written (False: the environment already lists the connection).
    Raises ``Kip714Error`` when it cannot be recorded: then no window may be opened.
    """
    conn_id = _checked(conn_id, "kafka_config_id")
    if conn_id in reaper_conn_ids(environ):
        return False
    from airflow.sdk import Variable

    key = f"{WINDOW_CONN_VARIABLE_PREFIX}{conn_id}"
    try:
        if Variable.get(key, default=None) == conn_id:
            return False
        Variable.set(key, conn_id, description="kip714_reaper sweeps this connection (a window was opened)")
    except Exception as err:
        raise Kip714Error(
            f"kafka_config_id: cannot record {conn_id!r} for the reaper ({err}); not opening a window"
        ) from err
    return True


def window_cluster_conn_ids(environ: Mapping[str, str] = os.environ) -> list[str]:
    """Every connection the reaper sweeps: the environment's list, then every recorded one (run time)."""
    from airflow.sdk import Variable

    recorded = [
        key.removeprefix(WINDOW_CONN_VARIABLE_PREFIX)
        for key in Variable.keys(prefix=WINDOW_CONN_VARIABLE_PREFIX)
        if _CONN_ID.fullmatch(key.removeprefix(WINDOW_CONN_VARIABLE_PREFIX))
    ]
    return list(dict.fromkeys([*reaper_conn_ids(environ), *sorted(recorded)]))


__all__ = [
    "DEFAULT_KAFKA_CONN_ID",
    "KAFKA_CONN_ENV",
    "REAPER_CONN_IDS_ENV",
    "SPARK_CONNECT_CONN_ENV",
    "WINDOW_CONN_VARIABLE_PREFIX",
    "reaper_conn_ids",
    "record_window_cluster",
    "scheduled_kafka_conn_id",
    "spark_connect_conn_id",
    "window_cluster_conn_ids",
]


def variable_settings(
    value: object, variable: str, known: Iterable[str], error: type[Exception]
) -> dict[str, Any] | None:
    """A JSON-object Airflow Variable (its text, or the object): None when unset; ``error`` names the
    Variable when it is not an object and the first unknown key (a misspelt setting must not be ignored)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise error(f"{variable}: must be a JSON object") from None
    if not isinstance(value, dict):
        raise error(f"{variable}: must be a JSON object")
    names = list(known)
    unknown = sorted(set(value) - set(names))
    if unknown:
        shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(unknown[0]))[:60]
        raise error(f"{variable}.{shown}: is not a setting (settings: {', '.join(names)})")
    return value
