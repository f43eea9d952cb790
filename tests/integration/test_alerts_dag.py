"""The ``kip714_alerts`` DAG file itself under ``dag.test()``: Variable, SMTP connection, notifier, ledger.

``dag.test()`` cannot hand a run triggering asset events, so these runs are the DAG's timed runs: they
send what an earlier run left pending (the ledger is seeded as a run that could not send leaves it).
That is the path "the next run sends what was not sent"; the asset-triggered path runs under a live
Airflow in test_findings_consumers_live_airflow.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dag_test_env import isolated_airflow_env, run_dag_test
from kip714_dev.smtp_sink import SmtpSink

from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind, Severity
from airflow_provider_kip714.findings.store import AlertLedger, LiveStore, PendingAlert


def seed_pending(data: Path, count: int) -> list[Finding]:
    now = datetime.now(UTC).replace(microsecond=0)
    findings = [
        Finding(
            kind=FindingKind.SILENT_CLIENT,
            severity=Severity.WARNING,
            since=now - timedelta(minutes=5),
            summary=f"no push for 90 s (expected every 10 s) #{i}",
            client=ClientIdentity(client_instance_id=f"{i:0>21}A", client_id=f"billing-{i}"),
        )
        for i in range(count)
    ]
    LiveStore(data).write_alert_ledger(AlertLedger(pending=[PendingAlert(f, now) for f in findings]))
    return findings


@pytest.mark.timeout(900)
def test_the_dag_sends_what_an_earlier_run_left_pending_and_fails_in_one_line_without_a_connection(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    findings = seed_pending(data, 2)
    run_at = datetime.now(UTC).replace(second=0, microsecond=0)
    variable = {"AIRFLOW_VAR_KIP714_ALERTS": json.dumps({"to": ["ops@example.com"]})}

    env = isolated_airflow_env(tmp_path / "home-bad", data, variable)  # no smtp_default connection
    summary, output, _ = run_dag_test(env, "kip714_alerts", run_at)
    assert summary is not None and summary["tasks"]["send_alerts"] == "failed", output[-3000:]
    assert (
        "SMTP connection 'smtp_default' does not exist (create it, or name another in "
        "kip714_alerts.smtp_conn_id); 2 finding(s) not sent wait in"
    ) in output
    assert len(LiveStore(data).alert_ledger().pending) == 2

    with SmtpSink.start() as sink:
        connection = {"AIRFLOW_CONN_SMTP_DEFAULT": json.dumps(sink.connection())}
        env = isolated_airflow_env(tmp_path / "home-good", data, {**variable, **connection})
        summary, output, _ = run_dag_test(env, "kip714_alerts", run_at + timedelta(minutes=10))
        assert summary is not None and summary["state"] == "success", output[-3000:]
        outcome = summary["xcom"]["send_alerts"]
        assert (outcome["mails"], outcome["pending"]) == (2, 0)
        subjects = sorted(mail.subject for mail in sink.wait_for(2))
        assert [f"billing-{i}" in subject for i, subject in enumerate(subjects)] == [True, True]
        assert all("WARNING silent_client" in subject for subject in subjects)
        again, output, _ = run_dag_test(env, "kip714_alerts", run_at + timedelta(minutes=20))
        assert again is not None and again["xcom"]["send_alerts"]["mails"] == 0
        assert len(sink.mails) == 2
    ledger = LiveStore(data).alert_ledger()
    assert sorted(s.finding_id for s in ledger.sent) == sorted(f.finding_id for f in findings)
