"""Rollups and anomalies on data landed from real clients (``data/demo_landing``, a trimmed demo window).

The fixture is what a ``kip714 demo`` troubleshooting window landed from real librdkafka 2.16 and Java
4.4 clients (see ``data/trim_demo_landing.py``): ``demo-audit-consumer-slow`` barely polls (poll idle
ratio ~0 where its peer ``demo-audit-consumer-1`` idles ~0.9), ``demo-payments-producer`` is throttled by
a quota, ``demo-java-producer`` is healthy. The runs mirror the troubleshooting DAG: rollups of the window
only, then anomalies with 1h of history, 10 s buckets, the default rules plus the form's poll-idle rule.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import anomalies
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
import rollups
from kip714_common.errors import SparkAppInputError

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parent / "data" / "demo_landing"
DEFAULT_RULES = Path(__file__).resolve().parents[2] / "spark_apps" / "rules" / "default_rules.json"
WINDOW = ("2026-11-22T08:19:40Z", "2026-11-22T08:22:20Z")
SLOW, PEER = "demo-audit-consumer-slow", "demo-audit-consumer-1"
JAVA, THROTTLED = "demo-java-producer", "demo-payments-producer"
POLL_IDLE_RULE = {
    "name": "audit-consumers-poll-idle",
    "description": "the form's threshold: poll idle ratio below 0.3 for more than 30 s",
    "metric": "org.apache.kafka.consumer.poll.idle.ratio.avg",
    "field": "signal",
    "comparison": "<",
    "threshold": 0.3,
    "critical_threshold": 0.05,
    "for_seconds": 30,
    "match": {"client_id": "demo-audit-consumer-.*"},
}


@pytest.fixture(scope="module")
def demo_run(spark, tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("demo")
    rules = json.loads(DEFAULT_RULES.read_text())
    rules["rules"].append(POLL_IDLE_RULE)
    (root / "rules.json").write_text(json.dumps(rules))
    common = [
        *("--input", str(FIXTURE), "--output", str(root / "out")),
        *("--start", WINDOW[0], "--end", WINDOW[1], "--bucket", "10s"),
    ]
    rollups.run(common, spark)
    anomalies.run(
        [
            *common,
            *("--rules", str(root / "rules.json"), "--history", "1h"),
            *("--min-history-buckets", "6", "--baseline-for", "30s"),
        ],
        spark,
    )
    return {
        table: [row.asDict() for row in spark.read.parquet(str(root / "out" / table)).collect()]
        for table in ("rollups", "thresholds", "anomalies")
    }


def test_slow_consumer_is_flagged_with_who_and_where(demo_run):
    (slow,) = [a for a in demo_run["anomalies"] if a["client_id"] == SLOW]
    assert (slow["rule_name"], slow["metric_name"], slow["severity"]) == (
        "audit-consumers-poll-idle",
        "consumer.poll.idle.ratio.avg",
        "critical",
    )
    assert slow["peak_value"] < 0.05
    # the whole window: judged on the window's own rollups table, which holds nothing before it
    assert slow["duration_seconds"] == 160
    assert slow["client_instance_id"] and slow["client_instance_id_hex"]
    assert slow["client_source_address"] == "127.0.0.1"
    assert (slow["client_software_name"], slow["client_software_version"]) == (
        "confluent-kafka-python",
        "2.16.1-rdkafka-2.16.0",
    )


def test_throttled_producer_is_flagged_through_the_dips_between_bursts(demo_run):
    (throttled,) = [a for a in demo_run["anomalies"] if a["client_id"] == THROTTLED]
    assert throttled["rule_name"] == "producer-broker-throttling"
    assert throttled["duration_seconds"] > 120
    assert throttled["breached_buckets"] < throttled["duration_seconds"] // 10  # it did dip below 1000 ms
    assert throttled["peak_value"] > 4000


def test_healthy_peer_and_java_producer_raise_nothing(demo_run):
    flagged = {a["client_id"] for a in demo_run["anomalies"]}
    assert flagged == {SLOW, THROTTLED}
    baselined = {t["client_group"].split("|")[1] for t in demo_run["thresholds"] if t["kind"] == "baseline"}
    assert {PEER, JAVA} <= baselined  # they had baselines to breach, and did not


def test_java_baselines_are_per_node_and_learned_before_the_window(demo_run):
    rate = {
        t["attributes_key"]: t
        for t in demo_run["thresholds"]
        if t["kind"] == "baseline"
        and t["metric_name"] == "producer.node.request.rate"
        and t["client_group"].endswith(JAVA)
    }
    assert set(rate) == {'{"node_id":"-1"}', '{"node_id":"1"}'}
    # the busy node's normal level is far above the idle node's threshold: pooled, it breached for ever
    assert rate['{"node_id":"1"}']["median"] > 4 * rate['{"node_id":"-1"}']["threshold"]
    window_start = min(r["bucket_start"] for r in demo_run["rollups"])
    assert all(t["history_start"] < window_start for t in rate.values())
    assert window_start.strftime("%H:%M:%S") == "08:19:40"  # the rollups table holds only the window


def test_java_nan_maxima_stay_in_rollups_but_breach_nothing(demo_run):
    idle_node = [
        r
        for r in demo_run["rollups"]
        if r["client_id"] == JAVA
        and r["metric_name"] == "producer.node.request.latency.max"
        and r["attributes_key"] == '{"node_id":"-1"}'
    ]
    assert idle_node and any(math.isnan(r["signal"]) for r in idle_node)
    assert all(not math.isnan(a["peak_value"]) for a in demo_run["anomalies"])


def test_java_and_librdkafka_node_labels_share_one_key(demo_run):
    latency_max = pc.ends_with(pc.field("metric_name"), "request.latency.max")
    landed = ds.dataset(FIXTURE / "datapoints", format="parquet").to_table(
        columns=["client_id", "attributes"], filter=latency_max
    )
    raw = {(row["client_id"], tuple(sorted(row["attributes"]))) for row in landed.to_pylist()}
    assert (JAVA, (("node_id", "node-1"),)) in raw
    assert (PEER, (("node.id", "1"),)) in raw
    keys = {
        r["client_id"]: r["attributes_key"]
        for r in demo_run["rollups"]
        if r["metric_name"].endswith("node.request.latency.max") and r["attributes"].get("node_id") == "1"
    }
    assert keys[JAVA] == keys[PEER] == '{"node_id":"1"}'


def test_negative_breach_gap_is_refused_before_spark_starts():
    argv = [
        *("--input", str(FIXTURE), "--output", "/unused", "--start", WINDOW[0], "--end", WINDOW[1]),
        *("--max-gap-buckets", "-1"),
    ]
    with pytest.raises(SparkAppInputError) as caught:
        anomalies.run(argv)
    assert (caught.value.field, caught.value.rule) == ("--max-gap-buckets", "must be >= 0")


@pytest.mark.parametrize(
    ("flags", "field", "rule"),
    [
        (("--max-gap-buckets", "99999999999"), "--max-gap-buckets", "must be at most 1440"),
        (("--baseline-for", "99999999999d"), "--baseline-for", "must be at most 30d"),
        (("--rules", "huge"), "rules[0].for_seconds", "must be at most 2592000 seconds (30 days)"),
    ],
)
def test_durations_that_would_read_back_years_are_refused_before_spark_starts(tmp_path, flags, field, rule):
    """Each run reads the breach context (longest rule duration + bridged gaps) before --start: a huge
    duration would read years back or overflow the date; it is refused in one line instead."""
    if flags[1] == "huge":
        rules = {"rules": [{**POLL_IDLE_RULE, "for_seconds": 10**20}]}
        (tmp_path / "rules.json").write_text(json.dumps(rules))
        flags = ("--rules", str(tmp_path / "rules.json"))
    argv = [
        *("--input", str(FIXTURE), "--output", "/unused", "--start", WINDOW[0], "--end", WINDOW[1]),
        *flags,
    ]
    with pytest.raises(SparkAppInputError) as caught:
        anomalies.run(argv)
    assert (caught.value.field, caught.value.rule) == (field, rule)
