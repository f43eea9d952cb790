"""``kip714_live``: live fleet health. Back to back, each run lands what is new, analyses the last minutes
and announces every new or resolved finding as one event on the ``kip714_findings`` Asset.

    land_new -> analyse (rollups, anomalies, broker metrics, delivery, and capabilities once per
        KIP714_LIVE_CAPABILITIES_EVERY: one Spark app, over [now - lookback, now), reading only the
        chunks landed since; on Spark Connect, in one server session from cycle to cycle)
        -> detect_and_announce

Paused by default, like every DAG: unpause it to go live. It runs continuously (``@continuous``, one run
at a time; ``KIP714_LIVE_EVERY=1m`` runs one cycle a minute instead, for less CPU); a run takes about
15-30 s on a warm Spark Connect server (``KIP714_SPARK_CONNECT_CONN_ID``),
longer with one ``spark-submit`` per run. It lands into the scheduled landing zone, which
``kip714_rollups`` lands into too (exactly once, whichever runs), and writes its tables to
``<root>/live/analytics`` only: the hourly DAG stays the system of record. Knobs: ``live/settings.py``
(``KIP714_LIVE_*``); how to size it: ``docs/live.md``. DAGs scheduled on the ``kip714_findings`` Asset react
to findings: ``kip714_alerts`` (notifications) and ``kip714_auto_window`` (opt-in windows).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, get_current_context, task

from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.findings.announce import (
    announce,
    announced_keys,
    findings_alias,
    findings_asset,
    oldest_queued,
)
from airflow_provider_kip714.findings.store import LiveStore
from airflow_provider_kip714.live.cycle import begin_cycle, detect
from airflow_provider_kip714.live.settings import LiveSettings
from airflow_provider_kip714.settings import scheduled_kafka_conn_id
from airflow_provider_kip714.spark.jobs import SPARK_MACROS, spark_app_operator
from airflow_provider_kip714.storage.data_root import live_area, scheduled_area
from spark_apps.package import DEFAULT_RULES

SCHEDULED = scheduled_area()
LIVE = live_area()
SETTINGS = LiveSettings.from_env()
PLAN = "ti.xcom_pull(task_ids='land_new')"
LANDING_TIMEOUT_S = 45
LEASE_WAIT_S = 300

with DAG(
    dag_id="kip714_live",
    description="Live KIP-714 fleet health: land, analyse the last minutes, announce findings",
    schedule=SETTINGS.schedule,  # @continuous, or one run per KIP714_LIVE_EVERY
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    user_defined_macros=SPARK_MACROS,
    default_args={
        "retries": 2,
        "retry_delay": timedelta(seconds=10),
        "execution_timeout": timedelta(minutes=10),
    },
    tags=["kip714", "live"],
    doc_md=__doc__,
) as dag:

    @task
    def land_new() -> dict[str, Any]:
        """Record where this cycle starts, then land the topic up to its current end (exactly once)."""
        from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook

        hook = TelemetryTopicHook(kafka_config_id=scheduled_kafka_conn_id())
        plan = begin_cycle(
            LiveStore(), SCHEDULED.landing, hook.topic, datetime.now(UTC), SETTINGS, hourly=SCHEDULED
        )
        # the hourly DAG lands into the same zone: wait for its run rather than fail
        result = hook.land(str(SCHEDULED.landing), timeout_s=LANDING_TIMEOUT_S, lease_wait_s=LEASE_WAIT_S)
        print(
            f"Landed {result.records} records ({result.points} points, {result.quarantined} quarantined); "
            f"analysing [{plan.start.isoformat()}, {plan.end.isoformat()}) "
            f"from chunks {plan.chunks_flag() or 'all'}",
            flush=True,
        )
        return {
            "start": plan.start.isoformat(),
            "end": plan.end.isoformat(),
            "chunks_from": plan.chunks_flag() or "",
            "steps": plan.steps_flag(),
            "spark_session": plan.spark_session,
            "history_end": plan.history_end_flag() or "",
            "baselines_cache": plan.baselines_cache_flag() or "",
        }

    landed = land_new()

    analyse = spark_app_operator(
        task_id="analyse",
        app="pipeline",
        input_root=str(SCHEDULED.landing),
        output_root=str(LIVE.analytics),
        start="{{ " + PLAN + "['start'] }}",
        end="{{ " + PLAN + "['end'] }}",
        bucket=SETTINGS.bucket_flag,
        extra_args={
            "rules": str(DEFAULT_RULES),
            "history": f"{int(SETTINGS.history.total_seconds())}s",
            "history_root": str(SCHEDULED.analytics),
            # own baselines learn from the last whole hour the hourly table holds (a plan from before
            # this flag has none: the history then ends at the window's start)
            "history_end": "{{ " + PLAN + ".get('history_end', '') }}",
            "baselines_cache": "{{ " + PLAN + ".get('baselines_cache', '') }}",  # learned once per history
            "baseline_for": f"{int(SETTINGS.baseline_for.total_seconds())}s",
            "chunks_from": "{{ " + PLAN + "['chunks_from'] }}",
            "steps": "{{ " + PLAN + "['steps'] }}",
            # one Spark Connect session from cycle to cycle: the server reuses the code it compiled
            # (a run planned before cycles shared a session has none: the run then opens its own)
            "connect_session": "{{ " + PLAN + ".get('spark_session', '') }}",
            "no_read_back": True,  # detect reads the tables itself: no read-back job per table
        },
    )

    @task(inlets=[findings_asset()], outlets=[findings_alias()])
    def detect_and_announce(plan: dict[str, Any]) -> list[str]:
        """Queue the findings' transitions, then announce every queued one Airflow does not hold yet."""
        context = get_current_context()
        store = LiveStore()
        detect(
            store,
            LIVE,
            datetime.fromisoformat(plan["end"]),
            datetime.now(UTC),
            context["run_id"],
            window_start=datetime.fromisoformat(plan["start"]),
        )
        since = oldest_queued(store)
        events = context["inlet_events"][findings_asset()]
        held = announced_keys(events.after(since.isoformat()) if since else [])
        link = f"{SETTINGS.ui_base_url}/kip714/" if SETTINGS.ui_base_url else None
        announced = announce(store, context["outlet_events"][findings_alias()], held, link)
        for finding in announced:
            print(
                f"KIP714_FINDING {finding.transition.value} {finding.severity.value} {finding.kind.value} "
                f"{printable(finding.subject, 200)}: {printable(finding.summary, 400)}",
                flush=True,
            )
        return [finding.finding_id for finding in announced]

    landed >> analyse >> detect_and_announce(landed)
