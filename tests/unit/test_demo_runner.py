"""The demo's pieces that need no servers: its DAG conf stays valid, its log filter keeps what matters."""

from __future__ import annotations

import re
from pathlib import Path

from kip714_dev.demo.commands import task_log_line
from kip714_dev.demo.fleet import default_fleet
from kip714_dev.demo.fleet_client import ClientBehaviour, ClientSpec
from kip714_dev.demo.runner import DemoSettings, prepare_work_dir, troubleshoot_conf

from airflow_provider_kip714.subscriptions.model import parse_match
from airflow_provider_kip714.troubleshooting.form import troubleshoot_params
from airflow_provider_kip714.troubleshooting.request import TroubleshootingRequest


def test_the_demo_conf_passes_the_troubleshoot_dags_own_validation() -> None:
    params = {name: param.value for name, param in troubleshoot_params().items()}
    params.update(troubleshoot_conf(DemoSettings(work_dir=Path("/nonexistent"))))
    request = TroubleshootingRequest.from_params(params)
    assert request.match == ("client_id=demo-audit-consumer-.*",)
    assert request.interval_ms == 1000


def test_the_demo_window_targets_the_slow_consumer_and_its_peer_only() -> None:
    pattern = troubleshoot_conf(DemoSettings(work_dir=Path("/x")))["client_id"]
    (selector,) = parse_match([f"client_id={pattern}"])
    targeted = [spec.client_id for spec in default_fleet() if re.fullmatch(selector.pattern, spec.client_id)]
    # the whole audit group: three peers, one of them slow (the peer anomaly)
    assert targeted == ["demo-audit-consumer-1", "demo-audit-consumer-2", "demo-audit-consumer-slow"]


def test_the_fleet_has_the_issue_mix_of_clients() -> None:
    fleet = default_fleet()
    behaviours = [spec.behaviour for spec in fleet]
    librdkafka = [b for b in behaviours if b is not ClientBehaviour.JAVA_PRODUCER]
    assert len(librdkafka) >= 6
    assert ClientBehaviour.JAVA_PRODUCER in behaviours
    assert behaviours.count(ClientBehaviour.SLOW_CONSUMER) == 1
    assert behaviours.count(ClientBehaviour.BURSTY_PRODUCER) == 1
    groups = {spec.group_id for spec in fleet if spec.group_id}
    assert len(groups) == 2
    assert len({spec.client_id for spec in fleet}) == len(fleet)


def test_client_specs_round_trip_through_json() -> None:
    spec = ClientSpec("demo-x", ClientBehaviour.SLOW_CONSUMER, "t", "g", 3.0, {"fetch.min.bytes": 1})
    assert ClientSpec.from_json(spec.to_json()) == spec


def test_task_log_filter_keeps_task_boundaries_our_logs_and_spark_summaries() -> None:
    start = (
        "2026-11-22T08:19:40.778875Z [info     ] [DAG TEST] starting task_id=open_subscription map_index=-1 "
        "[airflow.sdk.definitions.dag] loc=dag.py:1501"
    )
    ours = (
        "2026-11-22T08:19:41.361512Z [info     ] Subscription kip714-x created "
        "[airflow_provider_kip714.subscriptions.admin] loc=client_metrics_admin.py:223"
    )
    spark_noise = (
        "2026-11-22T08:23:55.419484Z [info     ] 26/11/22 08:23:55 INFO DAGScheduler: failed: HashSet() "
        "[airflow.task.hooks.airflow.providers.apache.spark.hooks.spark_submit.SparkSubmitHook] "
        "loc=spark_submit.py:965"
    )
    spark_summary = spark_noise.replace("INFO DAGScheduler: failed: HashSet()", 'KIP714_SUMMARY {"app": "x"}')
    framework = (
        "2026-11-22T08:19:39.751868Z [info     ] Task instance state updated "
        "[airflow.api_fastapi.execution_api.routes.task_instances] loc=task_instances.py:254"
    )
    assert task_log_line(start) == "08:19:40 > open_subscription"
    assert task_log_line(ours) == "08:19:41   Subscription kip714-x created"
    assert task_log_line(spark_noise) is None
    assert task_log_line(spark_summary) is not None and "KIP714_SUMMARY" in task_log_line(spark_summary)
    assert task_log_line(framework) is None
    assert task_log_line("not a log line") is None
    # the same apps as a Spark Connect client: summaries shown, per-step timings not
    connect = "airflow.task.operators.airflow_provider_kip714.spark.connect.Kip714SparkConnectOperator"
    timing = f'2026-11-22T08:23:55.419484Z [info     ] KIP714_TIMING {{"phase": "rollups"}} [{connect}]'
    assert task_log_line(timing) is None
    assert "KIP714_SUMMARY" in (task_log_line(timing.replace("KIP714_TIMING", "KIP714_SUMMARY")) or "")


def test_preparing_removes_the_previous_demos_airflow_database(tmp_path: Path) -> None:
    """A single-topology demo's Airflow DB kept its file:// Assets active, so the cluster demo that
    followed failed: "Task has the following inactive assets" (the same names at s3:// URIs)."""
    kafka_dir, data_dir, airflow_home = tmp_path / "kafka", tmp_path / "data", tmp_path / "airflow"
    for leftover in (
        airflow_home / "airflow.db",
        data_dir / "landing" / "x.parquet",
        tmp_path / "fleet-logs" / "a.log",
    ):
        leftover.parent.mkdir(parents=True, exist_ok=True)
        leftover.write_text("left by a previous demo")

    prepare_work_dir(tmp_path, kafka_dir, data_dir, airflow_home)

    assert airflow_home.is_dir()
    assert list(airflow_home.iterdir()) == []
    assert not data_dir.exists()
    assert not (tmp_path / "fleet-logs").exists()
