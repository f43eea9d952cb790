"""The window guardrail on hand-made capabilities: prefix rules, library selectors, payload estimate."""

from __future__ import annotations

from airflow_provider_kip714.troubleshooting.guardrails import (
    Capability,
    check_window,
    estimate_push_bytes,
    prefix_matches,
)

JAVA = [
    Capability("apache-kafka-java", "3.9.1", f"org.apache.kafka.producer.m{i:03d}", 1.0) for i in range(100)
]
RDKAFKA = [
    Capability("librdkafka", "2.16.0", "org.apache.kafka.producer.record.queue.time.max", 1.0),
    Capability("librdkafka", "2.16.0", "org.apache.kafka.producer.node.request.latency.max", 3.0),
]


def test_prefix_rules_follow_kafka():
    assert prefix_matches("org.apache.kafka.producer.x", ["org.apache.kafka.producer."])
    assert prefix_matches("anything", ["*"]) and prefix_matches("anything", [""])
    assert not prefix_matches("org.apache.kafka.consumer.x", ["org.apache.kafka.producer."])


def test_no_matching_metric_is_reported_per_library_and_selectors_narrow_libraries():
    warnings = check_window([*JAVA, *RDKAFKA], ["org.apache.kafka.producer.record"], {})
    assert [(w.kind, w.library) for w in warnings] == [("no_matching_metric", "apache-kafka-java 3.9.1")]
    only_rdkafka = {"client_software_name": "librdkafka"}
    assert check_window([*JAVA, *RDKAFKA], ["org.apache.kafka.producer.record"], only_rdkafka) == []
    assert check_window([*JAVA, *RDKAFKA], [], {}) == []  # a blocking window asks for nothing
    assert check_window([], ["org.apache.kafka.consumer."], {}) == []  # no table: nothing to judge by


def test_payload_estimate_grows_with_points_and_warns_near_and_over_the_limit():
    assert estimate_push_bytes([RDKAFKA[1]]) > estimate_push_bytes([RDKAFKA[0]])
    java_size = estimate_push_bytes(JAVA)
    assert 8_000 < java_size < 12_000  # the Java client's full set is about 10 KB decompressed
    over = check_window(JAVA, ["*"], {}, telemetry_max_bytes=java_size - 1)
    assert [w.kind for w in over] == ["payload_too_large"]
    near = check_window(JAVA, ["*"], {}, telemetry_max_bytes=int(java_size / 0.9))
    assert [w.kind for w in near] == ["payload_near_limit"]
    assert check_window(JAVA, ["*"], {}, telemetry_max_bytes=java_size * 2) == []
