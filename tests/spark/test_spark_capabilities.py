"""Capabilities on data landed from real clients, and the guardrail reading the table it writes."""

from __future__ import annotations

from pathlib import Path

import capabilities
import pytest

from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.troubleshooting.guardrails import check_window_in_zone, load_capabilities

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parent / "data" / "demo_landing"
JAVA = ("apache-kafka-java", "4.4.0")
LIBRDKAFKA = ("confluent-kafka-python", "2.16.1-rdkafka-2.16.0")


@pytest.fixture(scope="module")
def zone(spark, tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("capabilities")
    capabilities.run(
        [
            *("--input", str(FIXTURE), "--output", str(root / "analytics")),
            *("--start", "2026-11-22T08:00:00Z", "--end", "2026-11-22T09:00:00Z"),
        ],
        spark,
    )
    return RunArea(root)


def test_each_library_lists_the_metrics_it_pushed_with_points_per_push(zone):
    rows = {(c.software_name, c.software_version, c.metric_name): c for c in load_capabilities(zone)}
    libraries = {(name, version) for name, version, _ in rows}
    assert libraries == {JAVA, LIBRDKAFKA}
    poll_idle = rows[(*LIBRDKAFKA, "org.apache.kafka.consumer.poll.idle.ratio.avg")]
    assert (poll_idle.instances, poll_idle.points_per_push) == (2, 1.0)  # two consumers, one point each
    per_node = rows[(*JAVA, "org.apache.kafka.producer.node.request.latency.max")]
    assert per_node.points_per_push == 2.0  # node -1 (bootstrap) and node 1
    assert not any(
        name == JAVA[0] and metric.startswith("org.apache.kafka.consumer.") for name, _, metric in rows
    )


def test_guardrail_warns_for_the_library_that_lacks_the_requested_metric(zone):
    warnings = check_window_in_zone(zone, ["org.apache.kafka.consumer.poll.idle"], {})
    assert [(w.kind, w.library) for w in warnings] == [("no_matching_metric", " ".join(JAVA))]
    assert "pushes none of org.apache.kafka.consumer.poll.idle" in warnings[0].message
    narrowed = {"client_software_name": "confluent-kafka-.*"}
    assert check_window_in_zone(zone, ["org.apache.kafka.consumer.poll.idle"], narrowed) == []


def test_guardrail_estimates_the_payload_against_telemetry_max_bytes(zone):
    (too_large,) = [
        w
        for w in check_window_in_zone(zone, ["*"], {}, telemetry_max_bytes=300)
        if w.library == " ".join(JAVA)
    ]
    assert too_large.kind == "payload_too_large" and "telemetry.max.bytes=300" in too_large.message
    assert check_window_in_zone(zone, ["*"], {}) == []  # far below the default 1 MiB
