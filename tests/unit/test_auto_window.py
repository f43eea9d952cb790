"""The self-opening window's guardrails and conf, on hand-made findings and capabilities."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_kip714.contract.selectors import compile_pattern
from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.findings.evidence import evidence_area
from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind, Severity
from airflow_provider_kip714.findings.store import AutoWindow, LiveStore
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.troubleshooting.auto_window import (
    AutoWindowConfigError,
    AutoWindowSettings,
    Refusal,
    WindowPlan,
    bucket_for,
    findings_to_plan,
    open_windows,
    plan_window,
    plan_windows,
    prune,
)
from airflow_provider_kip714.troubleshooting.guardrails import Capability
from airflow_provider_kip714.troubleshooting.request import TroubleshootingRequest

NOW = datetime(2026, 11, 27, 22, 30, tzinfo=UTC)
ON = AutoWindowSettings(enabled=True, max_open=2, max_per_hour=3, cooldown_minutes=30)
LIBRDKAFKA = ("confluent-kafka-python", "2.16.0")
JAVA = ("apache-kafka-java", "4.1.0")
CAPABILITIES = [
    Capability(*LIBRDKAFKA, "org.apache.kafka.consumer.poll.idle.ratio", 1.0, 3),
    Capability(*LIBRDKAFKA, "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg", 1.0, 3),
    Capability(*JAVA, "org.apache.kafka.producer.record.send.rate", 1.0, 2),
]


def instance(n: int) -> str:
    return f"{n:0>21}Q"


def finding(n: int = 1, library: tuple[str, str] = LIBRDKAFKA, minutes_ago: int = 2) -> Finding:
    return Finding(
        kind=FindingKind.ANOMALY,
        severity=Severity.CRITICAL,
        since=NOW - timedelta(minutes=minutes_ago),
        summary="poll idle ratio 0.02, own baseline's median 0.97",
        client=ClientIdentity(
            client_instance_id=instance(n),
            client_id=f"consumer-{n}",
            client_software_name=library[0],
            client_software_version=library[1],
        ),
        metric_name="org.apache.kafka.consumer.poll.idle.ratio",
    )


def opened(n: int, minutes_ago: int, window_minutes: int = 10, finding_id: str | None = None) -> AutoWindow:
    at = NOW - timedelta(minutes=minutes_ago)
    return AutoWindow(
        run_id=f"kip714_auto__x{n}",
        finding_id=finding_id or f"anomaly-{n:016x}",
        client_instance_ids=(instance(n),),
        opened_at=at,
        expires_at=at + timedelta(minutes=window_minutes + 5),
        summary="earlier",
    )


def test_an_opened_finding_gets_a_1s_window_for_exactly_its_client_and_its_librarys_metrics() -> None:
    plan = plan_window(finding(1), ON, [], CAPABILITIES, NOW)
    assert isinstance(plan, WindowPlan)
    conf = plan.conf
    assert conf["interval_ms"] == 1000 and conf["window_seconds"] == 600 and conf["min_clients"] == 1
    assert conf["bucket"] == "1s"  # charted at the window's own resolution
    assert conf["metrics"] == [
        "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
        "org.apache.kafka.consumer.poll.idle.ratio",
    ]
    pattern = compile_pattern(conf["client_instance_id"])
    assert pattern.fullmatch(instance(1)) and not pattern.fullmatch(instance(1) + "x")
    assert not pattern.fullmatch(instance(2))
    assert conf["opened_by_finding"]["finding_id"] == finding(1).finding_id
    assert plan.run_id == f"kip714_auto__{finding(1).finding_id}"
    assert plan.record.client_instance_ids == (instance(1),)
    assert plan.record.expires_at == NOW + timedelta(minutes=15)
    # the troubleshoot form accepts it as is, finding included
    request = TroubleshootingRequest.from_params(conf)
    assert request.match == (f"client_instance_id={re.escape(instance(1))}",)
    assert request.opened_by_finding == finding(1).as_extra()["finding"]


@pytest.mark.parametrize(("interval_ms", "bucket"), [(100, "1s"), (1000, "1s"), (1001, "5s"), (60_000, "1m")])
def test_the_window_bucket_is_the_finest_that_holds_one_push(interval_ms: int, bucket: str) -> None:
    assert bucket_for(interval_ms) == bucket


def test_a_hex_instance_id_is_selected_in_kafkas_form() -> None:
    hex_id = "ad223ab4-4a9b-4ac3-bb04-40d9f67ab2cf"
    client = ClientIdentity(hex_id, client_software_name=LIBRDKAFKA[0], client_software_version=LIBRDKAFKA[1])
    hexed = Finding(**{**finding(1).__dict__, "client": client})
    plan = plan_window(hexed, ON, [], CAPABILITIES, NOW)
    assert isinstance(plan, WindowPlan)
    assert compile_pattern(plan.conf["client_instance_id"]).fullmatch("rSI6tEqbSsO7BEDZ9nqyzw")


@pytest.mark.parametrize(
    ("history", "guardrail"),
    [
        ([opened(1, minutes_ago=20)], "cooldown"),  # same client 20 min ago, cool-down 30
        ([opened(7, 1), opened(8, 2)], "max_open"),  # two others still open
        ([opened(7, 50, 1), opened(8, 40, 1), opened(9, 30, 1)], "max_per_hour"),  # closed, but 3 this hour
    ],
)
def test_guardrails_refuse(history: list[AutoWindow], guardrail: str) -> None:
    decision = plan_window(finding(1), ON, history, CAPABILITIES, NOW)
    assert isinstance(decision, Refusal) and decision.guardrail == guardrail, decision


def test_past_the_cooldown_and_the_hour_a_client_gets_a_window_again() -> None:
    history = [
        opened(1, minutes_ago=31, window_minutes=1),
        opened(7, 61, 1),
        opened(8, 62, 1),
        opened(9, 90, 1),
    ]
    assert isinstance(plan_window(finding(1), ON, history, CAPABILITIES, NOW), WindowPlan)


def test_resolved_or_clientless_findings_and_unknown_libraries_open_nothing() -> None:
    resolved = finding(1).resolved(NOW)
    broker = Finding(FindingKind.PLUGIN_ERRORS, Severity.WARNING, NOW, "plugin errors 3/s", broker_node_id=1)
    unknown = finding(1, library=("my-own-client", "0.1"))
    assert [plan_window(f, ON, [], CAPABILITIES, NOW).guardrail for f in (resolved, broker, unknown)] == [  # type: ignore[union-attr]
        "not_opened",
        "no_client",
        "capabilities",
    ]


def test_payload_size_is_checked_before_opening() -> None:
    huge = [Capability(*LIBRDKAFKA, f"org.apache.kafka.consumer.m{i}", 40.0, 1) for i in range(600)]
    decision = plan_window(finding(1), ON, [], huge, NOW)
    assert isinstance(decision, Refusal) and decision.guardrail == "payload_too_large"
    assert "telemetry.max.bytes=1048576" in decision.reason


def test_each_plan_counts_against_the_next_and_the_same_client_once() -> None:
    findings = [finding(1), finding(1, minutes_ago=1), finding(2), finding(3)]
    plans = plan_windows(findings, ON, [], CAPABILITIES, NOW)
    assert [w.record.client_instance_ids for w in plans.windows] == [(instance(1),), (instance(2),)]
    assert [r.guardrail for r in plans.refusals] == ["cooldown", "max_open"]


def test_a_retry_triggers_the_recorded_window_again_without_a_new_record() -> None:
    first = plan_windows([finding(1)], ON, [], CAPABILITIES, NOW)
    history = [first.windows[0].record]
    again = plan_windows([finding(1)], ON, history, CAPABILITIES, NOW + timedelta(seconds=30))
    assert [w.new for w in again.windows] == [False]
    assert again.windows[0].trigger_kwargs() == first.windows[0].trigger_kwargs()


def test_records_round_trip_through_the_live_store(tmp_path: object) -> None:
    store = LiveStore(tmp_path)  # type: ignore[arg-type]
    plans = plan_windows([finding(1), finding(2)], ON, [], CAPABILITIES, NOW)
    store.write_auto_windows([w.record for w in plans.windows])
    assert store.auto_windows() == [w.record for w in plans.windows]
    assert prune(store.auto_windows(), NOW + timedelta(days=8)) == []


def test_open_windows_records_each_new_window_once_and_counts_the_records(tmp_path: object) -> None:
    """What kip714_auto_window's task runs: the record is written before the trigger, and a second run
    (a retry, or the same finding again) records nothing new and is refused by the cool-down or replayed."""
    store = LiveStore(tmp_path)  # type: ignore[arg-type]
    first = open_windows(store, [finding(1), finding(2)], ON, CAPABILITIES, NOW)
    assert [w.new for w in first.windows] == [True, True]
    assert store.auto_windows() == [w.record for w in first.windows]
    again = open_windows(store, [finding(1), finding(3)], ON, CAPABILITIES, NOW + timedelta(minutes=1))
    assert [w.new for w in again.windows] == [False]  # finding 1's window, triggered again
    assert [r.guardrail for r in again.refusals] == ["max_open"]  # two are open already
    assert len(store.auto_windows()) == 2


def test_a_finding_whose_event_triggered_another_run_or_none_still_gets_its_window(tmp_path: object) -> None:
    """Seen on CI: one live cycle announced two findings, and the one run it triggered held only the first.
    The next run plans the recent events' opened findings that are still open, each once."""
    store = LiveStore(tmp_path)  # type: ignore[arg-type]
    first, second, gone = finding(1), finding(2), finding(3)
    open_windows(store, [first], ON, CAPABILITIES, NOW)
    recent = [first, second, gone, gone.resolved(NOW), second]
    chosen = findings_to_plan([], recent, {first.finding_id, second.finding_id})
    assert [f.finding_id for f in chosen] == [first.finding_id, second.finding_id]  # finding 3 ended
    later = open_windows(store, chosen, ON, CAPABILITIES, NOW + timedelta(minutes=5))
    assert [(w.finding.finding_id, w.new) for w in later.windows] == [
        (first.finding_id, False),  # its window again: the same run id, already triggered
        (second.finding_id, True),
    ]
    # the triggering findings come first and are planned even when the ledger does not list them (yet)
    assert findings_to_plan([gone], [first], {first.finding_id}) == [gone, first]
    # unless their end is among the recent events: the run was queued behind others, the episode is over
    assert findings_to_plan([gone], [gone, gone.resolved(NOW)], set()) == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"enabled": "yes"}', "kip714_auto_windows.enabled: must be true or false"),
        ('{"max_clients": 0}', "kip714_auto_windows.max_clients: must be a whole number 1..1000"),
        ('{"interval_ms": 10}', "kip714_auto_windows.interval_ms: must be a whole number 100..60000"),
        ('{"cool_down": 5}', "kip714_auto_windows.cool_down: is not a setting"),
        ("[1]", "kip714_auto_windows: must be a JSON object"),
    ],
)
def test_bad_settings_name_the_setting(body: str, message: str) -> None:
    with pytest.raises(AutoWindowConfigError) as failed:
        AutoWindowSettings.from_json(body)
    assert str(failed.value).startswith(message)


