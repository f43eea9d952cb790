"""The troubleshooting report on a small generated analytics zone (pyarrow-written, no Spark)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_kip714.report import build_report, report_url_path
from airflow_provider_kip714.report.builder import PLOTS_DIR
from airflow_provider_kip714.storage.data_root import RunArea, troubleshoot_area
from spark_apps.kip714_common.landing_contract import CLIENT_IDENTITY_COLUMNS

START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
BUCKETS = 12
BUCKET_S = 10
MAP = pa.map_(pa.string(), pa.string())

CLIENTS = {
    "slow-consumer": {
        "client_instance_id": "AAAAAAAAAAAAAAAAAAAAAA",
        "client_instance_id_hex": "00000000-0000-0000-0000-000000000000",
        "client_id": "slow-consumer",
        "client_software_name": "confluent-kafka-python",
        "client_software_version": "2.16.0",
        "client_source_address": "127.0.0.7",
        "principal": "User:ANONYMOUS",
    },
    "steady-producer": {
        "client_instance_id": "BBBBBBBBBBBBBBBBBBBBBB",
        "client_instance_id_hex": "11111111-1111-1111-1111-111111111111",
        "client_id": "steady-producer",
        "client_software_name": "apache-kafka-java",
        "client_software_version": "4.4.0",
        "client_source_address": "127.0.0.8",
        "principal": "User:alice",
    },
}
FETCH = "consumer.fetch.manager.fetch.latency.avg"
QUEUE = "producer.record.queue.time.max"


def write_partitioned(root: Path, table: str, rows: list[dict], schema: pa.Schema) -> None:
    by_hour: dict[tuple[str, int], list[dict]] = {}
    for row in rows:
        stamp = row.get("bucket_start") or row.get("breach_start") or row["interval_start"]
        by_hour.setdefault((f"{stamp:%Y-%m-%d}", stamp.hour), []).append(row)
    for (date, hour), part in by_hour.items():
        folder = root / table / f"date={date}" / f"hour={hour}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(part, schema=schema), folder / "part-00000.parquet")
        (folder.parent.parent / "_SUCCESS").write_text("")


def rollup_schema() -> pa.Schema:
    strings = [
        "record_type",
        *CLIENT_IDENTITY_COLUMNS,
        "metric_name",
        "metric_unit",
        "attributes_key",
    ]
    return pa.schema(
        [("bucket_start", pa.timestamp("us", tz="UTC")), ("bucket_seconds", pa.int32())]
        + [(name, pa.string()) for name in strings]
        + [("attributes", MAP), ("signal", pa.float64()), ("max", pa.float64()), ("avg", pa.float64())]
    )


def make_zone(root: Path, *, with_anomaly: bool = True, with_brokers: bool = True) -> RunArea:
    zone = RunArea(root)
    rollups = []
    for index in range(BUCKETS):
        bucket = START + timedelta(seconds=BUCKET_S * index)
        latency = 900.0 if with_anomaly and index >= 8 else 20.0 + index % 3
        for node in ("1", "2"):
            rollups.append(
                {
                    **CLIENTS["slow-consumer"],
                    "bucket_start": bucket,
                    "bucket_seconds": BUCKET_S,
                    "record_type": "client",
                    "metric_name": FETCH,
                    "metric_unit": "ms",
                    "attributes": [("node_id", node)],
                    "attributes_key": f"node_id={node}",
                    "signal": latency,
                    "max": latency * 1.5,
                    "avg": latency,
                }
            )
        rollups.append(
            {
                **CLIENTS["steady-producer"],
                "bucket_start": bucket,
                "bucket_seconds": BUCKET_S,
                "record_type": "client",
                "metric_name": QUEUE,
                "metric_unit": "ms",
                "attributes": [],
                "attributes_key": "",
                "signal": 4.0,
                "max": 5.0,
                "avg": 4.0,
            }
        )
    write_partitioned(zone.analytics, "rollups", rollups, rollup_schema())

    threshold_schema = pa.schema(
        [
            ("kind", pa.string()),
            ("rule_name", pa.string()),
            ("metric_name", pa.string()),
            ("field", pa.string()),
            ("client_group", pa.string()),
            ("comparison", pa.string()),
            ("threshold", pa.float64()),
            ("critical_threshold", pa.float64()),
            ("interval_start", pa.timestamp("us", tz="UTC")),
        ]
    )
    thresholds = [
        {
            "kind": "static",
            "rule_name": "fetch-latency",
            "metric_name": FETCH,
            "field": "signal",
            "client_group": "client_id~slow-.*",
            "comparison": ">",
            "threshold": 500.0,
            "critical_threshold": 800.0,
            "interval_start": START,
        },
        {
            "kind": "static",
            "rule_name": "queue-time",
            "metric_name": QUEUE,
            "field": "max",
            "comparison": ">",
            "client_group": "*",
            "threshold": 5000.0,
            "critical_threshold": None,
            "interval_start": START,
        },
        {
            "kind": "static",
            "rule_name": "other-clients-only",
            "metric_name": FETCH,
            "field": "signal",
            "comparison": ">",
            "client_group": "client_id~nobody",
            "threshold": 123456.0,
            "critical_threshold": None,
            "interval_start": START,
        },
    ]
    write_partitioned(zone.analytics, "thresholds", thresholds, threshold_schema)

    if with_anomaly:
        anomaly_schema = pa.schema(
            [(name, pa.string()) for name in ("kind", "rule_name", "severity", "metric_name", "field")]
            + [("attributes_key", pa.string())]
            + [(name, pa.string()) for name in CLIENTS["slow-consumer"]]
            + [
                ("comparison", pa.string()),
                ("threshold", pa.float64()),
                ("peak_value", pa.float64()),
                ("excess_ratio", pa.float64()),
                ("breach_start", pa.timestamp("us", tz="UTC")),
                ("breach_end", pa.timestamp("us", tz="UTC")),
                ("duration_seconds", pa.int64()),
            ]
        )
        anomaly = {
            "kind": "static",
            "rule_name": "fetch-latency",
            "severity": "critical",
            "metric_name": FETCH,
            "field": "signal",
            "attributes_key": "node_id=1",
            **CLIENTS["slow-consumer"],
            "comparison": ">",
            "threshold": 500.0,
            "peak_value": 900.0,
            "excess_ratio": 0.8,
            "breach_start": START + timedelta(seconds=80),
            "breach_end": START + timedelta(seconds=120),
            "duration_seconds": 40,
        }
        write_partitioned(zone.analytics, "anomalies", [anomaly], anomaly_schema)

    if with_brokers:
        broker_schema = pa.schema(
            [
                ("bucket_start", pa.timestamp("us", tz="UTC")),
                ("cluster_id", pa.string()),
                ("broker_node_id", pa.int32()),
                *[
                    (name, pa.float64())
                    for name in (
                        "instance_count_max",
                        "pushes_exported",
                        "throttled_pushes",
                        "unknown_subscription_requests",
                        "plugin_errors",
                        "export_time_avg_ms",
                        "export_time_max_ms",
                        "export_time_p99_ms",
                    )
                ],
                ("counter_resets", pa.int32()),
                ("plugin_failing", pa.bool_()),
            ]
        )
        brokers = [
            {
                "bucket_start": START + timedelta(seconds=BUCKET_S * i),
                "cluster_id": "local-cluster",
                "broker_node_id": 1,
                "instance_count_max": 2.0,
                "pushes_exported": 6.0,
                "throttled_pushes": 2.0 if i == 3 else 0.0,
                "unknown_subscription_requests": 0.0,
                "plugin_errors": 0.0,
                "export_time_avg_ms": 0.4,
                "export_time_max_ms": 1.2,
                "export_time_p99_ms": 1.1,
                "counter_resets": 0,
                "plugin_failing": False,
            }
            for i in range(BUCKETS)
        ]
        write_partitioned(zone.analytics, "broker_metrics", brokers, broker_schema)
    return zone


def anomaly_rows(text: str) -> list[str]:
    section = text.split("<h2>Anomalies</h2>", 1)[1].split("<h2>Clients</h2>", 1)[0]
    return re.findall(r"<tr class=\"[^\"]*\">.*?</tr>", section, flags=re.S)


def test_report_lists_anomaly_with_who_and_where_and_plots_every_metric(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone")
    result = build_report(zone, title="unit report", request={"match": ["client_id=slow-.*"]})

    html_path = Path(result.html_path)
    assert html_path == zone.report / "report.html"
    text = html_path.read_text()
    rows = anomaly_rows(text)
    assert len(rows) == 1
    for expected in (
        "slow-consumer",
        "127.0.0.7",
        "confluent-kafka-python",
        "2.16.0",
        "User:ANONYMOUS",
        FETCH,
    ):
        assert expected in rows[0]
    assert 'class="critical"' in rows[0]
    assert result.anomalies == 1 and result.clients == 2 and result.brokers == 1
    assert result.metrics_plotted == 2 and result.plots_skipped == 0
    images = re.findall(r"<img src='([^']+)'", text)
    assert len(images) == 3  # two client metrics + one broker
    for image in images:
        data = (zone.report / image).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 2000
    assert "client_id=slow-.*" in text and "steady-producer" in text and "apache-kafka-java" in text
    summary = json.loads((zone.report / "summary.json").read_text())
    assert summary["anomalies"] == 1 and len(summary["plots"]) == 3


def test_threshold_lines_follow_rule_scope(tmp_path: Path) -> None:
    from airflow_provider_kip714.analytics.tables import read_table
    from airflow_provider_kip714.report.builder import _threshold_lines

    zone = make_zone(tmp_path / "zone")
    thresholds = read_table(zone, "thresholds")
    group_by = ("client_software_name", "client_id")
    slow = _threshold_lines(thresholds, FETCH, CLIENTS["slow-consumer"], group_by)
    assert sorted(line.value for _, line in slow) == [500.0, 800.0]  # not the rule for client "nobody"
    steady = _threshold_lines(thresholds, QUEUE, CLIENTS["steady-producer"], group_by)
    assert [(field, line.value) for field, line in steady] == [("max", 5000.0)]


def test_clean_zone_without_brokers_says_so_and_rerun_replaces_plots(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone", with_anomaly=False, with_brokers=False)
    stale = zone.report / PLOTS_DIR / "stale.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    result = build_report(zone)
    text = Path(result.html_path).read_text()
    assert anomaly_rows(text) == []
    assert "No threshold was breached" in text and "No broker metric records" in text
    assert result.anomalies == 0 and result.brokers == 0 and result.metrics_plotted == 2
    assert not stale.exists()


def test_plot_budget_keeps_anomalous_metrics_first(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone")
    result = build_report(zone, max_plots=1)
    assert result.metrics_plotted == 1 and result.plots_skipped == 1
    text = Path(result.html_path).read_text()
    assert f"{FETCH} <span class='flag'>anomaly</span>" in text


def test_window_clips_buckets_and_anomalies(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone")
    result = build_report(zone, window=(START, START + timedelta(seconds=50)))
    assert result.anomalies == 0  # the breach starts at +80 s
    assert result.metrics_plotted == 2


def test_window_keeps_a_breach_that_began_just_before_it(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone")
    result = build_report(zone, window=(START + timedelta(seconds=85), START + timedelta(seconds=200)))
    assert result.anomalies == 1


def test_empty_zone_renders_and_bad_budget_is_refused(tmp_path: Path) -> None:
    result = build_report(RunArea(tmp_path / "empty"))
    assert result.clients == 0 and "No client telemetry" in Path(result.html_path).read_text()
    with pytest.raises(ValueError, match="max_plots: must be >= 0"):
        build_report(RunArea(tmp_path / "empty"), max_plots=-1)


def test_far_away_thresholds_are_listed_not_drawn() -> None:
    from airflow_provider_kip714.analytics.plots import Series, ThresholdLine, split_off_scale

    series = [Series("signal", [START, START + timedelta(seconds=10)], [18.0, 26.0])]
    near, far, zero = ThresholdLine("near", 40.0), ThresholdLine("far", 5000.0), ThresholdLine("zero", 0.0)
    assert split_off_scale(series, [near, far, zero]) == ([near, zero], [far])
    assert split_off_scale([], [far]) == ([far], [])


def test_report_url_matches_the_zone_folder_name(tmp_path: Path) -> None:
    run_id = "manual__2026-03-01T10:00:00+00:00"
    zone = troubleshoot_area(run_id, root=tmp_path)
    assert report_url_path(run_id) == f"/kip714/reports/{zone.root.name}/report.html"
