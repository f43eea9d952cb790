"""Subscription convergence on real Spark: per-client delays, 50/90/100 % times, matched clients only."""

from __future__ import annotations

import json

import convergence
import pytest
from kip714_common.errors import SparkAppInputError

from tests.spark.delivery_scenarios import STANDING, WINDOW_METRIC, write_convergence_scenario

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def convergence_run(spark, tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("convergence")
    scenario = write_convergence_scenario(str(root / "landing"))
    at = scenario.subscribed_at.isoformat()
    windows = [
        {
            "name": "orders-queue",
            "subscribed_at": at,
            "metrics": [WINDOW_METRIC],
            "match": {"client_id": "orders-.*"},
        },
        {"name": "everyone", "subscribed_at": at, "metrics": [STANDING[:30]], "match": {}},
    ]
    (root / "windows.json").write_text(json.dumps(windows))
    convergence.run(
        [
            *("--input", str(root / "landing"), "--output", str(root / "out")),
            *("--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T13:30:00Z"),
            *("--windows", str(root / "windows.json")),
        ],
        spark,
    )
    rows = [row.asDict() for row in spark.read.parquet(str(root / "out" / "convergence")).collect()]
    return scenario, rows


def test_each_matched_client_gets_its_delay_and_the_unreached_one_none(convergence_run):
    scenario, rows = convergence_run
    orders = {row["client_id"]: row for row in rows if row["subscription_name"] == "orders-queue"}
    assert {cid: row["delay_seconds"] for cid, row in orders.items()} == scenario.delays
    assert orders["orders-4"]["first_push_time"] is None
    assert all(row["client_instance_id"] and row["subscribed_at"] for row in orders.values())


def test_window_shares_are_null_until_reached(convergence_run):
    _, rows = convergence_run
    row = next(r for r in rows if r["subscription_name"] == "orders-queue")
    assert (row["matched_clients"], row["converged_clients"]) == (4, 3)
    assert row["p50_seconds"] == 25.0  # 2 of 4 clients had pushed 25 s after creation
    assert row["p90_seconds"] is None and row["p100_seconds"] is None  # orders-4 never did


def test_a_window_matching_everyone_converges_at_the_next_push(convergence_run):
    scenario, rows = convergence_run
    everyone = [r for r in rows if r["subscription_name"] == "everyone"]
    assert len(everyone) == 5 and scenario.outsider.client_id in {r["client_id"] for r in everyone}
    assert {r["delay_seconds"] for r in everyone} == {5.0}
    assert (everyone[0]["p50_seconds"], everyone[0]["p100_seconds"]) == (5.0, 5.0)


def test_a_window_with_an_unknown_selector_is_refused_before_spark_starts(tmp_path):
    bad = tmp_path / "windows.json"
    bad.write_text(
        json.dumps([{"name": "w", "subscribed_at": "2026-01-31T13:10:00Z", "match": {"group": "x"}}])
    )
    argv = [
        *("--input", str(tmp_path), "--output", str(tmp_path), "--windows", str(bad)),
        *("--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T13:30:00Z"),
    ]
    with pytest.raises(SparkAppInputError) as caught:
        convergence.run(argv)
    assert caught.value.field == "--windows[0].match.group"
