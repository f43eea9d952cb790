"""Thresholds and anomalies on real Spark: a spike is found with its duration, clean series stay quiet."""

from __future__ import annotations

import json
from pathlib import Path

import anomalies
import pandas as pd
import pytest
import rollups

from tests.spark import scenarios

pytestmark = pytest.mark.spark
RULES = Path(__file__).resolve().parents[2] / "spark_apps" / "rules" / "default_rules.json"


@pytest.fixture(scope="module")
def anomaly_run(spark, tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("anomaly")
    scenario = scenarios.write_anomaly_scenario(str(root / "landing"))
    common = ["--input", str(root / "landing"), "--output", str(root / "out"), "--bucket", "1m"]
    for start, end in (("13:00", "14:00"), ("14:00", "15:00")):
        rollups.run([*common, "--start", f"2026-01-31T{start}:00Z", "--end", f"2026-01-31T{end}:00Z"], spark)
    summary = anomalies.run(
        [
            *common,
            *("--rules", str(RULES), "--history", "1h"),
            *("--start", "2026-01-31T14:00:00Z", "--end", "2026-01-31T15:00:00Z"),
        ],
        spark,
    )
    found = spark.read.parquet(str(root / "out" / "anomalies")).collect()
    thresholds = spark.read.parquet(str(root / "out" / "thresholds")).collect()
    return scenario, summary, found, thresholds


def test_injected_spike_breaks_the_kip_rule_for_exactly_its_duration(anomaly_run):
    scenario, _, found, _ = anomaly_run
    (static,) = [a for a in found if a["kind"] == "static"]
    assert static["rule_name"] == "producer-record-queue-time"
    assert static["client_instance_id"] == scenario.anomalous.instance_id
    assert static["client_id"] == "orders-producer"
    assert static["client_source_address"] == scenario.anomalous.source_address
    assert (static["client_software_name"], static["client_software_version"]) == (
        scenario.anomalous.software_name,
        scenario.anomalous.software_version,
    )
    assert static["breach_start"].replace(tzinfo=None) == scenario.breach_start.replace(tzinfo=None)
    assert static["breach_end"].replace(tzinfo=None) == scenario.breach_end.replace(tzinfo=None)
    assert static["duration_seconds"] == 300
    assert static["peak_value"] == scenario.spike_value
    assert static["excess"] == pytest.approx(scenario.spike_value - 5000)
    assert static["severity"] == "warning"  # 8000 is below the rule's critical 15000


def test_learned_baseline_flags_the_same_spike_and_nothing_else(anomaly_run):
    scenario, _, found, thresholds = anomaly_run
    baseline = [a for a in found if a["kind"] == "baseline"]
    assert len(baseline) == 1
    (spike,) = baseline
    assert spike["metric_name"] == "producer.record.queue.time.max"
    assert spike["client_instance_id"] == scenario.anomalous.instance_id
    assert spike["duration_seconds"] == 300
    assert spike["severity"] == "critical"
    learned = {(t["metric_name"], t["client_group"]): t for t in thresholds if t["kind"] == "baseline"}
    queue = learned[("producer.record.queue.time.max", "confluent-kafka-python|orders-producer")]
    assert 95 < queue["median"] < 105  # the spike does not drag the median
    assert queue["threshold"] < 5000


def test_clean_and_flat_series_raise_no_anomaly(anomaly_run):
    scenario, summary, found, thresholds = anomaly_run
    quiet = {scenario.clean.instance_id, scenario.java.instance_id}
    assert [a for a in found if a["client_instance_id"] in quiet] == []
    assert [a for a in found if a["metric_name"] == "producer.connection.creation.rate"] == []
    flat = [t for t in thresholds if t["metric_name"] == "producer.connection.creation.rate"]
    assert flat and all(t["mad"] == 0 and t["scale"] == pytest.approx(4.2) for t in flat)  # floor: 10% of 42
    assert summary.tables["anomalies"]["rows"] == 2


def test_thresholds_list_the_static_rules_with_their_duration(anomaly_run):
    _, _, _, thresholds = anomaly_run
    static = {t["rule_name"]: t for t in thresholds if t["kind"] == "static"}
    assert set(static) == {
        "producer-record-queue-time",
        "producer-broker-throttling",
        "producer-request-latency",
    }
    kip_rule = static["producer-record-queue-time"]
    assert (kip_rule["metric_name"], kip_rule["threshold"], kip_rule["min_duration_seconds"]) == (
        "producer.record.queue.time.max",
        5000.0,
        180,
    )


def test_anomalies_from_landing_need_no_rollups_table(spark, tmp_path):
    scenario = scenarios.write_anomaly_scenario(str(tmp_path / "landing"))
    anomalies.run(
        [
            *("--input", str(tmp_path / "landing"), "--output", str(tmp_path / "out")),
            *(
                "--start",
                "2026-01-31T14:15:00Z",
                "--end",
                "2026-01-31T14:35:00Z",
                "--rollups-source",
                "landing",
            ),
            *("--rules", str(RULES), "--history", "0s", "--no-baselines"),
        ],
        spark,
    )
    (found,) = spark.read.parquet(str(tmp_path / "out" / "anomalies")).collect()
    assert (found["client_instance_id"], found["duration_seconds"]) == (scenario.anomalous.instance_id, 300)


def test_every_static_rule_a_rollup_row_matches_judges_it(spark, tmp_path):
    scenario = scenarios.write_anomaly_scenario(str(tmp_path / "landing"))
    metric = "org.apache.kafka.producer.record.queue.time.max"
    rules = [
        {"name": "queue-any", "metric": metric, "field": "max", "comparison": ">", "threshold": 5000},
        {
            "name": "queue-orders",
            "metric": metric,
            "field": "avg",
            "comparison": ">",
            "threshold": 7000,
            "for_seconds": 60,
            "match": {"client_id": "orders-.*"},
        },
        {
            "name": "queue-nobody",
            "metric": metric,
            "field": "max",
            "comparison": ">",
            "threshold": 1,
            "match": {"client_id": "nobody"},
        },
    ]
    (tmp_path / "rules.json").write_text(json.dumps({"rules": rules}))
    anomalies.run(
        [
            *("--input", str(tmp_path / "landing"), "--output", str(tmp_path / "out")),
            *(
                "--start",
                "2026-01-31T14:00:00Z",
                "--end",
                "2026-01-31T15:00:00Z",
                "--rollups-source",
                "landing",
            ),
            *("--rules", str(tmp_path / "rules.json"), "--history", "0s", "--no-baselines"),
        ],
        spark,
    )
    found = spark.read.parquet(str(tmp_path / "out" / "anomalies")).collect()
    by_rule = {row["rule_name"]: row for row in found}
    assert set(by_rule) == {"queue-any", "queue-orders"}  # one rollup row, two rules; the third never matches
    assert {row["client_instance_id"] for row in found} == {scenario.anomalous.instance_id}
    assert (by_rule["queue-any"]["field"], by_rule["queue-orders"]["field"]) == ("max", "avg")
    assert by_rule["queue-orders"]["threshold"] == 7000
    assert by_rule["queue-any"]["duration_seconds"] == by_rule["queue-orders"]["duration_seconds"] == 300


def test_a_late_live_window_learns_own_baselines_from_the_hourly_tables_last_whole_hour(spark, tmp_path):
    """Live mode judges 14:51-15:00 with a one-hour history from the hourly table, which holds 13:00-14:00.

    Ending the history at the window's start left 9 of its buckets (13:51-13:59): a client group of one
    instance had fewer rows than a baseline needs (10), and the spike went unseen by own baselines.
    ``--history-end`` 14:00 learns from the whole hour.
    """
    spiking = scenarios.write_late_spike(tmp_path / "landing").spiking
    landing = ["--input", str(tmp_path / "landing"), "--bucket", "1m"]
    hourly = str(tmp_path / "hourly")
    rollups.run(
        [*landing, "--output", hourly, "--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T14:00:00Z"],
        spark,
    )
    window = ["--start", "2026-01-31T14:51:00Z", "--end", "2026-01-31T15:00:00Z"]

    def live_cycle(output: Path, *history_end: str) -> tuple[list, list]:  # type: ignore[type-arg]
        rollups.run([*landing, "--output", str(output), *window], spark)
        anomalies.run(
            [
                *landing,
                *("--output", str(output), *window, "--history", "1h", "--history-root", hourly),
                *("--baseline-for", "2m", "--peer-groups", "none", *history_end),
            ],
            spark,
        )
        tables = [output / name for name in ("thresholds", "anomalies")]
        learned, found = (spark.read.parquet(str(t)).collect() if t.exists() else [] for t in tables)
        return [t for t in learned if t["kind"] == "baseline"], [a for a in found if a["kind"] == "baseline"]

    assert live_cycle(tmp_path / "window-start") == ([], [])
    learned, found = live_cycle(tmp_path / "last-hour", "--history-end", "2026-01-31T14:00:00Z")
    assert {t["history_buckets"] for t in learned} == {60}
    assert [(a["client_instance_id"], a["breach_start"].minute) for a in found] == [(spiking.instance_id, 52)]

    # --baselines-cache: the next cycle with the same history reads what this one learned
    cache = tmp_path / "baselines"
    flags = ("--history-end", "2026-01-31T14:00:00Z", "--baselines-cache", str(cache))
    first, _ = live_cycle(tmp_path / "cached-1", *flags)
    (folder,) = cache.iterdir()
    stored = pd.read_parquet(folder)
    assert sorted(stored["median"]) == sorted(t["median"] for t in learned)
    assert set(stored["_learned_rows"]) == {2}

    def rewrite(frame: pd.DataFrame) -> None:
        for written in folder.iterdir():
            written.unlink()
        frame.to_parquet(folder / "part-00000.parquet", index=False)

    rewrite(stored.assign(median=12345.0))
    read_back, _ = live_cycle(tmp_path / "cached-2", *flags)
    assert {t["median"] for t in read_back} == {12345.0}  # read, not learned again
    rewrite(stored.head(1))  # a write a killed run cut short: 1 of its 2 rows
    relearned, _ = live_cycle(tmp_path / "cached-3", *flags)
    assert sorted(t["median"] for t in relearned) == sorted(t["median"] for t in first)
    assert len(pd.read_parquet(folder)) == 2  # and written whole again

    # a history too short to learn from: one marker row, read by the next cycle instead of learning again
    none = (*flags, "--min-history-buckets", "1000")
    assert live_cycle(tmp_path / "nothing-1", *none) == ([], [])
    (marker,) = [path for path in cache.iterdir() if path != folder]
    assert pd.read_parquet(marker)["_learned_rows"].tolist() == [0]
    (written,) = marker.glob("*.parquet")
    assert live_cycle(tmp_path / "nothing-2", *none) == ([], [])
    assert [path.name for path in marker.glob("*.parquet")] == [written.name]  # read, not written again
