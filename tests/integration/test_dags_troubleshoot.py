"""``kip714_troubleshoot`` end to end: dag.test() against the local Kafka with real librdkafka clients.

The clients start only once the run's subscription exists (a client that asked before would wait up to
the default 5-minute interval to ask again), push at 1 s during a 40 s window, and stop. The run must
end with a report that shows them, and with no subscription left on the cluster.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dag_test_env import make_airflow_env, run_dag_test
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from telemetry_helpers import run_librdkafka_clients

from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.window_name import parse_window_name, try_parse_window_name

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

DAG_ID = "kip714_troubleshoot"
WINDOW_S = 40


@pytest.fixture(scope="module")
def airflow_env(kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("airflow-home-troubleshoot")
    return make_airflow_env(home, home / "data", kafka_cluster)


def troubleshoot_names(admin: ClientMetricsAdmin) -> set[str]:
    return {
        name
        for name in admin.list_names()
        if (window := try_parse_window_name(name)) is not None and window.label == "troubleshoot"
    }


def troubleshoot_conf(prefix: str, window_seconds: int, **extra: object) -> dict[str, object]:
    """The troubleshoot DAG's conf for this run's clients (``<prefix>-*``): 1 s pushes, 5 s buckets,
    producer and consumer metrics, baselines from 3 buckets on."""
    return {
        "client_id": f"{prefix}-.*",
        "interval_ms": 1000,
        "window_seconds": window_seconds,
        "bucket": "5s",
        "metrics": ["org.apache.kafka.producer.", "org.apache.kafka.consumer."],
        "baseline_min_buckets": 3,
        **extra,
    }


def start_clients_when_subscribed(
    admin: ClientMetricsAdmin, before: set[str], config: dict, prefix: str, seconds: float
) -> tuple[threading.Thread, dict[str, object]]:
    """Background thread: wait for this run's new subscription, then run real clients for ``seconds``."""
    outcome: dict[str, object] = {}

    def run() -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            new = troubleshoot_names(admin) - before
            if new:
                outcome["subscription"] = sorted(new)[0]
                outcome["clients"] = run_librdkafka_clients(config, prefix, seconds)
                return
            time.sleep(0.5)
        outcome["error"] = "no troubleshoot subscription appeared within 180 s"

    thread = threading.Thread(target=run, name="kip714-test-clients", daemon=True)
    thread.start()
    return thread, outcome


def test_troubleshoot_window_ends_with_report_and_no_subscription(
    kafka_cluster: LocalKafkaCluster, airflow_env: dict[str, str], admin: ClientMetricsAdmin
) -> None:
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    prefix = f"ts-{uuid.uuid4().hex[:8]}"
    conf = troubleshoot_conf(
        prefix,
        WINDOW_S,
        thresholds=[
            # every producer queue-time value breaches ">= 0": the anomaly path must name the client
            {
                "metric_prefix": "org.apache.kafka.producer.record.queue.time",
                "field": "max",
                "comparison": ">=",
                "threshold": 0,
                "for_seconds": 0,
            }
        ],
    )
    before = troubleshoot_names(admin)
    thread, clients = start_clients_when_subscribed(
        admin, before, kafka_cluster.client_config(), prefix, seconds=WINDOW_S - 5
    )
    summary, output, _ = run_dag_test(airflow_env, DAG_ID, datetime.now(UTC), conf=conf, timeout_s=600)
    thread.join(timeout=120)

    assert "error" not in clients, clients
    assert summary is not None, output[-5000:]
    assert summary["state"] == "success", (summary["tasks"], output[-6000:])
    window = summary["xcom"]["open_subscription"]
    subscription = window["name"]
    assert subscription == clients["subscription"]
    # downstream steps use the bounds open_subscription returned (not recomputed from the name)
    start, end = datetime.fromisoformat(window["start"]), datetime.fromisoformat(window["end"])
    assert end - start == timedelta(seconds=WINDOW_S) and end == parse_window_name(subscription).expires_at
    assert subscription not in admin.list_names()  # deleted, and verified by the DAG itself
    assert summary["tasks"]["close_subscription"] == "success"
    assert summary["tasks"]["check_subscription_gone"] == "success"

    landed = summary["xcom"]["land_window"]
    assert landed["records"] > 0 and landed["points"] > 0 and landed["quarantined"] == 0

    report = Path(summary["xcom"]["report"])
    assert report.is_file() and report.name == "report.html"
    assert (
        report.parent
        == Path(airflow_env["KIP714_DATA_DIR"]) / "troubleshoot" / report.parent.parent.name / "report"
    )
    text = report.read_text()
    assert f"{prefix}-producer" in text and f"{prefix}-consumer" in text
    assert "<img" not in text and 'id="kip714-chart-data"' in text  # interactive charts, no PNG wall
    cards = re.findall(r'<article class="card .*?</article>', text, re.S)
    producer_cards = [
        card for card in cards if f"{prefix}-producer" in card and 'data-kind="anomaly"' in card
    ]
    assert producer_cards, text[:3000]
    assert "confluent-kafka-python" in producer_cards[0] and "127.0.0.1" in producer_cards[0]

    # logs a user can follow: the wait for pushes, what landed, where the report is
    assert "Waiting for telemetry from 1 client(s)" in output and "Seen " in output
    assert "Landed" in output and f"KIP714_REPORT {report}" in output


@pytest.mark.parametrize(
    ("conf", "field", "rule"),
    [
        ({"interval_ms": 50}, "interval_ms", "minimum"),
        ({"match": ["client_colour=red"]}, "match", "unknown selector"),
        (
            {
                "thresholds": [
                    {
                        "metric_prefix": "org.apache.kafka.producer.",
                        "threshold": 5,
                        "comparison": ">",
                        "critical_threshold": 1,
                    }
                ]
            },
            "thresholds[0].critical_threshold",
            "at least as far as threshold",
        ),
    ],
)
def test_invalid_params_fail_before_any_subscription_exists(
    kafka_cluster: LocalKafkaCluster,
    airflow_env: dict[str, str],
    admin: ClientMetricsAdmin,
    conf: dict,
    field: str,
    rule: str,
) -> None:
    before = troubleshoot_names(admin)
    summary, output, code = run_dag_test(airflow_env, DAG_ID, datetime.now(UTC), conf=conf, timeout_s=300)
    assert troubleshoot_names(admin) == before
    if summary is None:  # the Param form's JSON schema refused the run before any task
        assert code != 0
    else:
        assert summary["state"] == "failed"
        assert summary["tasks"]["validate_request"] == "failed"
        assert summary["tasks"]["open_subscription"] == "upstream_failed"
        assert summary["tasks"]["close_subscription"] in ("skipped", "upstream_failed")
    assert field in output and rule in output, output[-4000:]
