"""Findings to mail, against a real SMTP server (aiosmtpd on 127.0.0.1) and the SMTP provider's notifier.

The task's function (``run_alerts``) is called with a context built from Airflow's own triggering-event
classes and a real Airflow connection (``AIRFLOW_CONN_*``); time is passed in, so the hourly rate limit
and its digest are exercised without waiting an hour. The DAG under a live Airflow is
``test_alerts_live_airflow.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.api.datamodels._generated import (
    AssetAliasReferenceAssetEventDagRun,
    AssetReferenceAssetEventDagRun,
)
from airflow.sdk.bases.notifier import BaseNotifier
from airflow.sdk.execution_time.comms import AssetEventDagRunReferenceResult
from airflow.sdk.execution_time.context import TriggeringAssetEventsAccessor
from kip714_dev.smtp_sink import SmtpSink, free_port

from airflow_provider_kip714.findings.alert_channels import NotifierChannel
from airflow_provider_kip714.findings.alert_settings import AlertConfigError
from airflow_provider_kip714.findings.alerts import AlertDeliveryError, run_alerts
from airflow_provider_kip714.findings.model import (
    FINDINGS_ASSET_NAME,
    ClientIdentity,
    Finding,
    FindingKind,
    Severity,
)
from airflow_provider_kip714.findings.store import LiveStore

CONN_ID = "smtp_alerts"
NOW = datetime(2026, 11, 27, 22, 10, tzinfo=UTC)
TO = "ops@example.com"


def make_finding(
    client_id: str = "orders-consumer-1",
    instance: str = "rSI6tEqbSsO7BEDZ9nqyzw",
    kind: FindingKind = FindingKind.ANOMALY,
    severity: Severity = Severity.CRITICAL,
    since: datetime = NOW - timedelta(minutes=3),
    summary: str = "poll idle ratio 0.02, own baseline's median 0.97",
) -> Finding:
    return Finding(
        kind=kind,
        severity=severity,
        since=since,
        summary=summary,
        client=ClientIdentity(
            client_instance_id=instance,
            client_id=client_id,
            client_software_name="confluent-kafka-python",
            client_software_version="2.16.0",
            client_source_address="127.0.0.1",
            principal="User:alice",
        ),
        metric_name="org.apache.kafka.consumer.poll.idle.ratio",
        observed=0.02,
        expected=0.97,
        against="own",
        link="http://127.0.0.1:8080/kip714/findings#" + kind.value,
    )


def events(extras: Sequence[dict[str, Any]]) -> TriggeringAssetEventsAccessor:
    """``triggering_asset_events`` as the Task SDK builds them: each event under its asset and alias."""
    return TriggeringAssetEventsAccessor.build(
        AssetEventDagRunReferenceResult(
            asset=AssetReferenceAssetEventDagRun(name=FINDINGS_ASSET_NAME, uri=FINDINGS_ASSET_NAME, extra={}),
            extra=extra,
            source_task_id="emit_findings",
            source_dag_id="kip714_live",
            source_run_id="scheduled__2026-11-27T22:09:00+00:00",
            source_map_index=-1,
            source_aliases=[AssetAliasReferenceAssetEventDagRun(name="kip714_findings_alias")],
            timestamp=NOW,
        )
        for extra in extras
    )


def context_of(findings: Sequence[Finding | dict[str, Any]]) -> dict[str, Any]:
    extras = [f.as_extra() if isinstance(f, Finding) else f for f in findings]
    return {"triggering_asset_events": events(extras)}


def settings(**overrides: Any) -> str:
    """The Variable's text, as ``Variable.get`` returns it."""
    return json.dumps({"to": [TO], "smtp_conn_id": CONN_ID, **overrides})


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch) -> Iterator[SmtpSink]:
    with SmtpSink.start() as server:
        monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(server.connection()))
        yield server


@pytest.fixture
def store(tmp_path: Path) -> LiveStore:
    return LiveStore(tmp_path)


