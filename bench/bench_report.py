"""The findings-first report and page at fleet size: build time and file size, page render time (issue #28).

Workload per fleet size: ``clients`` consumers in groups of 10 (a ``group_id`` resource attribute), 13
metrics each (five of them zero everywhere, as most of a real window's are), 30 one-minute buckets, one
broker; one client in 25 has a critical anomaly, one in 50 is silent, one in 20 has gaps in its pushes;
one troubleshooting subscription reached all but one client in 40 (convergence). Tables are written in
the Spark apps' schemas (``tests/ui/analytics_data.write_table``).

* ``report``: ``build_report`` on the fleet (median of ``--repeat``), and the HTML file's size;
* ``page``: ``GET /kip714/`` of the UI app in-process (Airflow's auth overridden, no Kafka connection
  configured, so the subscriptions panel answers at once), median of ``--repeat`` after one warm-up.

Targets: the report stays readable at 500 clients (a metric chart draws at most ``top`` clients plus a
band), the page renders in under 1 s with 1,000 clients' tables. CPU seconds are printed beside wall
seconds: on a shared machine the wall time says more about the neighbours than about the code.

    .venv/bin/python bench/bench_report.py                      # report at 3, 50, 500; page at 1000
    .venv/bin/python bench/bench_report.py --clients 3,50 --page-clients 0
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.ui.analytics_data import minute_bucket, write_table

END = datetime(2026, 11, 27, 21, 0, tzinfo=UTC)
BUCKETS = 30
LIVE = (
    "org.apache.kafka.consumer.poll.idle.ratio.avg",
    "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg",
    "org.apache.kafka.consumer.fetch.manager.records.lag.max",
    "org.apache.kafka.consumer.coordinator.commit.latency.avg",
    "org.apache.kafka.consumer.fetch.manager.bytes.consumed.rate",
    "org.apache.kafka.consumer.node.request.latency.avg",
    "org.apache.kafka.consumer.connection.count",
    "org.apache.kafka.consumer.io.wait.ratio",
)
ZERO = (
    "org.apache.kafka.consumer.connection.creation.rate",
    "org.apache.kafka.consumer.connection.close.rate",
    "org.apache.kafka.consumer.coordinator.rebalance.rate.per.hour",
    "org.apache.kafka.consumer.fetch.manager.fetch.throttle.time.avg",
    "org.apache.kafka.consumer.coordinator.failed.rebalance.rate.per.hour",
)


def _who(index: int) -> dict[str, str]:
    return {
        "client_instance_id": f"Fleet{index:017d}",
        "client_id": f"orders-consumer-{index}",
        "client_software_name": "confluent-kafka-python" if index % 3 else "apache-kafka-java",
        "client_software_version": "2.16.0" if index % 3 else "4.4.0",
        "client_source_address": f"10.0.{index // 250}.{index % 250}",
        "principal": f"User:team{index % 4}",
    }


def write_fleet(analytics: Path, clients: int) -> None:
    """The fleet's rollups, anomalies, delivery and broker tables (see the module docstring)."""
    first = END - timedelta(minutes=BUCKETS)
    rollups, anomalies, silent, delivery, convergence = [], [], [], [], []
    never = sum(1 for index in range(clients) if index % 40 == 17)  # the subscription never reached them
    for index in range(clients):
        who = _who(index)
        sick = index % 25 == 7
        for minute in range(BUCKETS):
            start = first + timedelta(minutes=minute)
            common = {
                **who,
                **minute_bucket(start),
                "record_type": "client",
                "resource_attributes": [("group_id", f"group-{index // 10}")],
                "metric_type": "gauge",
                "attributes_key": "",
                "count": 6,
            }
            for number, metric in enumerate(LIVE):
                value = (number + 1) * (1.0 + 0.1 * math.sin(index + minute / 3.0))
                if sick and number == 0 and minute >= BUCKETS - 10:
                    value = 0.02
                rollups.append({**common, "metric_name": metric, "signal": value, "avg": value})
            for metric in ZERO:
                rollups.append({**common, "metric_name": metric, "signal": 0.0, "avg": 0.0})
        if sick:
            breach = END - timedelta(minutes=10)
            anomalies.append(
                {
                    **who,
                    "kind": "baseline",
                    "baseline_kind": "peers",
                    "peer_group": f"group_id=group-{index // 10}",
                    "rule_name": f"peers:{LIVE[0]}",
                    "severity": "critical",
                    "metric_name": LIVE[0],
                    "field": "peer_deviation",
                    "attributes_key": "",
                    "comparison": ">",
                    "threshold": 4.0,
                    "critical_threshold": 8.0,
                    "peak_value": 12.0,
                    "breach_start": breach,
                    "breach_end": END,
                    "duration_seconds": 600,
                }
            )
        hour = first.replace(minute=0)
        delivery.append(
            {
                **who,
                "hour_start": hour,
                "interval_start": hour,
                "broker_node_id": 1,
                "push_interval_seconds": 10.0,
                "expected_pushes": 180,
                "landed_pushes": 172 if index % 20 == 11 else 180,
                "first_push_time": first,
                "last_push_time": END,
                "max_gap_seconds": 90.0 if index % 20 == 11 else 10.0,
                "status": "gaps" if index % 20 == 11 else "ok",
                "terminated": False,
                "reason": "longest gap 80.0 s for a 10.0 s interval" if index % 20 == 11 else None,
            }
        )
        subscribed = first + timedelta(minutes=2)
        delay = None if index % 40 == 17 else 1.0 + (index % 13) * 0.7
        convergence.append(
            {
                **who,
                "subscription_name": "kip714-troubleshoot-exp20261127T210000Z-bench000",
                "subscribed_at": subscribed,
                "first_push_time": subscribed + timedelta(seconds=delay) if delay is not None else None,
                "delay_seconds": delay,
                "matched_clients": clients,
                "converged_clients": clients - never,
                "p50_seconds": 4.5,
                "p90_seconds": 8.4,
                "p100_seconds": 9.4,
                "interval_start": subscribed,
            }
        )
        if index % 50 == 3:
            since = END - timedelta(minutes=6)
            silent.append(
                {
                    **who,
                    "hour_start": END.replace(minute=0),
                    "interval_start": END.replace(minute=0),
                    "broker_node_id": 1,
                    "expected_pushes": 30,
                    "landed_pushes": 24,
                    "status": "silent",
                    "silent_since": since,
                    "last_push_time": since,
                    "terminated": False,
                    "reason": "no push for 6 intervals and no terminating push",
                }
            )
    write_table(analytics, "rollups", rollups)
    if anomalies:
        write_table(analytics, "anomalies", anomalies)
    write_table(analytics, "delivery", [*delivery, *silent])
    write_table(analytics, "convergence", convergence)
    write_table(
        analytics,
        "broker_metrics",
        [
            {
                **minute_bucket(first + timedelta(minutes=m)),
                "cluster_id": "bench",
                "broker_node_id": 1,
                "instance_count": float(clients),
                "instance_count_max": float(clients),
                "pushes_exported": float(clients * 6),
                "throttled_pushes": 0.0,
                "plugin_errors": 0.0,
                "unknown_subscription_requests": 0.0,
                "plugin_failing": False,
            }
            for m in range(BUCKETS)
        ],
    )


