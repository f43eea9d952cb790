"""The demo's anomaly lines read the anomalies table through analytics.tables (nulls shown as '?')."""

from __future__ import annotations

from pathlib import Path

from kip714_dev.demo.summary import anomaly_lines

from airflow_provider_kip714.storage.data_root import scheduled_area
from tests.ui.analytics_data import land_analytics


def test_anomaly_lines_from_the_table(tmp_path: Path) -> None:
    area = scheduled_area(tmp_path)
    assert anomaly_lines(area) == []
    landed = land_analytics(area.analytics)
    (line,) = anomaly_lines(area)
    assert line.startswith("critical") and landed.client_id in line and landed.metric_name in line
    assert "(confluent-kafka-python 2.16.0, ?, User:ANONYMOUS)" in line  # no source address landed
    assert "nan" not in line and "None" not in line
