"""Peer baselines on real Spark: a consumer slower than the rest of its group, own baselines kept apart."""

from __future__ import annotations

from datetime import UTC, datetime

import anomalies
import pytest
from kip714_common.errors import SparkAppInputError

from tests.spark import scenarios
from tests.spark.delivery_scenarios import write_peer_scenario

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def peer_run(spark, tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("peers")
    own = scenarios.write_anomaly_scenario(str(root / "landing"))
    peers = write_peer_scenario(str(root / "landing"))
    anomalies.run(
        [
            *("--input", str(root / "landing"), "--output", str(root / "out"), "--bucket", "1m"),
            *("--start", "2026-01-31T14:00:00Z", "--end", "2026-01-31T15:00:00Z"),
            *("--rollups-source", "landing", "--history", "1h"),
        ],
        spark,
    )
    found = [row.asDict() for row in spark.read.parquet(str(root / "out" / "anomalies")).collect()]
    return own, peers, found


def test_the_slow_consumer_is_flagged_against_its_group(peer_run):
    _, scenario, found = peer_run
    from_peers = [a for a in found if a["baseline_kind"] == "peers"]
    assert {(a["client_id"], a["peer_group"]) for a in from_peers} == {
        (scenario.slow.client_id, "group_id=audit")
    }
    (slow,) = from_peers
    assert slow["rule_name"] == "peers:consumer.poll.idle.ratio.avg" and slow["field"] == "peer_deviation"
    # slow all along: the breach reaches back into the context before --start (the longest duration a
    # rule asks for, --baseline-for 60 s, plus one bridged gap and one bucket of 60 s: 180 s)
    assert slow["breach_end"].replace(tzinfo=UTC) == datetime(2026, 1, 31, 15, tzinfo=UTC)
    assert slow["breach_start"].replace(tzinfo=UTC) == datetime(2026, 1, 31, 13, 57, tzinfo=UTC)
    assert slow["duration_seconds"] == 3600 + 180 and slow["severity"] == "critical"
    assert slow["peak_value"] > 8  # ~0.88 below the peers' median, in units of the 0.09 floor
    assert slow["client_instance_id"] == scenario.slow.instance_id


def test_own_baseline_anomalies_say_own_and_have_no_peer_group(peer_run):
    own, _, found = peer_run
    mine = [a for a in found if a["baseline_kind"] == "own"]
    assert {a["client_id"] for a in mine} == {own.anomalous.client_id}
    assert all(a["peer_group"] is None for a in mine)
    assert {a["baseline_kind"] for a in found} == {"own", "peers"}


def test_peer_groups_are_checked_before_spark_starts(tmp_path):
    argv = [
        *("--input", str(tmp_path), "--output", str(tmp_path), "--peer-groups", "group_id,team"),
        *("--start", "2026-01-31T14:00:00Z", "--end", "2026-01-31T15:00:00Z"),
    ]
    with pytest.raises(SparkAppInputError) as caught:
        anomalies.run(argv)
    assert caught.value.field == "--peer-groups"
