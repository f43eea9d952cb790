"""The findings' consumers under a live Airflow (scheduler, dag-processor, triggerer, API server).

A test DAG emits ``kip714_findings`` events through an asset alias, as ``kip714_live`` does. The
scheduler then runs ``kip714_alerts`` (its mail arrives at a real SMTP server on 127.0.0.1) and
``kip714_auto_window`` (it triggers ``kip714_troubleshoot`` for the finding's client, with the conf the
form accepts). ``kip714_troubleshoot`` stays paused: the test reads its run's conf and never opens a
subscription (the window itself is tested in test_dags_troubleshoot.py).

The harness is ``tests/support/live_airflow.py`` (wt/airflow, on main). ``bad_events`` is not checked
here: the events of one task can be split so that the later one starts no run of its own (seen: two
events of one emit, the consumer's run created between them held only the first, and the second was
queued for no DAG run until another event comes); test_alerts_smtp.py covers bad events.
"""

from __future__ import annotations

import json
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kip714_dev.smtp_sink import SmtpSink

from airflow_provider_kip714.contract.selectors import compile_pattern
from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind, Severity
from airflow_provider_kip714.findings.store import LiveStore
from airflow_provider_kip714.troubleshooting.request import TroubleshootingRequest
from tests.support.live_airflow import AirflowApi, LiveAirflow

REPO = Path(__file__).resolve().parents[2]
EMITTER = "kip714_test_findings_emitter"
DAG_FILES = [
    REPO / "dags" / f"{name}.py" for name in ("kip714_alerts", "kip714_auto_window", "kip714_troubleshoot")
]
INSTANCE = "rSI6tEqbSsO7BEDZ9nqyzw"
LIBRARY = ("confluent-kafka-python", "2.16.0")
METRICS = [
    "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
    "org.apache.kafka.consumer.poll.idle.ratio",
]


def slow_consumer() -> Finding:
    return Finding(
        kind=FindingKind.ANOMALY,
        severity=Severity.CRITICAL,
        since=datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=2),
        summary="poll idle ratio 0.02, own baseline's median 0.97",
        client=ClientIdentity(
            client_instance_id=INSTANCE,
            client_id="orders-consumer-<b>1</b>",
            client_software_name=LIBRARY[0],
            client_software_version=LIBRARY[1],
            principal="User:alice",
        ),
        metric_name="org.apache.kafka.consumer.poll.idle.ratio",
        observed=0.02,
        expected=0.97,
        against="own",
    )


def write_capabilities(data: Path) -> None:
    """The scheduled analytics' capabilities table: what the consumer's library pushes."""
    table = data / "analytics" / "capabilities"
    table.mkdir(parents=True)
    rows = {
        "client_software_name": [LIBRARY[0]] * 2,
        "client_software_version": [LIBRARY[1]] * 2,
        "metric_name": METRICS,
        "points_per_push": [1.0, 1.0],
        "instances": [1, 1],
        "last_seen": pa.array([datetime.now(UTC)] * 2, pa.timestamp("us", tz="UTC")),
    }
    pq.write_table(pa.table(rows), table / "part-0.parquet")


def runs(api: AirflowApi, dag_id: str) -> list[dict[str, Any]]:
    return list(api.request("GET", f"/api/v2/dags/{dag_id}/dagRuns", params={"limit": 100})["dag_runs"])


def wait_for_asset_run(api: AirflowApi, dag_id: str, timeout_s: float) -> dict[str, Any]:
    """The first asset-triggered run of ``dag_id``, once it has finished."""
    deadline = time.monotonic() + timeout_s
    while True:
        triggered = [r for r in runs(api, dag_id) if r["run_type"] == "asset_triggered"]
        if triggered and triggered[0]["state"] in ("success", "failed"):
            return triggered[0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no finished asset-triggered run of {dag_id}: {runs(api, dag_id)}")
        time.sleep(2)


@pytest.mark.timeout(900)
def test_an_emitted_finding_is_mailed_and_opens_a_window_for_its_client(tmp_path: Path) -> None:
    dags = tmp_path / "dags"
    dags.mkdir()
    for source in [*DAG_FILES, Path(__file__).parent / "live_dags" / f"{EMITTER}.py"]:
        shutil.copy(source, dags / source.name)
    data = tmp_path / "data"
    write_capabilities(data)
    finding = slow_consumer()
    with SmtpSink.start() as sink:
        env = {
            "AIRFLOW_CONN_SMTP_DEFAULT": json.dumps(sink.connection()),
            "AIRFLOW_VAR_KIP714_ALERTS": json.dumps(
                {"to": ["ops@example.com"], "ui_url": "http://127.0.0.1/kip714"}
            ),
            "AIRFLOW_VAR_KIP714_AUTO_WINDOWS": json.dumps({"enabled": True}),
            "KIP714_DATA_DIR": str(data),
            # one task at a time: two task processes starting together on SQLite have stalled the
            # API server's execution endpoint for a minute on this (loaded, 2-core) machine
            "AIRFLOW__CORE__PARALLELISM": "1",
        }
        with LiveAirflow.start(tmp_path / "airflow", env=env, dags_folder=dags) as airflow:
            api = airflow.api
            api.wait_for_dags([EMITTER, "kip714_alerts", "kip714_auto_window", "kip714_troubleshoot"])
            for dag_id in (EMITTER, "kip714_alerts", "kip714_auto_window"):
                api.unpause(dag_id)
            emitted = api.trigger(EMITTER, conf={"extras": [finding.as_extra()]})
            assert api.wait_for_run(EMITTER, emitted["dag_run_id"], timeout_s=240)["state"] == "success"

            [mail] = sink.wait_for(1, timeout_s=300)
            assert "CRITICAL anomaly" in mail.subject and INSTANCE in mail.subject
            assert "orders-consumer-<b>1</b>" in mail.subject  # a subject is text: shown as sent
            assert "orders-consumer-&lt;b&gt;1&lt;/b&gt;" in mail.html()

            deadline = time.monotonic() + 120
            while (ledger := LiveStore(data).alert_ledger()).pending and time.monotonic() < deadline:
                time.sleep(2)
            assert ledger.pending == [] and [s.finding_id for s in ledger.sent] == [finding.finding_id]
            alerts = wait_for_asset_run(api, "kip714_alerts", timeout_s=120)
            assert alerts["state"] == "success"

            auto = wait_for_asset_run(api, "kip714_auto_window", timeout_s=120)
            assert auto["state"] == "success", api.task_states("kip714_auto_window", auto["dag_run_id"])
            run_id = f"kip714_auto__{finding.finding_id}"
            conf = api.dag_run("kip714_troubleshoot", run_id)["conf"]
            assert conf["interval_ms"] == 1000 and conf["window_seconds"] == 600
            assert conf["metrics"] == METRICS
            assert compile_pattern(conf["client_instance_id"]).fullmatch(INSTANCE)
            assert conf["opened_by_finding"]["finding_id"] == finding.finding_id
            request = TroubleshootingRequest.from_params(conf)  # the form takes it as it is
            assert request.opened_by_finding is not None
            [record] = LiveStore(data).auto_windows()
            assert (record.run_id, record.finding_id, record.client_instance_ids) == (
                run_id,
                finding.finding_id,
                (INSTANCE,),
            )
        assert len(sink.mails) == 1  # no second mail from any later run
