"""The delivery app's broker metric names are the topic contract's (the app cannot import the provider)."""

from __future__ import annotations

import sys
from pathlib import Path

from airflow_provider_kip714.contract.topic import BrokerMetric

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark_apps"))

from kip714_common import delivery


def test_delivery_reads_the_broker_metrics_the_plugin_writes() -> None:
    used = {
        delivery.INSTANCE_COUNT,
        delivery.UNKNOWN_SUBSCRIPTION_REQUESTS,
        delivery.THROTTLES,
        delivery.PLUGIN_ERRORS,
        delivery.PLUGIN_DROPS,
    }
    assert used <= {metric.value for metric in BrokerMetric}
