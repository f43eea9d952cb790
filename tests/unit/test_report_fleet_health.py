"""Report sections for delivery, convergence and capabilities, each as cards then charts: an
instance-hour with gaps and its series against the others', a subscription and how fast its clients
took it up, a library that does not push requested metrics ("not pushed by this library" apart from
zero); client-controlled strings shown as text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from test_report import CLIENTS, FETCH, cards, charts_by_id, rollup_schema, write_partitioned

from airflow_provider_kip714.report import build_report
from airflow_provider_kip714.storage.data_root import RunArea

HOUR = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
HOSTILE = "<script>alert('x')</script>"
WHO = {
    "client_instance_id_hex": None,
    "client_source_address": "127.0.0.1",
    "principal": "User:ANONYMOUS",
    "client_software_version": "2.16.0",
}


def _write(area: RunArea, table: str, rows: list[dict]) -> None:
    folder = Path(area.analytics) / table / f"date={HOUR:%Y-%m-%d}" / f"hour={HOUR.hour}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-00000.parquet")


def _delivery(client_id: str | None, instance: str | None, status: str, **extra: object) -> dict:
    row = {
        "hour_start": HOUR,
        "client_instance_id": instance,
        "client_id": client_id,
        "client_software_name": "confluent-kafka-python" if instance else None,
        "broker_node_id": 1,
        "expected_pushes": 360,
        "landed_pushes": 120,
        "status": status,
        "silent_since": None,
        "unseen_instances": None,
        "reason": None,
        "terminated": False,
        **WHO,
    }
    return {**row, **extra}


def make_area(root: Path) -> RunArea:
    area = RunArea(root)
    killed_at = HOUR + timedelta(minutes=20)
    _write(
        area,
        "delivery",
        [
            _delivery(HOSTILE, "KILLED", "silent", silent_since=killed_at, reason="no push since 10:20"),
            _delivery(None, None, "silent", silent_since=HOUR + timedelta(minutes=5), unseen_instances=1),
            _delivery("steady", "STEADY", "ok"),
            _delivery("gappy", "GAPPY", "gaps", reason="longest gap 130.0 s for a 10.0 s interval"),
        ],
    )
    at = HOUR + timedelta(minutes=1)
    _write(
        area,
        "convergence",
        [
            {
                "subscription_name": f"kip714-{HOSTILE}",
                "client_id": client_id,
                "client_instance_id": client_id.upper(),
                "client_software_name": "confluent-kafka-python",
                "subscribed_at": at,
                "first_push_time": None if delay is None else at + timedelta(seconds=delay),
                "delay_seconds": delay,
                "matched_clients": 2,
                "converged_clients": 1,
                "p50_seconds": 4.0,
                "p90_seconds": None,
                "p100_seconds": None,
                **WHO,
            }
            for client_id, delay in (("fast", 4.0), ("never", None))
        ],
    )
    _write(
        area,
        "capabilities",
        [
            {
                "client_software_name": name,
                "client_software_version": version,
                "metric_name": metric,
                "metric_type": "gauge",
                "instances": 3,
                "points_per_push": 1.0,
                "first_seen": HOUR,
                "last_seen": HOUR + timedelta(minutes=30),
            }
            for name, version, metric in (
                ("confluent-kafka-python", "2.16.0", "org.apache.kafka.consumer.poll.idle.ratio.avg"),
                ("apache-kafka-java", "4.4.0", "org.apache.kafka.producer.record.queue.time.max"),
            )
        ],
    )
    return area


def _gappy_rollups(area: RunArea) -> None:
    """Two clients over six 10 s buckets; the gappy one sends nothing in buckets 2 and 3."""
    rows = []
    for index in range(6):
        for who, identity in (("GAPPY", CLIENTS["slow-consumer"]), ("STEADY", CLIENTS["steady-producer"])):
            if who == "GAPPY" and index in (2, 3):
                continue
            rows.append(
                {
                    **identity,
                    "client_instance_id": who,
                    "bucket_start": HOUR + timedelta(seconds=10 * index),
                    "bucket_seconds": 10,
                    "record_type": "client",
                    "metric_name": FETCH,
                    "metric_unit": "ms",
                    "attributes": [],
                    "attributes_key": "",
                    "signal": 1.0,
                    "max": 1.0,
                    "avg": 1.0,
                }
            )
    write_partitioned(Path(area.analytics), "rollups", rows, rollup_schema())


def test_sections_answer_with_cards_then_charts_and_keep_client_strings_text(tmp_path: Path) -> None:
    area = make_area(tmp_path)
    _gappy_rollups(area)
    build_report(area, request={"metrics": ["org.apache.kafka."]})
    html = (Path(area.report) / "report.html").read_text()
    charts = charts_by_id(html)
    by_kind = {kind: [c for c in cards(html) if f'data-kind="{kind}"' in c] for kind in
               ("delivery_gaps", "convergence", "capability", "silent_client")}  # fmt: skip

    # delivery: the silent clients are finding cards; the gaps get a card of their own with its chart
    assert len(by_kind["silent_client"]) == 2
    assert (
        "1 instance-hour(s) with gaps, 2 silent and 0 throttled (their cards are under Findings), 1 ok."
        in html
    )
    (gap,) = by_kind["delivery_gaps"]
    assert 'data-client="GAPPY"' in gap and "longest gap 130.0 s for a 10.0 s interval" in gap
    assert "120 of 360 expected pushes landed" in gap and 'data-chart="delivery-0"' in gap
    own = charts["delivery-0"]
    assert own["lines"][0]["client"] == "GAPPY" and own["lines"][0]["values"] == [
        1.0,
        1.0,
        0.0,
        0.0,
        1.0,
        1.0,
    ]
    assert len(own["shade"]) == 2  # the two buckets it sent nothing in
    across = charts["delivery-all"]
    assert {line["client"] for line in across["lines"]} == {"GAPPY", "STEADY"}
    assert html.index('data-chart="delivery-0"') < html.index('data-chart="delivery-all"')
    assert "2026-03-01 10:20:00" in html and "2026-03-01 10:05:00" in html  # when each went silent

    # convergence: one card per subscription, warning as one matched client never pushed under it
    (window,) = by_kind["convergence"]
    assert window.startswith('<article class="card warning"') and "1 of 2 matched client(s)" in window
    assert "half after 4 s" in window and "all after ?" in window
    steps = charts["convergence-0"]
    assert steps["lines"][0]["values"] == [0.0, 1.0] and steps["lines"][1]["values"] == [2.0, 2.0]
    assert steps["x"][1] - steps["x"][0] == 4.0

    # capabilities: each library misses the other's requested metric; the matrix says so per cell
    assert len(by_kind["capability"]) == 2
    assert "does not push 1 requested metric(s)" in by_kind["capability"][0]
    assert html.count("<td class='absent'>not pushed by this library</td>") == 2
    assert html.count("<td class='pushed'>pushed by 3</td>") == 2

    # client- and user-controlled strings stay text, in cards, tables and chart data
    assert HOSTILE not in html and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "subscription kip714-&lt;script&gt;" in window


def test_a_complete_subscription_is_information_and_no_library_card_without_requested_metrics(
    tmp_path: Path,
) -> None:
    area = make_area(tmp_path)
    table = pq.read_table(next((Path(area.analytics) / "convergence").rglob("*.parquet")))
    rows = [row | {"converged_clients": 2} for row in table.to_pylist()]
    _write(area, "convergence", rows)
    build_report(area)
    html = (Path(area.report) / "report.html").read_text()
    (window,) = [c for c in cards(html) if 'data-kind="convergence"' in c]
    assert window.startswith('<article class="card info"')
    assert not [c for c in cards(html) if 'data-kind="capability"' in c]
    assert "Requested: all metrics." in html


def test_report_without_the_new_tables_says_so(tmp_path: Path) -> None:
    area = RunArea(tmp_path)
    Path(area.analytics).mkdir(parents=True)
    build_report(area)
    html = (Path(area.report) / "report.html").read_text()
    assert "No delivery table for this run" in html and "No convergence table" in html
