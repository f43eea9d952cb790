"""The broker metric names the Python side reads are the ones the Java plugin writes."""

from __future__ import annotations

import re
from pathlib import Path

from airflow_provider_kip714.contract.topic import BrokerMetric

TOPIC_CONTRACT = (
    Path(__file__).resolve().parents[2] / "broker_plugin/src/main/java/io/kip714/broker/TopicContract.java"
)


def java_constants() -> dict[str, str]:
    """``static final String NAME = "value";`` declarations of the plugin's ``TopicContract``."""
    pattern = re.compile(r'static final String (\w+) = "([^"]*)";')
    return dict(pattern.findall(TOPIC_CONTRACT.read_text()))


def test_every_broker_metric_is_declared_by_the_plugin_under_the_same_name() -> None:
    declared = java_constants()
    assert {metric.name: metric.value for metric in BrokerMetric}.items() <= declared.items()
