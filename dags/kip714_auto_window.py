"""``kip714_auto_window``: an opened finding opens a 1 s troubleshooting window for the client it names.

Off unless the Airflow Variable ``kip714_auto_windows`` says ``{"enabled": true}`` (settings and
guardrails: ``troubleshooting/auto_window.py``, docs/live.md). Scheduled on the ``kip714_findings``
asset, and every five minutes: each run also reads the asset's events of the last 15 minutes
(``RECONCILE_WINDOW``), since Airflow may attach an event to another run than its own, or to none:

    plan_windows (guardrails; records each window in <root>/live/auto_windows.json; keeps live mode's
        rows of the finding for the run's report: findings/evidence.py)
        -> open_window (one kip714_troubleshoot run per window, run id kip714_auto__<finding id>)

The troubleshooting run is the ordinary ``kip714_troubleshoot``: the same operators and guarantees
(subscription deleted on every path, the reaper as the safety net); its conf names the finding that
opened it (``opened_by_finding``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG, Variable, get_current_context, task

from airflow_provider_kip714.findings.announce import (
    findings_asset,
    findings_schedule,
    recent_finding_events,
)
from airflow_provider_kip714.findings.events import findings_of_events
from airflow_provider_kip714.findings.store import LiveStore
from airflow_provider_kip714.storage.data_root import live_area
from airflow_provider_kip714.troubleshooting.auto_window import (
    AUTO_WINDOWS_VARIABLE,
    RECONCILE_WINDOW,
    TROUBLESHOOT_DAG_ID,
    AutoWindowSettings,
    findings_to_plan,
    open_windows,
)
from airflow_provider_kip714.troubleshooting.guardrails import load_capabilities_of, visible_areas

with DAG(
    dag_id="kip714_auto_window",
    description="Open a 1 s kip714_troubleshoot window for the client a new finding names (opt-in)",
    schedule=findings_schedule(every_minutes=5),  # as kip714_alerts
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,  # one writer of auto_windows.json; the guardrails count what it holds
    default_args={"retries": 1},
    tags=["kip714"],
    doc_md=__doc__,
) as dag:

    @task(inlets=[findings_asset()])
    def plan() -> list[dict[str, Any]]:
        """The windows the guardrails allow, recorded before they are triggered; one line per refusal."""
        settings = AutoWindowSettings.from_json(Variable.get(AUTO_WINDOWS_VARIABLE, default=None))
        if not settings.enabled:
            print(
                f"kip714 auto-windows are off (Variable {AUTO_WINDOWS_VARIABLE}: enabled false)", flush=True
            )
            return []
        context, now, store = get_current_context(), datetime.now(UTC), LiveStore()
        triggering, bad = findings_of_events(context["triggering_asset_events"])
        # the recent events' bad ones are logged again (each run reads them) but counted once, above
        recent, _ = findings_of_events(recent_finding_events(context, RECONCILE_WINDOW, now))
        findings = findings_to_plan(triggering, recent, set(store.ledger().open))
        if not findings:  # most timer runs: nothing to plan, no capabilities to read
            print(f"{len(triggering)} finding(s) triggered this run, none to plan, {bad} bad event(s)")
            return []
        plans = open_windows(
            store, findings, settings, load_capabilities_of(visible_areas()), now, live_area()
        )
        new = sum(window.new for window in plans.windows)
        print(
            f"{len(triggering)} finding(s) triggered this run, {len(findings)} planned with the recent "
            f"events' open ones, {bad} bad event(s): {new} window(s) to open, "
            f"{len(plans.windows) - new} recorded earlier (triggered again: a run only if missing)",
            flush=True,
        )
        return [window.trigger_kwargs() for window in plans.windows]

    TriggerDagRunOperator.partial(
        task_id="open_window",
        trigger_dag_id=TROUBLESHOOT_DAG_ID,
        skip_when_already_exists=True,  # a retry triggers the same run id again: no second window
        wait_for_completion=False,
    ).expand_kwargs(plan())
