"""The findings-first views (report cards and charts, the page's live section) keep client text as data,
and the live section says how fresh live mode's data is, what is open and which windows it opened.

Client ids and metric names carry markup, matplotlib math text, right-to-left overrides and control
characters; live mode's state is written through ``LiveStore`` as live mode writes it.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from airflow_provider_kip714.findings.model import ClientIdentity, Finding, FindingKind, Severity
from airflow_provider_kip714.findings.store import AutoWindow, FindingsLedger, LiveStatus, LiveStore
from airflow_provider_kip714.report import build_report
from airflow_provider_kip714.storage.data_root import troubleshoot_area
from tests.ui.analytics_data import land_analytics
from tests.unit.test_ui_hostile_input import MARKUP, client, without_own_scripts  # noqa: F401  (fixture)
from tests.unit.test_ui_page import data_dir  # noqa: F401  (fixture)

HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "$\\frac{a}{$x$",
    "\u202eevil\u202c-rtl",
    "ctl\x1b[2J\x00\nline",
    "</script><script>alert(2)</script>",
]
RAW = ("\x1b", "\x00", "\u202e")
"""Characters that must reach the page only as visible escapes."""


def chart_data(html: str) -> dict:
    block = re.search(r'<script type="application/json" id="kip714-chart-data">(.*?)</script>', html, re.S)
    assert block is not None
    return json.loads(block.group(1))


@pytest.mark.parametrize("text", HOSTILE)
def test_report_cards_and_charts_keep_client_text_as_data(tmp_path: Path, text: str) -> None:
    area = troubleshoot_area(f"manual__{text}", tmp_path)
    land_analytics(area.analytics, client_id=text, metric=f"org.apache.kafka.{text}", attributes_key=text)
    html = Path(build_report(area, title=f"report {text}").html_path).read_text()
    visible = without_own_scripts(html)
    assert not any(marker in visible.lower() for marker in MARKUP)
    assert not any(char in html for char in RAW)
    data = chart_data(html)
    labels = [line["label"] for chart in data["charts"] for line in chart["lines"]]
    shown = text.encode("unicode_escape").decode() if any(c in text for c in (*RAW, "\n")) else text
    assert any(shown[:20] in label for label in labels), (shown, labels)
    assert any(text in chart["title"] or shown in chart["title"] for chart in data["charts"])


def _live_state(root: Path, text: str, now: datetime) -> Finding:
    store = LiveStore(root)
    finding = Finding(
        kind=FindingKind.ANOMALY,
        severity=Severity.CRITICAL,
        since=now - timedelta(minutes=7),
        summary=f"poll idle ratio 0.02, peers' median 0.97 {text}",
        client=ClientIdentity(
            client_instance_id="SlOwSlOwSlOwSlOwSlOw01",
            client_id=text,
            client_software_name="confluent-kafka-python",
            client_software_version="2.16.0",
            principal="User:ANONYMOUS",
        ),
        metric_name=f"org.apache.kafka.consumer.poll.idle.ratio.avg{text}",
        observed=0.02,
        expected=0.97,
        against="peers",
        peer_group="group_id=audit",
    )
    ledger = FindingsLedger()
    ledger.queue(finding, now)
    store.write_ledger(ledger)
    store.write_status(LiveStatus(updated_at=now - timedelta(seconds=23), data_through=now, run_id="live__1"))
    windows = [
        AutoWindow(
            "auto__open",
            finding.finding_id,
            ("SlOwSlOwSlOwSlOwSlOw01",),
            now,
            now + timedelta(minutes=30),
            text,
        ),
        AutoWindow(
            "auto__over",
            finding.finding_id,
            ("x",),
            now - timedelta(hours=2),
            now - timedelta(hours=1),
            "old",
        ),
    ]
    store.write_auto_windows(windows)
    return finding


@pytest.mark.parametrize("text", ["audit-consumer-slow", *HOSTILE])
def test_live_section_says_age_open_findings_and_open_windows(
    client: TestClient,  # noqa: F811
    data_dir: Path,  # noqa: F811
    text: str,
) -> None:
    now = datetime.now(UTC)
    _live_state(data_dir, text, now)
    page = client.get("/")
    assert page.status_code == 200
    html = page.text
    live = html[html.index('id="live"') : html.index('id="filters"')]
    assert re.search(r"updated 2[3-9] s ago", live), live[:400]
    assert '<meta http-equiv="refresh" content="30">' in html
    assert live.count("<article") == 1 and "(7 min ago, still open)" in live
    assert "0.02" in live and "its peers&#x27; median and spread (group_id=audit)" in live
    assert live.count('class="auto-window"') == 1 and "auto__open" in live and "auto__over" not in live
    assert not any(marker in without_own_scripts(html).lower() for marker in MARKUP)
    assert not any(char in live for char in RAW)
    if text == "audit-consumer-slow":
        assert "audit-consumer-slow" in live


def test_without_live_state_the_page_says_so_and_does_not_reload(
    client: TestClient,  # noqa: F811
) -> None:
    html = client.get("/").text
    assert "Live mode has written no state yet" in html and 'http-equiv="refresh"' not in html
