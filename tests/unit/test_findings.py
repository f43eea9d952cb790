"""Findings: the asset event's extra round-trips, transitions open and resolve each episode once, and the
outbox announces each transition once through Airflow's own outlet accessor, whatever dies when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from airflow.sdk.definitions.asset import AssetAliasUniqueKey
from airflow.sdk.execution_time.context import OutletEventAccessor

from airflow_provider_kip714.findings.announce import FINDINGS_ALIAS_NAME, announce, announced_keys
from airflow_provider_kip714.findings.detect import current_findings, pushing_instances, transitions
from airflow_provider_kip714.findings.model import (
    Finding,
    FindingError,
    FindingKind,
    Severity,
    Transition,
)
from airflow_provider_kip714.findings.store import LiveStore
from airflow_provider_kip714.report.findings import finding_cards

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
SLOW = {
    "client_instance_id": "AAAAAAAAAAAAAAAAAAAAAQ",
    "client_instance_id_hex": "00000000-0000-0000-0000-000000000001",
    "client_id": "audit-slow<script>alert(1)</script>\r\nBcc: x@example.com",
    "client_software_name": "confluent-kafka-python",
    "client_software_version": "2.16.0",
    "client_source_address": "127.0.0.1",
    "principal": "User:ANONYMOUS",
}


def _anomaly_row(start: datetime) -> dict[str, object]:
    return {
        **SLOW,
        "kind": "baseline",
        "severity": "critical",
        "metric_name": "org.apache.kafka.consumer.poll.idle.ratio",
        "field": "avg",
        "attributes_key": "",
        "comparison": "below",
        "threshold": 0.8,
        "peak_value": 0.02,
        "duration_seconds": 40,
        "breach_start": pd.Timestamp(start),
        "baseline_kind": "peers",
        "peer_group": "group_id=audit",
    }


def _tables(*anomaly_starts: datetime, silent: bool = False, pushing: bool = True) -> dict[str, pd.DataFrame]:
    delivery = []
    if silent or pushing:
        delivery.append(
            {
                **SLOW,
                "status": "silent" if silent else "ok",
                "silent_since": pd.Timestamp(NOW - timedelta(minutes=1)) if silent else None,
                "last_push_time": pd.Timestamp(NOW - timedelta(minutes=1)),
                "expected_pushes": 12,
                "landed_pushes": 6,
                "hour_start": pd.Timestamp(NOW.replace(minute=0)),
            }
        )
    return {
        "anomalies": pd.DataFrame([_anomaly_row(start) for start in anomaly_starts]),
        "delivery": pd.DataFrame(delivery),
    }


def test_a_finding_round_trips_through_the_event_extra_and_bad_extras_name_the_field() -> None:
    (finding,) = current_findings(_tables(NOW - timedelta(minutes=2)))
    assert finding.kind is FindingKind.ANOMALY and finding.severity is Severity.CRITICAL
    assert finding.against == "peers" and finding.client.client_id == SLOW["client_id"]
    assert Finding.from_extra(finding.as_extra()) == finding
    broken = finding.as_extra()
    del broken["finding"]["since"]
    with pytest.raises(FindingError, match=r"extra\.finding\.since: is required"):
        Finding.from_extra(broken)
    forged = finding.as_extra()
    forged["finding"]["finding_id"] = "anomaly-0000000000000000"
    with pytest.raises(FindingError, match="finding_id"):
        Finding.from_extra(forged)
    with pytest.raises(FindingError, match=r"extra\.finding: must be an object"):
        Finding.from_extra({"finding": "<b>"})


def test_an_episode_opens_once_keeps_its_start_and_resolves_once(tmp_path: Path) -> None:
    store = LiveStore(tmp_path)
    first_seen = NOW - timedelta(minutes=2)
    for cycle, breach_start in enumerate([first_seen, first_seen + timedelta(seconds=50), NOW]):
        ledger = store.ledger()
        changed = transitions(ledger, current_findings(_tables(breach_start)), set(), NOW)
        for finding in changed:
            ledger.queue(finding, NOW)
        store.write_ledger(ledger)
        # the trailing window clips the breach's start later on: still the same episode, not a new one
        assert [f.transition for f in changed] == ([Transition.OPENED] if cycle == 0 else [])
    (still_open,) = store.open_findings()
    assert still_open.since == first_seen
    ledger = store.ledger()
    changed = transitions(ledger, current_findings(_tables()), set(), NOW + timedelta(minutes=1))
    assert [(f.transition, f.finding_id) for f in changed] == [(Transition.RESOLVED, still_open.finding_id)]
    assert changed[0].ended == NOW + timedelta(minutes=1)


def test_a_silent_client_resolves_only_when_seen_pushing_again(tmp_path: Path) -> None:
    store = LiveStore(tmp_path)
    ledger = store.ledger()
    (opened,) = transitions(ledger, current_findings(_tables(silent=True)), set(), NOW)
    assert opened.kind is FindingKind.SILENT_CLIENT and opened.severity is Severity.WARNING
    ledger.queue(opened, NOW)
    gone = _tables(pushing=False)  # the client left the trailing window: no evidence either way
    assert transitions(ledger, current_findings(gone), pushing_instances(gone), NOW) == []
    back = _tables(pushing=True)
    (resolved,) = transitions(ledger, current_findings(back), pushing_instances(back), NOW)
    assert resolved.transition is Transition.RESOLVED and resolved.finding_id == opened.finding_id


def _outlet() -> OutletEventAccessor:
    return OutletEventAccessor(key=AssetAliasUniqueKey(name=FINDINGS_ALIAS_NAME))


def test_each_transition_is_announced_once_across_crashes(tmp_path: Path) -> None:
    store = LiveStore(tmp_path)
    ledger = store.ledger()
    (finding,) = transitions(ledger, current_findings(_tables(NOW)), set(), NOW)
    ledger.queue(finding, NOW)
    store.write_ledger(ledger)

    # attempt 1 adds the event, then its process dies before the task succeeds: Airflow holds nothing
    crashed = _outlet()
    announce(store, crashed, already=set(), link=None)
    assert len(crashed.asset_alias_events) == 1
    # attempt 2: still queued, announced again (Airflow never registered attempt 1's event)
    retried = _outlet()
    (announced,) = announce(store, retried, already=set(), link="http://127.0.0.1:8080/kip714/")
    assert announced.finding_id == finding.finding_id and announced.link == "http://127.0.0.1:8080/kip714/"
    (event,) = retried.asset_alias_events
    assert event.dest_asset_key.name == "kip714_findings" and event.extra["finding"]["transition"] == "opened"
    # attempt 2 succeeded: Airflow now holds its event; the next run prunes it and announces nothing
    held = announced_keys([{"extra": event.extra}])
    later = _outlet()
    assert announce(store, later, already=held, link=None) == []
    assert later.asset_alias_events == [] and store.ledger().outbox == []


def test_a_delivery_row_without_an_instance_is_no_client_finding() -> None:
    """The broker's own delivery row (instances it knows that never pushed) has no instance id; pandas
    reads it as NaN, which must not become a client called "nan"."""
    broker_row = {
        **{name: float("nan") for name in SLOW},
        "status": "silent",
        "silent_since": pd.Timestamp(NOW),
        "hour_start": pd.Timestamp(NOW.replace(minute=0)),
        "unseen_instances": 2,
    }
    tables = {"delivery": pd.DataFrame([broker_row, {**_tables(silent=True)["delivery"].iloc[0].to_dict()}])}
    (finding,) = current_findings(tables)
    assert finding.client.client_id == SLOW["client_id"]


def test_the_report_and_live_mode_read_the_same_findings_from_the_same_tables() -> None:
    """One translation (``findings.from_tables``): the report's cards carry live mode's findings, with the
    same severity and words; the report adds the broker's own silence, which live mode does not alert on."""
    tables = _tables(NOW - timedelta(minutes=3), silent=True)
    hour = pd.Timestamp(NOW.replace(minute=0))
    throttled = {**SLOW, "client_instance_id": "THROTTLED", "status": "throttled", "hour_start": hour}
    broker_silence = {
        **{name: None for name in SLOW},
        "status": "silent",
        "silent_since": pd.Timestamp(NOW),
        "hour_start": hour,
        "broker_node_id": 2,
        "unseen_instances": 3,
    }
    tables["delivery"] = pd.concat(
        [tables["delivery"], pd.DataFrame([{**throttled, "throttled_pushes": 4.0}, broker_silence])]
    )
    tables["broker_client_metrics"] = pd.DataFrame(
        [
            {**SLOW, "client_instance_id": "THROTTLED", "high_throttle_ratio": True, "throttle_ratio": ratio,
             "bucket_start": hour + timedelta(minutes=minute), "broker_node_id": 1}
            for minute, ratio in ((50, 0.2), (51, 0.6))
        ]
    )  # fmt: skip
    tables["broker_metrics"] = pd.DataFrame(
        [
            {"broker_node_id": 1, "bucket_start": hour + timedelta(minutes=m), "plugin_errors": errors,
             "pushes_exported": 10.0, "plugin_failing": False}
            for m, errors in ((40, 0.0), (41, 1.0), (42, 2.0))
        ]
    )  # fmt: skip
    live = current_findings(tables)
    report = [card.finding for card in finding_cards(tables)]
    assert {f.kind for f in live} == set(FindingKind)
    by_key = {f.episode_key: f for f in report}
    for finding in live:
        shown = by_key.pop(finding.episode_key)
        assert (shown.severity, shown.summary, shown.since) == (
            finding.severity,
            finding.summary,
            finding.since,
        )
    (broker,) = by_key.values()  # the report's only extra: the broker's instances that never pushed
    assert broker.broker_node_id == 2 and broker.client.client_instance_id is None
    assert broker.summary == "3 instance(s) known to broker 2 not pushing"
    throttled_finding = next(f for f in live if f.kind is FindingKind.THROTTLED_CLIENT)
    # the delivery row (since the hour) and the broker's buckets are one episode; its worst ratio decides
    assert throttled_finding.since == hour.to_pydatetime()
    plugin = next(f for f in live if f.kind is FindingKind.PLUGIN_ERRORS)
    assert plugin.summary == "3 push(es) the plugin failed to export, 30 exported"
    assert plugin.since == (hour + timedelta(minutes=41)).to_pydatetime()
    assert plugin.severity is Severity.WARNING