def bench_report(clients: int, repeat: int, root: Path) -> tuple[float, float, int, int]:
    """(median wall s, median CPU s, HTML bytes, charts) of ``build_report`` on a fleet of ``clients``."""
    from airflow_provider_kip714.clock import TimeSpan
    from airflow_provider_kip714.report import build_report
    from airflow_provider_kip714.storage.data_root import RunArea

    zone = RunArea(root / f"report-{clients}")
    write_fleet(zone.analytics, clients)
    times, cpu = [], []
    for _ in range(repeat):
        started, used = time.perf_counter(), time.process_time()
        span = TimeSpan(END - timedelta(minutes=BUCKETS), END)
        result = build_report(zone, dag_id="kip714_troubleshoot", span=span)
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - used)
    charts = result.metrics_plotted + min(result.findings, 24)
    return statistics.median(times), statistics.median(cpu), result.html_bytes, charts


def bench_page(clients: int, repeat: int, root: Path) -> tuple[float, float]:
    """(median wall s, median CPU s) of ``GET /`` on the scheduled area holding ``clients``."""
    os.environ["KIP714_DATA_DIR"] = str(root / "page")
    os.environ["KIP714_UI_KAFKA_CONN_ID"] = "kip714_bench_no_conn"  # answers at once: not configured
    from airflow.api_fastapi import app as airflow_app
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.security import get_user
    from fastapi.testclient import TestClient

    from airflow_provider_kip714.storage.data_root import scheduled_area
    from airflow_provider_kip714.ui.app import create_app

    write_fleet(scheduled_area().analytics, clients)
    airflow_app.create_auth_manager()
    app = create_app()
    app.dependency_overrides[get_user] = lambda: SimpleAuthManagerUser(username="bench", role="admin")
    times, cpu = [], []
    with TestClient(app) as client:
        assert client.get("/").status_code == 200  # warm-up: imports, first parquet scan
        for _ in range(repeat):
            started, used = time.perf_counter(), time.process_time()
            answer = client.get("/")
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - used)
            assert answer.status_code == 200
    return statistics.median(times), statistics.median(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="3,50,500", help="report fleet sizes (default 3,50,500)")
    parser.add_argument("--page-clients", type=int, default=1000, help="page fleet size; 0 skips it")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="kip714-bench-report-") as tmp:
        for clients in (int(part) for part in args.clients.split(",") if part):
            seconds, cpu, size, charts = bench_report(clients, args.repeat, Path(tmp))
            print(
                f"report clients={clients:5d} build={seconds:6.2f} s (cpu {cpu:5.2f} s)  "
                f"html={size / 1024:7.1f} KiB  charts={charts}",
                flush=True,
            )
        if args.page_clients:
            seconds, cpu = bench_page(args.page_clients, args.repeat, Path(tmp))
            verdict = "ok" if cpu < 1.0 else "OVER the 1 s target"
            print(
                f"page   clients={args.page_clients:5d} render={seconds:6.2f} s (cpu {cpu:5.2f} s, {verdict})"
            )
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
