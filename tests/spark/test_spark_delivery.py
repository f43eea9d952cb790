"""Delivery health on real Spark: silent, closed, gappy and throttled clients; instances that never pushed."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

import delivery
import pytest
from pyspark.sql import Row

from tests.spark.delivery_scenarios import write_delivery_scenario

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def delivery_run(spark, tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("delivery")
    scenario = write_delivery_scenario(str(root / "landing"))
    summary = delivery.run(
        [
            *("--input", str(root / "landing"), "--output", str(root / "out")),
            *("--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T15:00:00Z"),
        ],
        spark,
    )
    rows = spark.read.parquet(str(root / "out" / "delivery")).collect()
    return scenario, summary, rows


def _of(rows, client):  # type: ignore[no-untyped-def]
    return {row["hour_start"].hour: row for row in rows if row["client_instance_id"] == client.instance_id}


def _assert_silent_since(hours: Mapping[int, Row], last_push: datetime) -> None:
    """Both hours of the run are ``silent`` since the client's last push (Spark gives naive UTC)."""
    for hour in (13, 14):
        assert hours[hour]["status"] == "silent"
        assert hours[hour]["silent_since"].replace(tzinfo=last_push.tzinfo) == last_push


def test_steady_client_is_ok_with_every_push_expected_and_landed(delivery_run):
    scenario, _, rows = delivery_run
    hours = _of(rows, scenario.steady)
    assert sorted(hours) == [13, 14]
    for row in hours.values():
        assert (row["status"], row["expected_pushes"], row["landed_pushes"]) == ("ok", 360, 360)
        assert row["silent_since"] is None and row["terminated"] is False and row["reason"] is None
        assert row["push_interval_seconds"] == 10.0
        assert row["client_id"] == scenario.steady.client_id


def test_killed_client_is_silent_since_its_last_push(delivery_run):
    scenario, summary, rows = delivery_run
    hours = _of(rows, scenario.killed)
    _assert_silent_since(hours, scenario.killed_at - timedelta(seconds=5))
    for hour in (13, 14):
        assert "no terminating push" in hours[hour]["reason"]
    assert hours[13]["landed_pushes"] == 120 and hours[13]["expected_pushes"] == 360
    assert (hours[14]["landed_pushes"], hours[14]["expected_pushes"]) == (0, 360)
    assert hours[13]["client_software_name"] == scenario.killed.software_name
    # the killed client, the killed Java consumer and the broker's unseen instances
    assert summary.notes["silent"] == 3


def test_closed_client_is_ok_and_expected_only_until_its_terminating_push(delivery_run):
    scenario, _, rows = delivery_run
    hours = _of(rows, scenario.closed)
    assert sorted(hours) == [13]  # no expectation after the client closed
    row = hours[13]
    assert row["terminated"] is True and row["status"] == "ok"
    assert row["landed_pushes"] == 181 and row["expected_pushes"] == 181  # 180 + its terminating push


def test_a_java_client_whose_pushes_stop_has_ended_not_gone_silent(delivery_run):
    """The Java client sends no terminating push even when closed cleanly: its stop is an end."""
    scenario, _, rows = delivery_run
    hours = _of(rows, scenario.java_stopped)
    assert sorted(hours) == [13]  # expected no further after its last push
    row = hours[13]
    assert row["status"] == "ok" and row["silent_since"] is None
    assert row["landed_pushes"] == row["expected_pushes"] == 150
    last_push = scenario.java_stopped_at - timedelta(seconds=5)
    assert row["reason"].startswith(f"ended at {last_push:%Y-%m-%dT%H:%M:%SZ}")


def test_a_killed_java_consumer_is_silent(delivery_run):
    """The Java consumer sends its terminating push on close (the compatibility matrix): without one, its
    stop is a silence, as for librdkafka."""
    scenario, _, rows = delivery_run
    hours = _of(rows, scenario.java_consumer_killed)
    _assert_silent_since(hours, scenario.java_stopped_at - timedelta(seconds=5))