def ledger_file(store: LiveStore) -> dict[str, Any]:
    return json.loads((store.root / "alerts_sent.json").read_text())


def test_a_finding_arrives_as_a_mail_naming_client_finding_and_severity(
    sink: SmtpSink, store: LiveStore
) -> None:
    finding = make_finding()
    outcome = run_alerts(context_of([finding]), settings(), store, NOW)
    assert (outcome["received"], outcome["mails"], outcome["pending"]) == (1, 1, 0)
    [mail] = sink.wait_for(1)
    assert mail.rcpt_tos == (TO,)
    assert mail.mail_from == "kip714@localhost"
    for word in ("CRITICAL", "anomaly", "orders-consumer-1", "rSI6tEqbSsO7BEDZ9nqyzw"):
        assert word in mail.subject
    body = mail.html()
    for word in ("critical", "anomaly", "orders-consumer-1", "poll idle ratio 0.02", "User:alice", "0.97"):
        assert word in body
    assert "href='http://127.0.0.1:8080/kip714/findings#anomaly'" in body
    assert mail.message["Message-ID"] == f"<{finding.finding_id}.opened@kip714>"
    sent = ledger_file(store)
    assert sent["pending"] == []
    assert [(s["finding_id"], s["transition"]) for s in sent["sent"]] == [(finding.finding_id, "opened")]


def test_an_event_no_run_was_triggered_by_is_sent_by_a_later_run_once(
    sink: SmtpSink, store: LiveStore
) -> None:
    """Airflow may leave an event of the emitting task out of every consumer run: each run also reads the
    asset's recent events (its inlet), and the ledger sends each transition once."""
    first, orphan = (
        make_finding(),
        make_finding(client_id="orders-consumer-2", instance="AAAAAAAAAAAAAAAAAAAAAQ"),
    )
    run_alerts(context_of([first]), settings(), store, NOW)
    recent = events([first.as_extra(), orphan.as_extra()])
    timed = run_alerts({}, settings(), store, NOW + timedelta(minutes=10), recent_events=recent)
    assert (timed["received"], timed["duplicates"], timed["mails"]) == (1, 1, 1)
    again = run_alerts({}, settings(), store, NOW + timedelta(minutes=20), recent_events=recent)
    assert again["mails"] == 0
    mails = sink.wait_for(2)
    assert len(mails) == 2 and "orders-consumer-2" in mails[1].subject


def test_the_same_events_again_send_nothing_twice_and_resolved_is_its_own_mail(
    sink: SmtpSink, store: LiveStore
) -> None:
    finding = make_finding()
    run_alerts(context_of([finding]), settings(), store, NOW)
    again = run_alerts(context_of([finding, finding]), settings(), store, NOW + timedelta(minutes=1))
    assert (again["received"], again["duplicates"], again["mails"]) == (0, 2, 0)
    resolved = finding.resolved(NOW + timedelta(minutes=5))
    run_alerts(context_of([resolved]), settings(), store, NOW + timedelta(minutes=5))
    mails = sink.wait_for(2)
    assert len(mails) == 2
    assert "resolved" in mails[1].subject and "orders-consumer-1" in mails[1].subject