def test_settings_default_to_off() -> None:
    assert AutoWindowSettings.from_json(None).enabled is False
    assert AutoWindowSettings.from_json('{"enabled": true}').window_minutes == 10


def test_the_form_refuses_a_bad_opening_finding() -> None:
    with pytest.raises(SubscriptionValidationError) as failed:
        TroubleshootingRequest.from_params({"opened_by_finding": {"kind": "anomaly"}})
    assert failed.value.field == "opened_by_finding"


def test_each_window_keeps_live_modes_rows_of_its_finding_for_its_report(tmp_path: Path) -> None:
    """Planned from live mode's area, a window's finding keeps the live rows of its metric (every
    instance's: the report charts the client against its peers) under ``evidence/<finding id>``."""
    live = RunArea(tmp_path / "live")
    folder = live.analytics / "rollups" / "date=2026-12-06" / "hour=5"
    folder.mkdir(parents=True)
    metric = finding(1).metric_name
    pq.write_table(
        pa.table({"metric_name": [metric, metric, "other.metric"], "client_instance_id": ["a", "b", "a"]}),
        folder / "part-0.parquet",
    )
    plans = open_windows(LiveStore(tmp_path), [finding(1)], ON, CAPABILITIES, NOW, live)
    kept = evidence_area(live, plans.windows[0].finding.finding_id)
    table = pq.read_table(kept.analytics / "rollups")
    assert sorted(table["client_instance_id"].to_pylist()) == ["a", "b"]
    assert set(table["metric_name"].to_pylist()) == {metric}


def test_a_window_opens_even_when_its_evidence_cannot_be_kept_and_old_evidence_is_pruned(
    tmp_path: Path,
) -> None:
    """Keeping the evidence is best effort: a damaged live table costs the report its chart, not the
    window. Evidence of findings whose window records were pruned goes with them."""
    live = RunArea(tmp_path / "live")
    folder = live.analytics / "rollups" / "date=2026-12-06" / "hour=5"
    folder.mkdir(parents=True)
    (folder / "part-0.parquet").write_bytes(b"PAR1 not parquet at all")
    stale = live.root / "evidence" / "anomaly-from-a-pruned-window"
    stale.mkdir(parents=True)
    plans = open_windows(LiveStore(tmp_path), [finding(1)], ON, CAPABILITIES, NOW, live)
    assert [w.new for w in plans.windows] == [True]
    assert not stale.exists()
    assert not (evidence_area(live, finding(1).finding_id).analytics / "rollups").exists()
