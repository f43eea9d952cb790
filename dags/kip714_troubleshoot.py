"""``kip714_troubleshoot``: a time-boxed KIP-714 troubleshooting window, analysed and reported.

Trigger it from the UI's Param form (or ``airflow dags test kip714_troubleshoot -c '{...}'``):

    validate_request -> open_subscription (setup) -> wait_for_pushes -> land_window
        -> close_subscription, check_subscription_gone (teardowns: run on every path)
    land_window -> write_rules -> analytics (rollups, anomalies, broker metrics: one Spark app) -> report

Invalid input fails in ``validate_request`` (or in the form itself), before the cluster is touched;
valid input then meets the guardrail (``troubleshooting/guardrails.py``), whose warnings go to the task
log and the report before the subscription is created.
The report lands in ``<KIP714_DATA_DIR>/troubleshoot/<run>/report/report.html``; the task logs its path,
returns it via XCom and links to it from the UI.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, get_current_context, task

from airflow_provider_kip714.analytics.run_owner import write_run_owner
from airflow_provider_kip714.operators.client_metrics import (
    CreateClientMetricsSubscriptionOperator,
    DeleteClientMetricsSubscriptionOperator,
)
from airflow_provider_kip714.operators.report import TroubleshootingReportOperator
from airflow_provider_kip714.sensors.telemetry_arrival import ClientTelemetryArrivalSensor
from airflow_provider_kip714.spark.jobs import SPARK_MACROS, spark_app_operator
from airflow_provider_kip714.storage.data_root import troubleshoot_area
from airflow_provider_kip714.troubleshooting.form import GUARDRAIL_KEY, troubleshoot_params
from airflow_provider_kip714.troubleshooting.request import TroubleshootingRequest
from airflow_provider_kip714.troubleshooting.rules import write_window_rules
from airflow_provider_kip714.troubleshooting.window import (
    SENSOR_RETRIES,
    SENSOR_RETRY_DELAY,
    WindowBounds,
    check_subscription_gone,
    convergence_windows_path,
    land_window,
    write_convergence_windows,
    write_run_selection,
)
from spark_apps.package import DEFAULT_RULES, WINDOW_CONF

LANDED = "ti.xcom_pull(task_ids='land_window')"
SUBSCRIPTION_XCOM = "ti.xcom_pull(task_ids='open_subscription')"
SUBSCRIPTION_NAME = "{{ " + SUBSCRIPTION_XCOM + "['name'] }}"
REQUEST = "ti.xcom_pull(task_ids='validate_request', key='request')"
"""The validated request (``TroubleshootingRequest.as_xcom``): templates read it, never the raw form."""
KAFKA_CONN = "{{ " + REQUEST + "['kafka_config_id'] }}"


with DAG(
    dag_id="kip714_troubleshoot",
    description="Time-boxed KIP-714 troubleshooting window: subscribe, land, analyse, report, clean up",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params=troubleshoot_params(),
    user_defined_macros=SPARK_MACROS,
    max_active_runs=4,
    # No task retries by default: opening, landing and closing a window are not to be repeated
    # blindly. The sensor alone retries (SENSOR_RETRIES, docs/dags.md): it creates and deletes nothing.
    default_args={"retries": 0, "execution_timeout": timedelta(hours=25)},
    tags=["kip714"],
    doc_md=__doc__,
) as dag:

    @task(multiple_outputs=True)
    def validate_request() -> dict[str, Any]:
        """Check the whole form before touching the cluster; the message names the field and the rule.

        The one validation of the run: later tasks read the request back from this task's XCom
        (``TroubleshootingRequest.from_xcom``). Then the guardrail, before the subscription exists: a
        WARNING (and ``KIP714_GUARDRAIL`` line) per library that pushes none of the prefixes or whose
        estimated push exceeds ``telemetry.max.bytes``; the report shows them too. Advice only: the
        window still opens."""
        from airflow_provider_kip714.troubleshooting.guardrails import as_records, check_form_request

        context = get_current_context()
        request = TroubleshootingRequest.from_params(context["params"])
        print(f"Request is valid: {request.as_dict()}", flush=True)
        warnings = as_records(check_form_request(request.metrics, request.match, request.kafka_config_id))
        for warning in warnings:
            print(f"KIP714_GUARDRAIL {warning['kind']} {warning['message']}", flush=True)
        if not warnings:
            print("Guardrail: no warning (or no capabilities table to judge by)", flush=True)
        return {
            "request": request.as_xcom(),
            # plain values for the operators' templated fields
            "match": list(request.match),
            "metrics": list(request.metrics),
            "interval_ms": request.interval_ms,
            "window_seconds": request.window_seconds,
            "requested_at": datetime.now(UTC).isoformat(),
            "shown_request": {**request.as_dict(), GUARDRAIL_KEY: [w["message"] for w in warnings]},
            "guardrail_warnings": warnings,
        }

    validated = validate_request()

    open_subscription = CreateClientMetricsSubscriptionOperator(
        task_id="open_subscription",
        kafka_config_id=KAFKA_CONN,
        window=validated["window_seconds"],
        window_label="troubleshoot",
        metrics=validated["metrics"],
        interval_ms=validated["interval_ms"],
        match=validated["match"],
    )

    wait_for_pushes = ClientTelemetryArrivalSensor(
        task_id="wait_for_pushes",
        kafka_config_id=KAFKA_CONN,
        subscription_name=SUBSCRIPTION_NAME,
        since="{{ ti.xcom_pull(task_ids='validate_request', key='requested_at') }}",
        min_clients="{{ " + REQUEST + "['min_clients'] }}",
        timeout="{{ " + REQUEST + "['window_seconds'] }}",  # wait at most the window
        poke_interval=2,
        # apache/airflow #67287 (3.3.2): a trigger firing seconds after the deferral can make the
        # scheduler fail the task; a retry waits again, for the same subscription (docs/dags.md)
        retries=SENSOR_RETRIES,
        retry_delay=SENSOR_RETRY_DELAY,
    )

    @task
    def land(subscription: dict[str, Any], request_xcom: dict[str, Any]) -> dict[str, Any]:
        """Land the topic while the window lasts (bounds from ``open_subscription``); logs what landed.

        First it records the window (name, creation, prefixes, selectors) in the run's folder: the UI
        follows the open window's convergence from that record and what has landed so far."""
        context = get_current_context()
        request = TroubleshootingRequest.from_xcom(request_xcom)
        area = troubleshoot_area(context["run_id"])
        write_run_owner(area, context["dag"].dag_id, context["run_id"])  # the UI asks who may read it
        write_convergence_windows(area, subscription, request.metrics, request.match_map())
        return land_window(request, area, WindowBounds.of_xcom(subscription))

    landed = land.override(task_id="land_window")(open_subscription.output, validated["request"])

    close_subscription = DeleteClientMetricsSubscriptionOperator(
        task_id="close_subscription", kafka_config_id=KAFKA_CONN, name=SUBSCRIPTION_NAME
    )

    @task
    def check_subscription_is_gone(subscription: dict[str, Any]) -> list[str]:
        """Verify the cluster no longer has this run's subscription."""
        remaining = check_subscription_gone(subscription["kafka_config_id"], subscription["name"])
        print(f"Subscription {subscription['name']} is gone; kip714 windows left: {remaining or 'none'}")
        return remaining

    verify = check_subscription_is_gone.override(task_id="check_subscription_gone")(open_subscription.output)

    # the analysis and the report cover the window, not the landing's wider span
    analysed_window = {
        "input_root": "{{ " + LANDED + "['landing'] }}",
        "output_root": "{{ " + LANDED + "['analytics'] }}",
        "start": "{{ " + LANDED + "['window_start'] }}",
        "end": "{{ " + LANDED + "['window_end'] }}",
        "bucket": "{{ " + REQUEST + "['bucket'] }}",
    }

    @task
    def write_rules(subscription: dict[str, Any], request_xcom: dict[str, Any]) -> dict[str, str]:
        """The analytics' inputs: the form's per-prefix thresholds as rules for the metrics this window
        landed, the run's selection (its clients, from the window's start) and the window record
        ``land_window`` wrote for the convergence step."""
        context = get_current_context()
        request = TroubleshootingRequest.from_xcom(request_xcom)
        area = troubleshoot_area(context["run_id"])
        path, count = write_window_rules(area, request, DEFAULT_RULES)
        print(f"{count} static rule(s) for this window in {path}", flush=True)
        selection = write_run_selection(area, request, WindowBounds.of_xcom(subscription))
        return {
            "rules": str(path),
            "windows": str(convergence_windows_path(area)),
            "selection": str(selection),
        }

    rules = write_rules(open_subscription.output, validated["request"])
    # rollups, thresholds and anomalies, broker health, delivery, capabilities, convergence:
    # one Spark application, one JVM start
    analytics = spark_app_operator(
        task_id="analytics",
        app="pipeline",
        conf=WINDOW_CONF,
        extra_args={
            "steps": "rollups,anomalies,broker_metrics,delivery,capabilities,convergence",
            "rules": "{{ ti.xcom_pull(task_ids='write_rules')['rules'] }}",
            "windows": "{{ ti.xcom_pull(task_ids='write_rules')['windows'] }}",
            "selection": "{{ ti.xcom_pull(task_ids='write_rules')['selection'] }}",
            "history": "1h",
            "min_history_buckets": "{{ " + REQUEST + "['baseline_min_buckets'] }}",
            "baseline_for": "{{ " + REQUEST + "['baseline_for_seconds'] }}s",
        },
        **analysed_window,
    )
    report = TroubleshootingReportOperator(
        task_id="report",
        window_start="{{ " + LANDED + "['window_start'] }}",
        window_end="{{ " + LANDED + "['window_end'] }}",
        request=validated["shown_request"],
        match=validated["match"],
    )

    validated >> open_subscription >> wait_for_pushes >> landed >> close_subscription >> verify
    close_subscription.as_teardown(setups=open_subscription)
    verify.as_teardown(setups=open_subscription, on_failure_fail_dagrun=True)
    landed >> rules >> analytics >> report