def test_past_the_hourly_limit_one_digest_per_kind_after_the_hour(sink: SmtpSink, store: LiveStore) -> None:
    anomalies = [make_finding(client_id=f"consumer-{i}", instance=f"{i:0>22}") for i in range(5)]
    silent = make_finding(client_id="producer-9", kind=FindingKind.SILENT_CLIENT, severity=Severity.WARNING)
    first = run_alerts(context_of([*anomalies, silent]), settings(max_mails_per_kind_per_hour=2), store, NOW)
    assert (first["mails"], first["held_for_digest"], first["pending"]) == (3, 3, 3)
    # still the same hour: nothing more, however often the DAG runs
    same_hour = run_alerts(
        context_of([]), settings(max_mails_per_kind_per_hour=2), store, NOW + timedelta(minutes=40)
    )
    assert (same_hour["mails"], same_hour["digests"]) == (0, 0)
    assert len(sink.mails) == 3
    # the first run after the hour: one digest with the three held anomalies
    after = run_alerts(
        context_of([]), settings(max_mails_per_kind_per_hour=2), store, NOW + timedelta(minutes=55)
    )
    assert (after["digests"], after["sent_findings"], after["pending"]) == (1, 3, 0)
    mails = sink.wait_for(4)
    digest = mails[3]
    assert "digest: 3 more anomaly finding(s) in 2026-11-27 22:00-23:00 UTC" in digest.subject
    for finding in anomalies[2:]:
        assert finding.client.client_id in digest.html()
    for finding in anomalies[:2]:
        assert finding.client.client_id not in digest.html()
    assert (
        run_alerts(context_of([]), settings(max_mails_per_kind_per_hour=2), store, NOW + timedelta(hours=2))[
            "digests"
        ]
        == 0
    )
    assert len(sink.mails) == 4


def test_no_smtp_connection_fails_with_one_line_and_the_next_run_sends(
    monkeypatch: pytest.MonkeyPatch, store: LiveStore
) -> None:
    monkeypatch.delenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", raising=False)
    finding = make_finding()
    with pytest.raises(AlertConfigError) as failed:
        run_alerts(context_of([finding]), settings(), store, NOW)
    message = str(failed.value)
    assert "\n" not in message
    assert f"SMTP connection '{CONN_ID}' does not exist" in message
    assert "1 finding(s) not sent wait in" in message
    assert len(ledger_file(store)["pending"]) == 1
    with SmtpSink.start() as server:
        monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(server.connection()))
        outcome = run_alerts(context_of([]), settings(), store, NOW + timedelta(minutes=10))
        assert (outcome["mails"], outcome["pending"]) == (1, 0)
        assert "orders-consumer-1" in server.wait_for(1)[0].subject


def test_an_unreachable_server_fails_with_one_line_and_loses_nothing(
    monkeypatch: pytest.MonkeyPatch, store: LiveStore
) -> None:
    nobody = free_port()  # nothing listens there
    connection = {
        "conn_type": "smtp",
        "host": "127.0.0.1",
        "port": nobody,
        "extra": {"disable_tls": True, "disable_ssl": True, "from_email": "kip714@localhost", "timeout": 5},
    }
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(connection))
    findings = [make_finding(), make_finding(client_id="payments-2", instance="B" * 22)]
    with pytest.raises(AlertDeliveryError) as failed:
        run_alerts(context_of(findings), settings(), store, NOW)
    message = str(failed.value)
    assert "\n" not in message
    assert "smtp failed (ConnectionRefusedError" in message
    assert "2 finding(s) not sent wait in" in message
    with SmtpSink.start() as server:
        monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(server.connection()))
        outcome = run_alerts(context_of(findings), settings(), store, NOW + timedelta(minutes=10))
        assert (outcome["duplicates"], outcome["mails"], outcome["pending"]) == (2, 2, 0)
        subjects = sorted(mail.subject for mail in server.wait_for(2))
        assert "orders-consumer-1" in subjects[0] and "payments-2" in subjects[1]


class _RaisingNotifier(BaseNotifier):
    """A notifier whose service is down after ``works`` messages."""

    template_fields = ("text",)
    delivered: list[str] = []

    def __init__(self, text: str, works: int) -> None:
        super().__init__()
        self.text = text
        self.works = works

    def notify(self, context: Any) -> None:
        if len(self.delivered) >= self.works:
            raise RuntimeError("chat service answered 503")
        self.delivered.append(self.text)


