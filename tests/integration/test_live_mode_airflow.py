"""Live fleet health end to end, under a live Airflow, on real clients, as production runs it.

Three librdkafka consumers of one group and a producer push every second; one consumer slows down. With
``kip714_live`` running continuously (its Spark apps on the session's Spark Connect server),
``kip714_alerts`` mailing to a real SMTP server on 127.0.0.1, and auto-windows switched on:

- live mode finds the slow consumer, and its finding becomes one ``kip714_findings`` asset event;
- a mail naming the client, the finding and its severity arrives;
- ``kip714_auto_window`` opens a 1 s ``kip714_troubleshoot`` window for that consumer alone; the run
  succeeds, its report begins with the finding, and its subscription is gone afterwards;
- meanwhile the scheduler is killed and started again, and a live task process is SIGKILLed: no
  transition is announced twice and none is lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kip714_dev.demo.fleet import ClientFleet
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from kip714_dev.smtp_sink import SmtpSink

from airflow_provider_kip714.findings.model import FINDINGS_ASSET_NAME, Finding
from airflow_provider_kip714.storage.data_root import troubleshoot_area
from tests.support.live_airflow import LiveAirflow, live_airflow_for
from tests.support.slowing_group import SlowingGroup

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(2400)]

LIVE, ALERTS, AUTO, TROUBLESHOOT = "kip714_live", "kip714_alerts", "kip714_auto_window", "kip714_troubleshoot"
FINDING_TIMEOUT_S = 900
WINDOW_MINUTES = 1
SMTP_CONN = "smtp_kip714"


@pytest.fixture(scope="module")
def story(
    request: pytest.FixtureRequest,
    kafka_cluster_factory: LocalKafkaClusterFactory,
    spark_connect_server: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Any]]:
    # A broker of its own: on the session's broker, live mode's first cycle also lands the pushes of
    # earlier tests' clients, and those closed without a terminating push are silent findings whose
    # windows compete with the slow consumer's for the caps (seen on CI).
    kafka_cluster = kafka_cluster_factory.start(name=f"live-mode-{uuid.uuid4().hex[:6]}")
    request.addfinalizer(kafka_cluster.stop)
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    home = tmp_path_factory.mktemp("live-mode-airflow")
    config = kafka_cluster.client_config()
    group = SlowingGroup.start(config, "lm")
    prefix, specs, admin = group.prefix, group.specs, group.admin
    host, port = spark_connect_server.url.removeprefix("sc://").split(":")
    with SmtpSink.start() as sink, ClientFleet(kafka_cluster.bootstrap_servers, specs, home / "fleet", 3000):
        env = {
            "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps({"conn_type": "kafka", "extra": config}),
            "AIRFLOW_CONN_SPARK_CONNECT_KIP714": json.dumps(
                {"conn_type": "spark_connect", "host": host, "port": int(port)}
            ),
            "KIP714_SPARK_CONNECT_CONN_ID": "spark_connect_kip714",
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
            f"AIRFLOW_CONN_{SMTP_CONN.upper()}": json.dumps(sink.connection()),
            # a group of three is noisy: past the default 5 mails per kind and hour, the slow consumer's
            # own mail could go into the digest (the limit has tests of its own: test_alerts_dag)
            "AIRFLOW_VAR_KIP714_ALERTS": json.dumps(
                {"to": ["oncall@example.com"], "smtp_conn_id": SMTP_CONN, "max_mails_per_kind_per_hour": 200}
            ),
            # room for a window per client of the broker: the slow consumer and its three peers
            "AIRFLOW_VAR_KIP714_AUTO_WINDOWS": json.dumps(
                {"enabled": True, "window_minutes": WINDOW_MINUTES, "max_open": 4, "max_per_hour": 4}
            ),
            "KIP714_DATA_DIR": str(home / "data"),
            "KIP714_SPARK_BUILD_DIR": str(home / "spark-build"),
            "KIP714_LIVE_LOOKBACK": "2m",
            "KIP714_LIVE_BASELINE_FOR": "20s",
            "KIP714_UI_BASE_URL": "http://127.0.0.1:8080",
        }
        try:
            with live_airflow_for(request, home / "airflow", env) as airflow:
                api = airflow.api
                api.wait_for_dags([LIVE, ALERTS, AUTO, TROUBLESHOOT])
                for dag_id in (TROUBLESHOOT, ALERTS, AUTO, LIVE):
                    api.unpause(dag_id)
                yield {"airflow": airflow, "sink": sink, "prefix": prefix, "home": home, "admin": admin}
        finally:
            group.stop()


def _unfinished(api: Any, dag_id: str) -> list[str]:
    return [r["dag_run_id"] for r in api.dag_runs(dag_id) if r["state"] not in ("success", "failed")]


def _finding_events(airflow: LiveAirflow) -> list[dict[str, Any]]:
    return airflow.asset_events(FINDINGS_ASSET_NAME)


def _slow_opened(airflow: LiveAirflow, prefix: str) -> list[Finding]:
    found = []
    for event in _finding_events(airflow):
        finding = Finding.from_extra(event["extra"])
        if finding.client.client_id == f"{prefix}-consumer-slow" and finding.transition.value == "opened":
            found.append(finding)
    return found


def _wait(what: str, check: Any, timeout_s: float, every_s: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(every_s)
    raise AssertionError(f"{what}: not within {timeout_s:.0f} s")


def _kill_a_live_task(api: Any) -> bool:
    """SIGKILL the task process of a running ``kip714_live`` task (its pid from the API), if one runs."""
    for run in api.dag_runs(LIVE)[:2]:
        for task_id, instance in api.task_instances(LIVE, run["dag_run_id"]).items():
            if instance.get("state") == "running" and instance.get("pid"):
                try:
                    os.kill(int(instance["pid"]), signal.SIGKILL)
                except ProcessLookupError:
                    continue
                print(
                    f"SIGKILLed {LIVE}.{task_id} (pid {instance['pid']}) of {run['dag_run_id']}", flush=True
                )
                return True
    return False


def _restart_scheduler(airflow: LiveAirflow) -> None:
    airflow.kill("scheduler")
    airflow.processes["scheduler"].wait(30)
    with (airflow.home / "scheduler.log").open("ab") as log:
        airflow.processes["scheduler"] = subprocess.Popen(
            [str(Path(sys.executable).parent / "airflow"), "scheduler", "--skip-serve-logs"],
            env=airflow.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_a_slow_consumer_is_found_mailed_and_opens_its_own_window(story: dict[str, Any]) -> None:
    airflow, sink, prefix = story["airflow"], story["sink"], story["prefix"]
    api = airflow.api
    # a few live cycles in, the scheduler dies and comes back, and a live task is killed mid-run
    _wait("two kip714_live runs", lambda: len(api.dag_runs(LIVE)) >= 2, 600)
    _restart_scheduler(airflow)
    _wait("a kip714_live task to kill", lambda: _kill_a_live_task(api), 300, every_s=1)

    _wait("the slow consumer's finding", lambda: _slow_opened(airflow, prefix), FINDING_TIMEOUT_S)

    def auto_run() -> list[dict[str, Any]]:
        """The auto-window opened by one of the slow consumer's findings: it may have several at once (one
        per metric), and its peers findings and windows of their own (a group of three is noisy)."""
        slow = {finding.finding_id for finding in _slow_opened(airflow, prefix)}
        return [
            r
            for r in api.dag_runs(TROUBLESHOOT)
            if r["dag_run_id"].startswith("kip714_auto__")
            and (r.get("conf") or {}).get("opened_by_finding", {}).get("finding_id") in slow
        ]

    (run,) = _wait("the window opened by the finding", auto_run, 600)  # one: the client's cool-down
    (opened,) = [
        f
        for f in _slow_opened(airflow, prefix)
        if f.finding_id == run["conf"]["opened_by_finding"]["finding_id"]
    ]
    assert opened.kind.value in ("anomaly", "silent_client") and opened.severity.value in (
        "warning",
        "critical",
    )

    def its_mail() -> list[Any]:
        return [
            m for m in sink.mails if f"{prefix}-consumer-slow" in m.subject and opened.finding_id in m.html()
        ]

    (mail, *_) = _wait("the alert mail", its_mail, 600)
    body = mail.html()
    assert opened.severity.value in (mail.subject + body).lower()
    assert opened.kind.value.replace("_", " ") in (mail.subject + body).lower()
    assert f"{prefix}-consumer-slow" in body
    final = api.wait_for_run(TROUBLESHOOT, run["dag_run_id"], timeout_s=WINDOW_MINUTES * 60 + 900)
    assert final["state"] == "success", api.task_states(TROUBLESHOOT, run["dag_run_id"])
    conf = run["conf"]
    assert conf["interval_ms"] == 1000 and conf["opened_by_finding"]["finding_id"] == opened.finding_id
    assert conf["client_instance_id"] and "client_id" not in conf  # that instance alone
    report = troubleshoot_area(run["dag_run_id"], story["home"] / "data").report / "report.html"
    text = report.read_text()
    assert text.index("id='opened-by'") < text.index("id='findings'")
    assert f"{prefix}-consumer-slow" in text
    if opened.metric_name:  # drawn from live mode's rows kept when the window opened, peers as a band
        assert (
            'data-chart="opened-by-chart"' in text[text.index("id='opened-by'") : text.index("id='findings'")]
        )
    for other in (f"{prefix}-consumer-1", f"{prefix}-consumer-2", f"{prefix}-producer"):
        assert other not in text  # a window for that consumer alone

    # every window closes: the peers' findings may open windows of their own (at most max_per_hour), still
    # landing when this one ended. Once no auto-window or troubleshooting run is unfinished, a window left
    # on the cluster has leaked, unless a run started meanwhile (then wait for it too). Pausing the DAGs
    # is no shortcut: the scheduler stops examining a paused DAG's runs, so they would never finish.
    def settled() -> bool:
        return not _unfinished(api, AUTO) and not _unfinished(api, TROUBLESHOOT)

    for _ in range(5):
        _wait("every auto-window and troubleshooting run to finish", settled, 1500, every_s=10)
        left = [n for n in story["admin"].list_names() if n.startswith("kip714-troubleshoot")]
        if not left or settled():
            break
    for other_run in api.dag_runs(TROUBLESHOOT):
        states = api.task_states(TROUBLESHOOT, other_run["dag_run_id"])
        assert states.get("close_subscription") == "success", (other_run["dag_run_id"], states)
    assert not left, left

    # nothing announced twice, across the scheduler restart and the killed task
    keys = Counter(
        (e["extra"]["finding"]["finding_id"], e["extra"]["finding"]["transition"])
        for e in _finding_events(airflow)
    )
    assert keys and max(keys.values()) == 1, keys
    sent = Counter(m.subject for m in sink.mails)
    assert max(sent.values()) == 1, sent
