"""Hostile request text and hostile client-controlled data never become markup, and never a 500.

``GET /kip714/?zone=<script>…</script>`` used to answer an HTML error page with the script in it, on
Airflow's own origin; a client id like ``$\\foo$`` made the chart answer 500. Every route and every
parameter (and the old ``zone`` name) is tried with many payloads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from airflow_provider_kip714.report import build_report
from airflow_provider_kip714.storage.data_root import scheduled_area, troubleshoot_area
from airflow_provider_kip714.ui.app import create_app
from tests.ui.analytics_data import land_analytics
from tests.unit.test_ui_page import PNG_MAGIC, data_dir  # noqa: F401  (fixture)

PAYLOADS = [
    "<script>alert(1)</script>",
    "<ScRiPt>alert(1)</sCrIpT>",
    '"><img src=x onerror=alert(1)>',
    "'><svg/onload=alert(1)>",
    "</title><script>alert(1)</script>",
    "<iframe src=javascript:alert(1)>",
    "<a href='javascript:alert(1)'>x</a>",
    "&lt;script&gt;",
    "{{7*7}}<b>",
    "%3Cscript%3Ealert(1)%3C/script%3E",
    "<script>alert(1)</script>\r\nSet-Cookie: x=1",
    "\x00<script>",
    "<" * 300,
]
ROUTES = [
    ("/", ("run", "zone", "client")),
    ("/charts/client.png", ("run", "zone", "client", "metric")),
    ("/charts/brokers.png", ("run", "zone")),
]
MARKUP = ("<script", "<svg", "<iframe", "<img src=x", "href='javascript", "{{7*7}}<b>", "<<")
"""Raw fragments of the payloads; neither the page nor the report has any of them of its own, once
their own script elements (the chart data, the bundled chart code) are set aside (``without_own_scripts``)."""
OWN_SCRIPT = re.compile(r'<script (?:type="application/json" )?id="kip714-[a-z-]+">.*?</script>', re.S)


def without_own_scripts(html: str) -> str:
    """The page minus its own script elements. A payload that closed one early would leave its rest
    (``<script>...``) behind, where ``MARKUP`` finds it."""
    data = re.findall(r'<script type="application/json" id="kip714-[a-z-]+">(.*?)</script>', html, re.S)
    assert all("<" not in block and ">" not in block for block in data)  # JSON escapes them
    return OWN_SCRIPT.sub("", html)


@pytest.fixture
def client(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:  # noqa: F811
    monkeypatch.setenv("KIP714_UI_KAFKA_CONN_ID", "kip714_no_such_conn")  # no 5 s wait per page
    from airflow.api_fastapi import app as airflow_app
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.security import get_user

    airflow_app.create_auth_manager()
    app = create_app()
    app.dependency_overrides[get_user] = lambda: SimpleAuthManagerUser(username="tester", role="admin")
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def _no_markup(answer: object, payload: str) -> None:
    assert answer.status_code < 500, (answer.status_code, payload)  # type: ignore[attr-defined]
    kind = answer.headers.get("content-type", "")  # type: ignore[attr-defined]
    body = answer.text if not kind.startswith("image/") else ""  # type: ignore[attr-defined]
    if kind.startswith("text/html"):
        lowered = without_own_scripts(body).lower()
        assert not any(marker in lowered for marker in MARKUP), (payload, body[:300])
    elif body:
        assert kind.startswith(("text/plain", "application/json")), kind
        assert answer.headers.get("x-content-type-options") == "nosniff"  # type: ignore[attr-defined]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_request_text_is_never_markup(client: TestClient, payload: str) -> None:
    for path, names in ROUTES:
        for name in names:
            params = {"client": "c", "metric": "m", name: payload}
            _no_markup(client.get(path, params=params), payload)
    segment = quote(payload, safe="")
    for path in (f"/reports/{segment}/report.html", f"/reports/scheduled/{segment}", f"/reports/{segment}/"):
        _no_markup(client.get(path, follow_redirects=False), payload)


def test_error_answers_are_plain_text(client: TestClient) -> None:
    answer = client.get("/", params={"run": "<script>alert(1)</script>"})
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/plain")
    assert "<script>" not in answer.text
    missing = client.get("/charts/client.png", params={"metric": "<script>"})
    assert missing.status_code == 422 and missing.headers["content-type"].startswith("text/plain")
    assert "<script>" not in missing.text and "client" in missing.text


HOSTILE_DATA = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "$\\foo$",
    "$\\frac{a}{$",
    "a_b^c$#%&~",
]


@pytest.mark.parametrize("text", HOSTILE_DATA)
def test_hostile_client_data_on_page_chart_and_report(
    client: TestClient,
    data_dir: Path,  # noqa: F811
    text: str,
) -> None:
    analytics = scheduled_area(data_dir).analytics
    landed = land_analytics(analytics, client_id=text, metric=f"org.apache.kafka.{text}", attributes_key=text)
    page = client.get("/")
    _no_markup(page, text)
    assert page.status_code == 200
    chart = client.get(
        "/charts/client.png", params={"client": landed.client_instance_id, "metric": landed.metric_name}
    )
    assert chart.status_code == 200 and chart.content.startswith(PNG_MAGIC)
    assert len(chart.content) > 5000  # the chart itself, not the "no rollups" message
    # The report task builds from the same tables: it must finish and escape the same strings.
    area = troubleshoot_area(f"manual__{text}", data_dir)
    land_analytics(area.analytics, client_id=text, metric=f"org.apache.kafka.{text}", attributes_key=text)
    result = build_report(area, title=f"report {text}")
    html = Path(result.html_path).read_text()
    assert result.metrics_plotted >= 1 and result.findings == 1
    assert not any(marker in without_own_scripts(html).lower() for marker in MARKUP), html[:300]
