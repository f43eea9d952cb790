"""Broker health on real Spark: exports, throttle and error ratios, restart resets, flags."""

from __future__ import annotations

import broker_metrics
import pytest

from tests.spark import scenarios

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def broker_run(spark, tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("brokers")
    scenario = scenarios.write_broker_scenario(str(root / "landing"))
    broker_metrics.run(
        [
            *("--input", str(root / "landing"), "--output", str(root / "out"), "--bucket", "5m"),
            *("--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T14:00:00Z"),
        ],
        spark,
    )
    brokers = spark.read.parquet(str(root / "out" / "broker_metrics")).orderBy("bucket_start").collect()
    clients = spark.read.parquet(str(root / "out" / "broker_client_metrics")).collect()
    return scenario, brokers, clients


def test_per_broker_counts_and_ratios(broker_run):
    _, brokers, _ = broker_run
    first = [b for b in brokers if b["broker_node_id"] == 1]
    second = [b for b in brokers if b["broker_node_id"] == 2]
    assert len(first) == len(second) == 12
    for window in first:
        assert window["pushes_exported"] == 60  # 2 clients x 30 pushes per 5 min
        assert window["throttled_pushes"] == 90
        assert window["throttle_ratio"] == pytest.approx(0.6)
        assert window["unknown_subscription_requests"] == 30
        assert window["plugin_errors"] == 0 and window["plugin_failing"] is False
        assert window["instance_count"] == 2
        assert window["export_time_avg_ms"] == pytest.approx(3.0)
        assert window["export_time_p99_ms"] == pytest.approx(1 + 4 * 0.99)
        assert window["throttled_clients"] == 1
    for window in second:
        assert (window["pushes_exported"], window["plugin_errors"]) == (30, 30)
        assert window["plugin_error_ratio"] == pytest.approx(0.5)
        assert window["plugin_failing"] is True
        assert window["cluster_id"] == "cluster-a"


def test_broker_restart_resets_counters_without_negative_steps(broker_run):
    scenario, brokers, _ = broker_run
    restart_window = [b for b in brokers if b["broker_node_id"] == 1 and b["bucket_start"].minute == 30]
    (window,) = restart_window
    assert window["counter_resets"] == 6  # unknown-subscription, 3 client counters, 2 export-time histograms
    assert window["pushes_exported"] == 60
    assert min(b["pushes_exported"] for b in brokers) >= 0
    assert scenario.restart_at.minute == 30


def test_clients_with_high_throttle_ratio_are_flagged_with_their_labels(broker_run):
    scenario, _, clients = broker_run
    flagged = {
        (c["client_instance_id"], c["client_id"], c["client_source_address"])
        for c in clients
        if c["high_throttle_ratio"]
    }
    throttled = scenario.throttled_client
    assert flagged == {(throttled.instance_id, throttled.client_id, throttled.source_address)}
    ratios = [c["throttle_ratio"] for c in clients if c["client_instance_id"] == throttled.instance_id]
    assert ratios == pytest.approx([0.75] * 12)  # 3 throttled of 4 attempts per push, every 5-minute window


# export_time_max_ms is the histogram's own maximum, not the maximum of its rows' mean ``value``.
EXPORT_CASES = {  # broker -> (histogram ``max`` field, bucket counts per push, expected maximum)
    1: (4.2, [9, 1, 0, 0], 4.2),  # the field, when the point has one
    2: (None, [9, 1, 0, 0], 5.0),  # no field: upper bound of the top non-empty bucket (1, 5]
    3: (None, [1, 0, 0, 1], 10.0),  # top bucket is the overflow one: its lower bound
}


def _export_time_rows() -> list[dict[str, object]]:
    start, end = scenarios.DAY.replace(hour=13), scenarios.DAY.replace(hour=13, minute=10)
    rows: list[dict[str, object]] = []
    for broker, (maximum, per_push, _) in EXPORT_CASES.items():
        client = scenarios.make_client(70 + broker)
        for moment_ns in scenarios.push_times(start, end).tolist():
            pushes = (moment_ns - scenarios.ns(start)) // (scenarios.PUSH_SECONDS * scenarios.NANOS) + 1
            counts = [c * pushes for c in per_push]
            total = 0.5 * counts[0] + 4.2 * counts[1] + 12.0 * counts[3]
            rows.append(
                {
                    "record_type": "broker",
                    "node_id": broker,
                    "cluster_id": "cluster-x",
                    "resource_attributes": {"node_id": str(broker), "cluster_id": "cluster-x"},
                    "time": moment_ns,
                    "start_time": scenarios.ns(start),
                    "metric_name": "kafka.server.client_metrics.plugin_export.time",
                    "metric_type": "histogram",
                    "temporality": "cumulative",
                    "attributes": {"client_instance_id": client.instance_id},
                    "count": sum(counts),
                    "sum": total,
                    "value": total / sum(counts),  # what the decoder puts in ``value``: the mean
                    "min": 0.5,
                    "max": maximum,
                    "bucket_counts": counts,
                    "explicit_bounds": [1.0, 5.0, 10.0],
                }
            )
    return rows


def test_export_time_max_is_the_histograms_maximum_not_its_mean(spark, tmp_path):  # type: ignore[no-untyped-def]
    landing, out = tmp_path / "landing", tmp_path / "out"
    scenarios.LandingWriter(landing).write(scenarios.rows_table(_export_time_rows()))
    broker_metrics.run(
        [
            *("--input", str(landing), "--output", str(out), "--bucket", "5m"),
            *("--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T13:10:00Z"),
        ],
        spark,
    )
    brokers = spark.read.parquet(str(out / "broker_metrics")).collect()
    clients = spark.read.parquet(str(out / "broker_client_metrics")).collect()
    assert len(brokers) == len(clients) == 6  # 3 brokers x 2 five-minute buckets
    for rows in (brokers, clients):
        for row in rows:
            expected = EXPORT_CASES[row["broker_node_id"]][2]
            assert row["export_time_max_ms"] == pytest.approx(expected), row
            assert row["export_time_avg_ms"] < expected


def test_plugin_failing_needs_an_error_ratio_above_the_flag(spark, broker_run, tmp_path):  # type: ignore[no-untyped-def]
    """Broker 2 fails one export in two: failing at the default (0.1), only counted at 0.6."""
    root = tmp_path
    scenarios.write_broker_scenario(str(root / "landing"))
    broker_metrics.run(
        [
            *("--input", str(root / "landing"), "--output", str(root / "out"), "--bucket", "1h"),
            *("--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T14:00:00Z"),
            *("--plugin-error-ratio", "0.6"),
        ],
        spark,
    )
    (second,) = spark.read.parquet(str(root / "out" / "broker_metrics")).where("broker_node_id = 2").collect()
    assert second["plugin_error_ratio"] == pytest.approx(0.5) and second["plugin_errors"] == 360
    assert second["plugin_failing"] is False
    _, brokers, _ = broker_run
    assert all(b["plugin_failing"] for b in brokers if b["broker_node_id"] == 2)
