"""Report sections for delivery, convergence and capabilities: silent clients, 50/90/100 % times,
"not pushed by this library" apart from zero, and client-controlled strings shown as text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

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


def test_report_shows_silent_clients_convergence_and_capabilities_escaped(tmp_path: Path) -> None:
    area = make_area(tmp_path)
    build_report(area, request={"metrics": ["org.apache.kafka."]})
    html = (Path(area.report) / "report.html").read_text()
    assert "<h2>Delivery</h2>" in html and "2 silent, 1 other finding(s), 1 instance-hour(s) ok." in html
    assert "2026-03-01 10:20:00" in html and "2026-03-01 10:05:00" in html  # when each went silent
    assert "longest gap 130.0 s" in html
    assert HOSTILE not in html and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "<h2>Subscription convergence</h2>" in html and "<td>4</td>" in html
    assert html.count("not pushed by this library") == 3  # 2 cells + the legend
    assert "pushed by 3" in html


def test_report_without_the_new_tables_says_so(tmp_path: Path) -> None:
    area = RunArea(tmp_path)
    Path(area.analytics).mkdir(parents=True)
    build_report(area)
    html = (Path(area.report) / "report.html").read_text()
    assert "No delivery table for this run" in html and "No convergence table" in html
