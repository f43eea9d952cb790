"""The Client telemetry page's FastAPI app in-process: sections, empty data, errors, charts, reports.

Authentication is Airflow's ``get_user`` dependency; here it is overridden with a fixed user except
in the test that checks an anonymous browser is sent to the login page. The real API server, with
real authentication and a real cluster, is exercised by ``tests/ui/test_ui_browser.py``.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from airflow_provider_kip714.storage.data_root import DATA_DIR_ENV, scheduled_area, troubleshoot_area
from airflow_provider_kip714.ui.app import create_app
from tests.ui.analytics_data import land_analytics

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def kafka_conn(bootstrap: str) -> str:
    return json.dumps({"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap}})


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "kip714-data"
    monkeypatch.setenv(DATA_DIR_ENV, str(root))
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_DEFAULT", kafka_conn(f"127.0.0.1:{closed_port()}"))
    return root


@pytest.fixture
def client(data_dir: Path) -> Iterator[TestClient]:
    from airflow.api_fastapi import app as airflow_app
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.api_fastapi.core_api.security import get_user

    airflow_app.create_auth_manager()  # the configured one (simple) decides what the user may read
    app = create_app()
    app.dependency_overrides[get_user] = lambda: SimpleAuthManagerUser(username="tester", role="admin")
    with TestClient(app) as test_client:
        yield test_client


def test_empty_data_and_unreachable_cluster_are_explained_not_500(client: TestClient, data_dir: Path) -> None:
    page = client.get("/")
    assert page.status_code == 200
    text = page.text
    assert "Cannot read subscriptions through connection <code>kafka_default</code>" in text
    assert "cannot reach Kafka at 127.0.0.1:" in text
    assert f"No anomalies in <code>{data_dir / 'analytics'}/anomalies</code>" in text
    assert "has <code>kip714_rollups</code> run?" in text
    assert "No client rollups" in text
    assert "No broker metrics" in text


def test_missing_connection_is_shown(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIP714_UI_KAFKA_CONN_ID", "no_such_conn")
    text = client.get("/").text
    assert "connection <code>no_such_conn</code>" in text
    assert "isn&#39;t defined" in text or "not defined" in text


def test_landed_analytics_lead_with_the_finding_card_then_charts(client: TestClient, data_dir: Path) -> None:
    landed = land_analytics(scheduled_area(data_dir).analytics)
    text = client.get("/").text
    assert text.index('id="findings"') < text.index('id="metrics"') < text.index('id="subscriptions"')
    card = re.search(r'<article class="card critical".*?</article>', text, re.S)
    assert card is not None
    for expected in (
        landed.client_id,
        landed.client_instance_id,
        "confluent-kafka-python 2.16.0",
        "User:ANONYMOUS",
    ):
        assert expected in card.group(0)
    assert "450 against 200" in card.group(0) and 'data-chart="finding-0"' in card.group(0)
    charts = chart_data(text)["charts"]
    assert [c["id"] for c in charts] == ["finding-0", "metric-0", "metric-1", "brokers"]
    assert {c["title"] for c in charts[1:3]} == {
        landed.metric_name,
        "org.apache.kafka.producer.record.queue.time.avg",
    }
    assert "1 newest of 1." in text and "fetch-latency-high" in text  # the full table, collapsed
    assert "billing-producer" in text
    assert "144 pushes exported" in text
    assert "Live mode has written no state yet" in text


def test_filters_narrow_cards_and_charts(client: TestClient, data_dir: Path) -> None:
    landed = land_analytics(scheduled_area(data_dir).analytics)
    text = client.get("/", params={"client": "billing"}).text
    assert "<article" not in text and "(filtered)" in text
    charts = chart_data(text)["charts"]
    lines = {
        line["label"] for chart in charts if chart["id"].startswith("metric-") for line in chart["lines"]
    }
    assert lines == {"billing-producer"}
    assert (
        '<option value="confluent-kafka-python 2.16.0" selected>confluent-kafka-python 2.16.0</option>'
        in client.get("/", params={"library": "confluent-kafka-python 2.16.0"}).text
    )
    mine = client.get(
        "/", params={"client": landed.client_instance_id[:6].lower(), "principal": "User:ANONYMOUS"}
    ).text
    assert mine.count("<article") == 1
    assert client.get("/", params={"principal": "User:nobody"}).text.count("<article") == 0


def chart_data(text: str) -> dict:
    block = re.search(r'<script type="application/json" id="kip714-chart-data">(.*?)</script>', text, re.S)
    assert block is not None and "<" not in block.group(1)
    return json.loads(block.group(1))


def test_charts_are_png_images(client: TestClient, data_dir: Path) -> None:
    landed = land_analytics(scheduled_area(data_dir).analytics)
    chart = client.get(
        "/charts/client.png", params={"client": landed.client_instance_id, "metric": landed.metric_name}
    )
    assert chart.status_code == 200
    assert chart.headers["content-type"] == "image/png"
    assert chart.content.startswith(PNG_MAGIC)
    empty = client.get("/charts/client.png", params={"client": "nobody", "metric": landed.metric_name})
    assert empty.content.startswith(PNG_MAGIC)
    assert len(empty.content) < len(chart.content)
    brokers = client.get("/charts/brokers.png")
    assert brokers.content.startswith(PNG_MAGIC)


def test_troubleshooting_run_and_its_report(client: TestClient, data_dir: Path) -> None:
    zone = troubleshoot_area("manual__2026-11-22T08:00:00+00:00", data_dir)
    land_analytics(zone.analytics, client_id="payments-consumer")
    zone.report.mkdir(parents=True)
    (zone.report / "report.html").write_text("<h1>window report</h1><img src='latency.png'>")
    (zone.report / "latency.png").write_bytes(PNG_MAGIC + b"rest")
    key = zone.root.name

    overview = client.get("/").text
    assert f'href="reports/{key}/report.html"' in overview
    run_page = client.get("/", params={"run": key}).text
    assert "payments-consumer" in run_page
    assert client.get(f"/reports/{key}/report.html").text.startswith("<h1>window report")
    assert client.get(f"/reports/{key}/latency.png").headers["content-type"] == "image/png"
    assert client.get(f"/reports/{key}/", follow_redirects=False).headers["location"] == "report.html"
    assert client.get("/", params={"run": "../../etc"}).status_code == 404
    assert client.get("/", params={"run": "no-such-run"}).status_code == 404


def test_anonymous_browser_is_sent_to_airflow_login(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.api_fastapi import app as airflow_app

    monkeypatch.setattr(airflow_app._AuthManagerState, "instance", None)
    airflow_app.create_auth_manager()  # the configured one (simple), as the API server makes it
    with TestClient(create_app()) as anonymous:
        answer = anonymous.get("/", follow_redirects=False)
    assert answer.status_code in (302, 307)
    assert "/auth/" in answer.headers["location"]
    assert "next=" in answer.headers["location"]