def test_gap_is_flagged_in_its_hour_only(delivery_run):
    scenario, _, rows = delivery_run
    hours = _of(rows, scenario.gappy)
    assert hours[13]["status"] == "gaps" and hours[14]["status"] == "ok"
    assert hours[13]["max_gap_seconds"] == pytest.approx(130.0)
    assert hours[13]["expected_pushes"] - hours[13]["landed_pushes"] == 12
    assert "longest gap 130.0 s for a 10.0 s interval" in hours[13]["reason"]


def test_broker_throttles_mark_the_client_throttled(delivery_run):
    scenario, _, rows = delivery_run
    hours = _of(rows, scenario.throttled)
    assert hours[13]["status"] == "throttled" and hours[13]["throttled_pushes"] == 2
    assert "2 pushes throttled by the broker" in hours[13]["reason"]
    assert hours[14]["status"] == "ok" and hours[14]["throttled_pushes"] == 0


def test_a_client_pushing_more_slowly_is_not_silent_until_it_misses_its_own_cadence(delivery_run):
    """Throttled clients push less often (the demo's payments producer: every ~16 s for a 5 s interval);
    35 s after its last push, with 40 s between its recent pushes, it is late by the interval only."""
    scenario, _, rows = delivery_run
    hours = _of(rows, scenario.slowed)
    assert hours[14]["status"] == "gaps" and hours[14]["silent_since"] is None
    assert hours[14]["max_gap_seconds"] == pytest.approx(40.0)
    assert hours[13]["status"] == "ok"


def test_a_window_that_changes_the_cadence_mid_hour_is_no_gap(delivery_run):
    """A 1 s window opens at 14:30 on a client pushing every 10 s: each gap is judged at its own cadence,
    and the pause of the re-subscription (the push refused under the old subscription, seen as the
    interval header's change) is no gap. Before, the whole hour was judged at the last push's 1 s and the
    11 s switch read as a lost push. Pushes lost at the switch still make a gap."""
    scenario, _, rows = delivery_run
    hours = _of(rows, scenario.resubscribed)
    assert hours[13]["status"] == "ok" and hours[14]["status"] == "ok", hours
    assert hours[14]["push_interval_seconds"] == 1.0
    assert hours[14]["max_gap_seconds"] == pytest.approx(11.0)
    lost = _of(rows, scenario.lost_at_resubscription)
    assert lost[13]["status"] == "ok" and lost[14]["status"] == "gaps"
    assert lost[14]["max_gap_seconds"] == pytest.approx(20.0)
    assert "longest gap 10.0 s for a 1.0 s interval" in lost[14]["reason"]


def test_instances_the_broker_knew_but_never_saw_push(delivery_run):
    scenario, _, rows = delivery_run
    unseen = {row["hour_start"].hour: row for row in rows if row["client_instance_id"] is None}
    assert sorted(unseen) == [13, 14]
    first = unseen[13]
    assert (first["unseen_instances"], first["status"], first["broker_node_id"]) == (1, "silent", 1)
    assert first["silent_since"].replace(tzinfo=scenario.start.tzinfo) == scenario.unseen_from
    assert "knew 11 client-metrics instances, 10 pushed" in first["reason"]
    assert unseen[14]["unseen_instances"] == 1


def test_an_interval_that_ends_after_the_data_judges_silence_at_the_newest_landed_record(
    spark, tmp_path_factory
):  # type: ignore[no-untyped-def]
    """An hourly run for the hour in progress (or a window whose subscription just ended) must not call
    every client silent for the pushes that have not happened yet: the horizon is the newest landed
    record, not the interval's end."""
    root = tmp_path_factory.mktemp("delivery-horizon")
    scenario = write_delivery_scenario(str(root / "landing"))
    delivery.run(
        [
            *("--input", str(root / "landing"), "--output", str(root / "out")),
            *("--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T16:00:00Z"),  # one hour past the data
        ],
        spark,
    )
    rows = spark.read.parquet(str(root / "out" / "delivery")).collect()
    steady = _of(rows, scenario.steady)
    assert steady and {row["status"] for row in steady.values()} == {"ok"}, steady
    assert {row["status"] for row in _of(rows, scenario.killed).values()} == {"silent"}
