"""Who may see what on the page, decided by Airflow's auth manager (FAB, simple, Keycloak...).

- A run's analytics, charts and report: users who may read that DAG's runs
  (``is_authorized_dag(method="GET", access_entity=RUN, details=DagDetails(id=dag_id))``). A folder
  whose DAG is unknown asks for runs of every DAG (``details=None``).
- The live subscriptions table: users who may read every DAG that uses the UI's connection
  (``$KIP714_UI_SUBSCRIPTION_DAG_IDS`` or ``[kip714] ui_subscription_dag_ids``; default the
  provider's three DAGs).
"""

from __future__ import annotations

import os
from typing import Any

DAG_IDS_ENV = "KIP714_UI_SUBSCRIPTION_DAG_IDS"
DEFAULT_SUBSCRIPTION_DAG_IDS = ("kip714_troubleshoot", "kip714_reaper", "kip714_rollups")


def subscription_dag_ids() -> list[str]:
    """The DAGs that use the UI's Kafka connection, in the order configured."""
    configured = os.environ.get(DAG_IDS_ENV)
    if configured is None:
        from airflow.configuration import conf

        configured = conf.get("kip714", "ui_subscription_dag_ids", fallback="") or ""
    listed = [part.strip() for part in configured.split(",") if part.strip()]
    return list(dict.fromkeys(listed)) or list(DEFAULT_SUBSCRIPTION_DAG_IDS)


def _dag_details(dag_id: str | None) -> Any:
    from airflow.api_fastapi.auth.managers.models.resource_details import DagDetails
    from airflow.configuration import conf

    if dag_id is None:
        return None
    team_name = None
    if conf.getboolean("core", "multi_team", fallback=False):
        from airflow.models.dag import DagModel

        team_name = DagModel.get_team_name(dag_id)
    return DagDetails(id=dag_id, team_name=team_name)


def may_read_runs(user: Any, dag_id: str | None) -> bool:
    """May ``user`` read the runs of ``dag_id`` (of every DAG when None)?"""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity

    return get_auth_manager().is_authorized_dag(
        method="GET", access_entity=DagAccessEntity.RUN, details=_dag_details(dag_id), user=user
    )


def may_read_subscriptions(user: Any) -> bool:
    """May ``user`` read every DAG that uses the UI's connection?"""
    from airflow.api_fastapi.app import get_auth_manager

    manager = get_auth_manager()
    return all(
        manager.is_authorized_dag(method="GET", details=_dag_details(dag_id), user=user)
        for dag_id in subscription_dag_ids()
    )
