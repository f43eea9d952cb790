"""Test DAG: emits the asset events ``kip714_live`` emits, one per finding extra in the run's conf.

Each event goes on the ``kip714_findings`` asset through an ``AssetAlias`` outlet, as live mode does;
``conf["extras"]`` holds the events' ``extra`` values (findings, or deliberately bad ones).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow.sdk import DAG, Asset, AssetAlias, get_current_context, task

from airflow_provider_kip714.findings.model import FINDINGS_ASSET_NAME

ALIAS = AssetAlias("kip714_test_findings_alias")

with DAG(
    dag_id="kip714_test_findings_emitter",
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    tags=["kip714-test"],
) as dag:

    @task(outlets=[ALIAS])
    def emit() -> int:
        context = get_current_context()
        extras: list[dict[str, Any]] = list(context["dag_run"].conf.get("extras", []))
        for extra in extras:
            context["outlet_events"][ALIAS].add(Asset(name=FINDINGS_ASSET_NAME, group="kip714"), extra=extra)
        return len(extras)

    emit()