def test_a_notifier_that_raises_keeps_what_it_did_not_send(store: LiveStore) -> None:
    _RaisingNotifier.delivered = []
    findings = [make_finding(client_id=f"c{i}", instance=f"{i:0>22}") for i in range(3)]
    channel = NotifierChannel("chat", lambda mail: _RaisingNotifier("{{ kip714_alert.text }}", works=1))
    with pytest.raises(AlertDeliveryError) as failed:
        run_alerts(context_of(findings), settings(), store, NOW, channel_for=lambda _: channel)
    assert str(failed.value).startswith(
        "kip714 alerts: chat failed (RuntimeError: chat service answered 503)"
    )
    assert "2 finding(s) not sent" in str(failed.value)
    assert len(_RaisingNotifier.delivered) == 1 and "c0" in _RaisingNotifier.delivered[0]
    working = NotifierChannel("chat", lambda mail: _RaisingNotifier("{{ kip714_alert.text }}", works=99))
    outcome = run_alerts(context_of(findings), settings(), store, NOW, channel_for=lambda _: working)
    assert (outcome["mails"], outcome["duplicates"], outcome["pending"]) == (2, 3, 0)
    # each finding's text went out once: c0 by the first run, c1 and c2 by the second
    assert sorted(text.split("client ", 1)[1].split(" ", 1)[0] for text in _RaisingNotifier.delivered) == [
        "c0",
        "c1",
        "c2",
    ]


def test_bad_settings_fail_with_one_line_after_recording_the_findings(store: LiveStore) -> None:
    with pytest.raises(AlertConfigError) as failed:
        run_alerts(context_of([make_finding()]), '{"to": "ops@example.com", "max_mails": 3}', store, NOW)
    assert str(failed.value).startswith("kip714_alerts.max_mails: is not a setting")
    assert len(ledger_file(store)["pending"]) == 1
    with pytest.raises(AlertConfigError, match=r"^kip714_alerts.to: no recipient configured"):
        run_alerts(context_of([]), json.dumps({"smtp_conn_id": CONN_ID}), store, NOW)


def test_a_bad_event_is_counted_and_the_others_are_sent(sink: SmtpSink, store: LiveStore) -> None:
    bad = {"finding": {"kind": "anomaly", "severity": "apocalyptic"}}
    outcome = run_alerts(context_of([bad, make_finding(), {"no": "finding"}]), settings(), store, NOW)
    assert (outcome["bad_events"], outcome["mails"]) == (2, 1)
    assert ledger_file(store)["bad_events"] == 2
    assert len(sink.wait_for(1)) == 1


HOSTILE_ID = (
    "evil\r\nBcc: victim@example.net\r\nX-Injected: yes <script>alert(1)</script> {{ 7 * 7 }} " + "A" * 5000
)


def test_client_text_stays_text_in_headers_and_body(sink: SmtpSink, store: LiveStore) -> None:
    finding = make_finding(client_id=HOSTILE_ID, summary="<b>bold</b>\nSubject: forged")
    run_alerts(context_of([finding]), settings(), store, NOW)
    [mail] = sink.wait_for(1)
    assert mail.rcpt_tos == (TO,)  # no Bcc smuggled into the envelope
    assert mail.message["X-Injected"] is None and mail.message["Bcc"] is None
    assert mail.message.get_all("Subject") == [mail.subject]
    header_names = [name.lower() for name in mail.message]
    assert sorted(header_names) == sorted(
        ["content-type", "mime-version", "subject", "from", "to", "date", "message-id"]
    )
    assert "\n" not in mail.subject and "\r" not in mail.subject
    assert "evil\\r\\nBcc: victim@example.net" in mail.subject  # shown, escaped
    assert len(mail.subject) <= 200
    body = mail.html()
    assert "<script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<b>bold</b>" not in body and "&lt;b&gt;bold&lt;/b&gt;" in body
    assert "{{ 7 * 7 }}" in body and "49" not in body  # not evaluated as a template
    assert "A" * 400 not in body  # long values are cut
