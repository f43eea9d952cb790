"""The broker plugin on Apache Kafka 3.7, the oldest line the README promises.

Kafka 3.7's ``RequestContext`` has no ``clientPort`` (added in 3.8): the plugin threw
``NoSuchFieldError`` on every push there, so no push landed. 3.7 also has no broker ``client-metrics``
metric group, and the plugin's broker records must still be written.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory
from plugin_topic import broker_records, client_records, read_topic, subscription
from telemetry_helpers import run_librdkafka_clients

from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.telemetry.landing import land_topic

KAFKA_37 = "3.7.2"


def test_plugin_loads_on_kafka_37_and_librdkafka_pushes_land(
    kafka_cluster_factory: LocalKafkaClusterFactory, tmp_path: Path
) -> None:
    cluster = kafka_cluster_factory.start(kafka_version=KAFKA_37, name="kafka-3.7")
    try:
        assert cluster.plugin_loaded, "build the plugin first: make plugin"
        bootstrap, config = cluster.bootstrap_servers, cluster.client_config()
        prefix = f"k37-{uuid.uuid4().hex[:6]}"
        with subscription(
            bootstrap, f"kip714-test-{prefix}", f"client_id={prefix}-.*", metrics=("org.apache.kafka.",)
        ):
            ids = run_librdkafka_clients(config, prefix, seconds=6)
        records = read_topic(
            bootstrap,
            lambda rs: (
                all(client_records(rs, client_id) for client_id in ids.values())
                and client_records(rs, ids["producer"])[-1].headers[Header.TERMINATING] == "true"
                and bool(broker_records(rs))
            ),
        )
        for client_id in ids.values():
            mine = client_records(records, client_id)
            assert {r.headers[Header.CLIENT_SOURCE_PORT] for r in mine} == {""}, "3.7 gives no source port"
            assert {r.headers[Header.CLIENT_SOURCE_ADDRESS] for r in mine} == {"127.0.0.1"}
            assert {r.headers[Header.CLIENT_SOFTWARE_NAME] for r in mine} == {"confluent-kafka-python"}
            assert {r.headers[Header.PUSH_INTERVAL_MS] for r in mine} == {""}  # 3.x: not passed
            assert all(r.metric_names() for r in mine), "every push carries metrics"
        # The broker-metrics task runs although 3.7 has no client-metrics group: the plugin's own series.
        assert broker_records(records)[0].headers[Header.NODE_ID] == str(cluster.node_id)

        result = land_topic(config, cluster.telemetry_topic, tmp_path / "zone", fsync=False)
        assert result.records >= len(records) and result.quarantined == 0

        log = cluster.log_path.read_text(errors="replace")
        assert "NoSuchFieldError" not in log
        assert "could not export a push" not in log
    finally:
        cluster.stop()
