"""The troubleshooting report on a small generated analytics zone (pyarrow-written, no Spark)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_kip714.clock import TimeSpan
from airflow_provider_kip714.report import build_report, report_url_path
from airflow_provider_kip714.report.builder import report_title
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


def chart_data(text: str) -> dict:
    """The report's chart data block, parsed as the bundled renderer parses it."""
    block = re.search(r'<script type="application/json" id="kip714-chart-data">(.*?)</script>', text, re.S)
    assert block is not None
    assert "<" not in block.group(1) and ">" not in block.group(1)  # no value can close the element
    return json.loads(block.group(1))


def charts_by_id(text: str) -> dict[str, dict]:
    return {chart["id"]: chart for chart in chart_data(text)["charts"]}


def cards(text: str) -> list[str]:
    return re.findall(r"<article class=\"card [^\"]*\".*?</article>", text, flags=re.S)


def test_report_leads_with_the_finding_card_and_its_chart_against_the_threshold(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone")
    result = build_report(zone, title="unit report", request={"match": ["client_id=slow-.*"]})

    html_path = Path(result.html_path)
    assert html_path == zone.report / "report.html"
    text = html_path.read_text()
    assert (
        text.index("<details><summary>The request") < text.index("id='findings'") < text.index("id='metrics'")
    )
    (card,) = cards(text)
    for expected in (
        "slow-consumer",
        "AAAAAAAAAAAAAAAAAAAAAA",
        "confluent-kafka-python 2.16.0",
        "User:ANONYMOUS",
        FETCH,
    ):
        assert expected in card
    assert 'class="card critical"' in card and "2026-03-01 10:01:20 UTC" in card  # since when
    assert "900 against 500" in card and "a threshold" in card  # how bad, against what
    assert result.anomalies == 1 and result.findings == 1 and result.clients == 2 and result.brokers == 1
    assert result.metrics_plotted == 2 and result.plots_skipped == 0
    assert "<img" not in text and not (zone.report / "plots").exists()
    chart = charts_by_id(text)["finding-0"]
    mine, *levels = chart["lines"]
    assert mine["label"] == "slow-consumer" and mine["values"][8:] == [900.0] * 4  # node_id=1, the breach
    assert [(line["label"], line["values"][0]) for line in levels] == [
        ("threshold 500", 500.0),
        ("critical 800", 800.0),
    ]
    breach = (START + timedelta(seconds=80)).timestamp(), (START + timedelta(seconds=120)).timestamp()
    assert chart["shade"] == [list(breach)]
    assert "client_id=slow-.*" in text and "steady-producer" in text and "apache-kafka-java" in text
    summary = json.loads((zone.report / "summary.json").read_text())
    assert summary["anomalies"] == 1 and summary["html_bytes"] == len(text.encode())


def test_one_chart_per_metric_across_clients_one_colour_per_client(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone")
    text = Path(build_report(zone).html_path).read_text()
    charts = charts_by_id(text)
    metric = [c for c in charts.values() if c["id"].startswith("metric-")]
    assert [c["title"] for c in metric] == [FETCH, QUEUE]  # the metric with a finding first
    slow = next(line for line in metric[0]["lines"] if line["label"] == "slow-consumer")
    assert slow["colour"] == charts["finding-0"]["lines"][0]["colour"] and slow["width"] > 2  # highlighted
    assert chart_data(text)["palette"]["AAAAAAAAAAAAAAAAAAAAAA"] == slow["colour"]
    levels = [line["label"] for line in metric[0]["lines"] if line["dash"]]
    assert levels == [
        "fetch-latency: signal > 500",
        "fetch-latency (critical): signal > 800",
    ]  # not 'nobody's
    assert "queue-time: max > 5000" in metric[1]["note"]  # off scale: named, not drawn


def test_clean_zone_without_brokers_says_so_and_rerun_removes_old_plots(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone", with_anomaly=False, with_brokers=False)
    stale = zone.report / "plots" / "stale.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    result = build_report(zone)
    text = Path(result.html_path).read_text()
    assert cards(text) == []
    assert "No finding" in text and "No broker metric records" in text
    assert result.anomalies == 0 and result.brokers == 0 and result.metrics_plotted == 2
    assert not stale.exists()


def test_chart_budget_keeps_metrics_with_findings_first(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone")
    result = build_report(zone, max_plots=2)  # the card's chart and one metric chart
    assert result.metrics_plotted == 1 and result.plots_skipped == 1
    text = Path(result.html_path).read_text()
    assert [c["title"] for c in charts_by_id(text).values() if c["id"].startswith("metric-")] == [FETCH]


def test_window_clips_buckets_and_anomalies(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone")
    result = build_report(zone, span=TimeSpan(START, START + timedelta(seconds=50)))
    assert result.anomalies == 0  # the breach starts at +80 s
    assert result.metrics_plotted == 2


def test_window_keeps_a_breach_that_began_just_before_it(tmp_path: Path) -> None:
    zone = make_zone(tmp_path / "zone")
    result = build_report(zone, span=TimeSpan(START + timedelta(seconds=85), START + timedelta(seconds=200)))
    assert result.anomalies == 1


def test_empty_zone_renders_and_bad_budget_is_refused(tmp_path: Path) -> None:
    result = build_report(RunArea(tmp_path / "empty"))
    assert result.clients == 0 and "No client telemetry" in Path(result.html_path).read_text()
    with pytest.raises(ValueError, match="max_plots: must be >= 0"):
        build_report(RunArea(tmp_path / "empty"), max_plots=-1)
    with pytest.raises(ValueError, match="top: must be >= 1"):
        build_report(RunArea(tmp_path / "empty"), top=0)


def test_title_says_which_dag_when_and_which_clients() -> None:
    span = TimeSpan(START, START + timedelta(minutes=30))
    assert report_title("kip714_troubleshoot", span, ["client_id=orders-.*"]) == (
        "kip714_troubleshoot · 01 Mar 2026 10:00-10:30 UTC · client_id=orders-.*"
    )
    assert report_title(None, None) == "KIP-714 report · all landed data · all clients"


def test_report_is_self_contained_with_the_bundled_chart_library(tmp_path: Path) -> None:
    text = Path(build_report(make_zone(tmp_path / "zone")).html_path).read_text()
    assert "https://" not in text.split('<script id="kip714-uplot">')[0]  # nothing fetched before the charts
    assert "src=" not in text and "<link" not in text
    assert "uPlot" in text and "kip714-chart-data" in text


def test_far_away_thresholds_are_listed_not_drawn() -> None:
    """A 5000 ms rule over 18-26 ms values is named in the note, not drawn (it would flatten the series)."""
    from airflow_provider_kip714.report.charts import Level, Palette, metric_charts, values_frame

    times = [START, START + timedelta(seconds=10)]
    rows = pd.DataFrame(
        {"client_instance_id": "A", "metric_name": FETCH, "attributes_key": "", "bucket_start": times,
         "signal": [18.0, 26.0]}
    )  # fmt: skip
    levels = [Level("near", 40.0), Level("far", 5000.0), Level("zero", 0.0)]
    (chart,) = metric_charts(
        values_frame(rows), {"A": "a"}, Palette(), {}, {}, levels={FETCH: levels}, budget=1
    ).charts
    assert [line.label for line in chart.lines] == ["a", "near 40", "zero 0"]
    assert "Off scale, not drawn: far 5000." in chart.note


def test_report_url_matches_the_zone_folder_name(tmp_path: Path) -> None:
    run_id = "manual__2026-03-01T10:00:00+00:00"
    zone = troubleshoot_area(run_id, root=tmp_path)
    assert report_url_path(run_id) == f"/kip714/reports/{zone.root.name}/report.html"


def test_a_window_opened_by_a_finding_begins_with_that_finding(tmp_path: Path) -> None:
    from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind, Severity

    zone = make_zone(tmp_path / "zone")
    opener = Finding(
        FindingKind.ANOMALY,
        Severity.CRITICAL,
        START,
        "poll idle ratio 0.02 (below peers 0.8) for 40 s",
        ClientIdentity(client_instance_id="AAAAAAAAAAAAAAAAAAAAAA", client_id="<b>slow</b>-consumer"),
        metric_name="org.apache.kafka.consumer.poll.idle.ratio",
        against="peers",
    )
    text = Path(
        build_report(zone, request={"opened_by_finding": opener.as_extra()["finding"]}).html_path
    ).read_text()
    assert text.index("id='opened-by'") < text.index("id='findings'")
    opened_card = cards(text)[0]
    assert "&lt;b&gt;slow&lt;/b&gt;-consumer" in opened_card and "<b>slow" not in opened_card
    assert "poll idle ratio 0.02" in opened_card and "its peers" in opened_card
    # the request's table does not repeat the finding as a raw value: it has its card
    assert "<th>opened_by_finding</th>" not in text and "summary=poll idle ratio" not in text
    assert "The request" not in text  # nothing else was asked: no empty table
    forged = {**opener.as_extra()["finding"], "finding_id": "anomaly-0000000000000000"}
    text = Path(build_report(zone, request={"opened_by_finding": forged}).html_path).read_text()
    assert "cannot read" in text and "id='opened-by'" not in text


def test_the_opening_finding_is_charted_against_its_group_from_the_evidence_live_mode_kept(
    tmp_path: Path,
) -> None:
    """The window subscribed the slow consumer alone, and live mode's tables have moved on by the time
    the report is written: the card's chart comes from the rows ``keep_evidence`` copied when the window
    was planned, the client over its group's median and band, the peers unnamed."""
    from airflow_provider_kip714.findings.evidence import keep_evidence
    from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind, Severity

    idle = "consumer.poll.idle.ratio.avg"
    live = RunArea(tmp_path / "live")
    schema = pa.schema([*rollup_schema(), ("resource_attributes", MAP)])
    members = {"slow": ("SSSSSSSSSSSSSSSSSSSSSS", 0.02)} | {
        f"peer-{n}": (f"PEER{n}PPPPPPPPPPPPPPPPP", 0.95 + n / 100) for n in range(3)
    }
    rows = [
        {
            "client_instance_id": instance,
            "client_id": f"orders-{name}",
            "bucket_start": START + timedelta(seconds=BUCKET_S * index),
            "bucket_seconds": BUCKET_S,
            "record_type": "client",
            "metric_name": metric,
            "attributes": [],
            "attributes_key": "",
            "signal": value,
            "avg": value,
            "resource_attributes": [("group_id", "orders")],
        }
        for name, (instance, value) in members.items()
        for index in range(BUCKETS)
        for metric in (idle, FETCH)
    ]
    write_partitioned(live.analytics, "rollups", rows, schema)
    slow = Finding(
        FindingKind.ANOMALY,
        Severity.WARNING,
        START + timedelta(seconds=30),
        "poll idle ratio 0.02, peers' median 0.96",
        ClientIdentity(client_instance_id=members["slow"][0], client_id="orders-slow"),
        metric_name=idle,
        against="peers",
        peer_group="group_id=orders",
    )
    assert keep_evidence(slow, live) == {"rollups": 4 * BUCKETS, "thresholds": 0}
    # live mode's next cycles replace its tables; the evidence stays
    for path in sorted(live.analytics.rglob("*.parquet")):
        path.unlink()
    zone = make_zone(tmp_path / "zone")
    request = {"opened_by_finding": slow.as_extra()["finding"]}
    text = Path(build_report(zone, request=request, live=live).html_path).read_text()
    opened = text[text.index("id='opened-by'") : text.index("id='findings'")]
    assert 'data-chart="opened-by-chart"' in opened, opened
    chart = charts_by_id(text)["opened-by-chart"]
    labels = [line["label"] for line in chart["lines"]]
    assert labels[0] == "orders-slow" and "peers' median (group_id=orders)" in labels
    median = chart["lines"][labels.index("peers' median (group_id=orders)")]["values"]
    assert median[0] == pytest.approx(0.96) and chart["lines"][0]["values"][0] == pytest.approx(0.02)
    assert not any(f"orders-peer-{n}" in text for n in range(3))  # the peers are a band, not names
    # without the evidence (a run opened by hand, or evidence never kept) the card stands alone
    text = Path(build_report(zone, request=request, live=RunArea(tmp_path / "nowhere")).html_path).read_text()
    assert "id='opened-by'" in text and "were not kept" in text


def test_identities_take_each_column_from_the_first_frame_that_has_it() -> None:
    from airflow_provider_kip714.report.assemble import identities_of

    anomalies = pd.DataFrame(
        {"client_instance_id": ["a", "a"], "client_id": ["", "late-row"], "principal": [None, "User:x"]}
    )
    rollups = pd.DataFrame(
        {
            "client_instance_id": ["b", "a", None],
            "client_id": ["bee", "ay", "nobody"],
            "principal": ["User:b", "", "User:n"],
        }
    )
    assert identities_of([anomalies, pd.DataFrame(), rollups]) == {
        # the anomaly frame's first row of "a" has an empty client id: the rollups' fills it; its principal
        # is absent there and empty in the rollups, so it stays empty
        "a": {"client_instance_id": "a", "client_id": "ay", "principal": ""},
        "b": {"client_instance_id": "b", "client_id": "bee", "principal": "User:b"},
    }
    assert list(identities_of([anomalies, rollups])) == ["a", "b"]
    assert identities_of([pd.DataFrame({"client_id": ["x"]})]) == {}
    assert identities_of([pd.DataFrame({"client_instance_id": ["", "c"], "client_id": [None, "<b>\n"]})]) == {
        "": {"client_instance_id": ""},  # an empty instance id is still an instance (as before)
        "c": {"client_instance_id": "c", "client_id": "<b>\n"},
    }


def test_instance_attribute_reads_the_map_column_of_every_row(tmp_path: Path) -> None:
    from airflow_provider_kip714.analytics.tables import instance_attribute

    area = RunArea(tmp_path / "zone")
    schema = pa.schema(
        [("client_instance_id", pa.string()), ("resource_attributes", pa.map_(pa.string(), pa.string()))]
    )
    rows = [
        {"client_instance_id": "a", "resource_attributes": [("host", "h1"), ("group_id", "orders")]},
        {"client_instance_id": "a", "resource_attributes": None},
        {"client_instance_id": "b", "resource_attributes": [("host", "h2")]},
        {"client_instance_id": "c", "resource_attributes": []},
        {"client_instance_id": "d", "resource_attributes": [("group_id", "x"), ("group_id", "y")]},
        {"client_instance_id": "e", "resource_attributes": [("group_id", None)]},
    ]
    folder = Path(str(area.table("rollups"))) / "date=2026-01-31" / "hour=13"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows[:3], schema=schema), folder / "part-00000.parquet")
    pq.write_table(pa.Table.from_pylist(rows[3:], schema=schema), folder / "part-00001.parquet")
    assert instance_attribute(area, "rollups", "group_id") == {"a": "orders", "d": "y"}
    assert instance_attribute(area, "rollups", "host") == {"a": "h1", "b": "h2"}
    assert instance_attribute(area, "anomalies", "group_id") == {}
