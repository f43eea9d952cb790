"""The troubleshooting form's guardrail, run by ``dag.test()`` of ``kip714_troubleshoot``'s own tasks.

``validate_request`` judges the request against the scheduled ``capabilities`` table and the real
broker's ``telemetry.max.bytes`` before ``open_subscription`` runs; the warnings go to the task log and,
through the request, into the report (built by the DAG's ``report`` task). Only those two tasks run
(``subset_dag_runner.py``): the whole window is ``test_dags_troubleshoot.py``'s. A library name
carrying markup must reach the report as text. Invalid input still fails in one line naming the field,
before the guardrail or the cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dag_test_env import DAGS, make_airflow_env
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

from airflow_provider_kip714.storage.data_root import scheduled_area, troubleshoot_area
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.troubleshooting.guardrails import broker_telemetry_max_bytes
from tests.ui.analytics_data import write_table

DAG_ID = "kip714_troubleshoot"
RUNNER = Path(__file__).parent / "subset_dag_runner.py"
EVIL = "evil<img src=x onerror=alert(1)>"
LAST_SEEN = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def capability(name: str, version: str, metric: str, points: float = 1.0) -> dict:
    return {
        "client_software_name": name,
        "client_software_version": version,
        "metric_name": metric,
        "metric_type": "gauge",
        "instances": 3,
        "points_per_push": points,
        "first_seen": LAST_SEEN,
        "last_seen": LAST_SEEN,
        "interval_start": LAST_SEEN,
    }


@pytest.fixture(scope="module")
def airflow_env(kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("airflow-home-guardrail")
    env = make_airflow_env(home, home / "data", kafka_cluster)
    write_table(
        scheduled_area(Path(env["KIP714_DATA_DIR"])).analytics,
        "capabilities",
        [
            # librdkafka producers only: a consumer window gets nothing from them
            capability("confluent-kafka-python", "2.16.0", "org.apache.kafka.producer.record.queue.time.avg"),
            # a Java consumer whose lag metric has a point per partition: far over 1 MiB per push
            capability(
                "apache-kafka-java", "3.9.1", "org.apache.kafka.consumer.fetch.manager.records.lag", 30000
            ),
            capability(EVIL, "1.0", "org.apache.kafka.producer.request.rate"),
        ],
    )
    return env


def xcom(summary: dict, key: str) -> object:
    value = summary["xcom"][key]
    return json.loads(value) if isinstance(value, str) and value[:1] in '[{"' else value


def run_tasks(env: dict[str, str], task_ids: str, conf: dict) -> tuple[dict | None, str]:
    command = [sys.executable, str(RUNNER), str(DAGS / f"{DAG_ID}.py"), DAG_ID, task_ids]
    command += [datetime.now(UTC).isoformat(), json.dumps(conf)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"state"')]
    return (json.loads(lines[-1]) if lines else None), done.stdout + done.stderr


def test_guardrail_warns_in_the_log_and_the_report_before_the_subscription(
    kafka_cluster: LocalKafkaCluster, airflow_env: dict[str, str]
) -> None:
    with ClientMetricsAdmin(to_kafka_python_kwargs(kafka_cluster.client_config())) as admin:
        limit = broker_telemetry_max_bytes(admin.client)
        before = set(admin.list_names())
    assert limit is not None  # read from the real broker, as the DAG does
    conf = {"metrics": ["org.apache.kafka.consumer."], "window_seconds": 30}
    summary, output = run_tasks(airflow_env, "validate_request,report", conf)
    assert summary is not None, output[-5000:]
    errors = [line for line in output.splitlines() if "rror" in line][:20]
    assert summary["tasks"] == {"validate_request": "success", "report": "success"}, errors

    warned = xcom(summary, "validate_request.guardrail_warnings")
    kinds = {(w["kind"], w["library"]) for w in warned}
    assert kinds == {
        ("no_matching_metric", "confluent-kafka-python 2.16.0"),
        ("no_matching_metric", f"{EVIL} 1.0"),
        ("payload_too_large", "apache-kafka-java 3.9.1"),
    }
    too_large = next(w["message"] for w in warned if w["kind"] == "payload_too_large")
    assert f"telemetry.max.bytes={limit}" in too_large
    # in the task log, one line per warning
    for warning in warned:
        assert f"KIP714_GUARDRAIL {warning['kind']} {warning['message']}" in output
    with ClientMetricsAdmin(to_kafka_python_kwargs(kafka_cluster.client_config())) as admin:
        assert set(admin.list_names()) == before  # advice before the window: nothing was created

    report = Path(xcom(summary, "report.return_value"))
    assert report.parent == troubleshoot_area(summary["run_id"], Path(airflow_env["KIP714_DATA_DIR"])).report
    text = report.read_text()
    guardrail = text.split("<div class='guardrail'>", 1)[1].split("</div>", 1)[0]
    assert "confluent-kafka-python 2.16.0 pushes none of org.apache.kafka.consumer." in guardrail
    assert f"telemetry.max.bytes={limit}" in guardrail
    assert "evil&lt;img src=x onerror=alert(1)&gt; 1.0" in guardrail and "<img src=x" not in text
    # each warning once: in its own section, not again in the Request table
    assert text.count("confluent-kafka-python 2.16.0 pushes none of org.apache.kafka.consumer.") == 1


def test_invalid_form_fails_in_one_line_naming_the_field_before_the_guardrail(
    airflow_env: dict[str, str],
) -> None:
    summary, output = run_tasks(airflow_env, "validate_request", {"match": ["client_colour=red"]})
    assert summary is not None and summary["tasks"]["validate_request"] == "failed", output[-4000:]
    lines = [line for line in output.splitlines() if "unknown selector" in line and "client_colour" in line]
    assert lines and all(line.count("match") >= 1 for line in lines), output[-4000:]
    assert "KIP714_GUARDRAIL" not in output and "Guardrail:" not in output
