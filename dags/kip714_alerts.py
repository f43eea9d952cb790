"""``kip714_alerts``: every new or resolved finding to people, through an Airflow notifier (e-mail here).

Scheduled on the ``kip714_findings`` asset (one event per finding transition, written by
``kip714_live``), and every ten minutes: that run sends what an earlier run could not (an SMTP server
that was down, a connection created since) and the digests of hours that have ended.

Settings: the Airflow Variable ``kip714_alerts`` (JSON), e.g.
``{"to": ["ops@example.com"], "smtp_conn_id": "smtp_default", "max_mails_per_kind_per_hour": 5}``;
see ``AlertSettings`` and docs/live.md. The task fails with one line naming what to fix when the
settings, the connection or the server are wrong; the findings wait in ``<root>/live/alerts_sent.json``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow.sdk import DAG, Variable, get_current_context, task

from airflow_provider_kip714.findings.alert_settings import ALERTS_VARIABLE
from airflow_provider_kip714.findings.alerts import RECONCILE_WINDOW, run_alerts
from airflow_provider_kip714.findings.announce import (
    findings_asset,
    findings_schedule,
    recent_finding_events,
)
from airflow_provider_kip714.findings.store import LiveStore

with DAG(
    dag_id="kip714_alerts",
    description="Mail each new or resolved kip714 finding (rate-limited per kind and hour, with digests)",
    schedule=findings_schedule(every_minutes=10),  # the asset kip714_live's alias events land on
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,  # one writer of the alert ledger at a time
    default_args={"retries": 0},  # the next run (ten minutes at most) sends what this one could not
    tags=["kip714"],
    doc_md=__doc__,
) as dag:

    @task(inlets=[findings_asset()])
    def send_alerts() -> dict[str, Any]:
        """Record the triggering findings (and the asset's recent events) as pending, then send what is
        pending (see findings/alerts.py)."""
        context, now = get_current_context(), datetime.now(UTC)
        return run_alerts(
            context,
            Variable.get(ALERTS_VARIABLE, default=None),
            LiveStore(),
            now,
            recent_events=recent_finding_events(context, RECONCILE_WINDOW, now),
        )

    send_alerts()
