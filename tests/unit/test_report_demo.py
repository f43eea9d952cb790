"""The demo fleet's report leads with the slow consumer: its card first, its chart against its group."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from airflow_provider_kip714.report import build_report
from airflow_provider_kip714.storage.data_root import RunArea
from tests.support.ui_demo_data import POLL_IDLE, land_demo_analytics
from tests.unit.test_report import cards, charts_by_id

END = datetime(2026, 11, 27, 21, 0, tzinfo=UTC)


def test_the_slow_consumers_card_comes_first_with_its_group_as_the_band(tmp_path: Path) -> None:
    zone = RunArea(tmp_path / "zone")
    land_demo_analytics(zone.analytics, END)
    result = build_report(zone, dag_id="kip714_troubleshoot")
    text = Path(result.html_path).read_text()
    sections = ('data-kind="delivery_gaps"', 'data-kind="convergence"', 'data-kind="capability"')
    first, *others = [card for card in cards(text) if not any(kind in card for kind in sections)]
    assert "audit-consumer-slow" in first and POLL_IDLE in first and 'class="card critical"' in first
    assert "its peers&#x27; median and spread (group_id=audit)" in first
    kinds = {re.search(r'data-kind="([a-z_]+)"', card).group(1) for card in others}  # type: ignore[union-attr]
    assert kinds >= {"anomaly", "silent_client"}
    chart = charts_by_id(text)["finding-0"]
    slow, median, _high, _low = chart["lines"]
    assert slow["label"] == "audit-consumer-slow" and min(v for v in slow["values"] if v is not None) == 0.02
    assert median["label"] == "peers' median (group_id=audit)" and min(median["values"]) > 0.9
    assert chart["bands"] == [{"high": 2, "low": 3, "fill": chart["bands"][0]["fill"]}]
    assert "3 peer(s) in group_id=audit" in chart["note"] and chart["shade"]
    assert result.findings == len(others) + 1
