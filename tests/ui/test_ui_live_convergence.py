"""Live convergence on the page: real Kafka, a real window subscription, real librdkafka clients.

The window is recorded as ``kip714_troubleshoot`` records it (``write_convergence_windows``) and its
telemetry landed with the real lander into the run's landing zone, as ``land_window`` does while the
window is open. The page is the plugin's FastAPI app in process (as ``tests/unit/test_ui_page.py``;
``test_ui_browser.py`` covers the real API server and login) reading the live subscriptions through
the ``kafka_default`` connection. One client id carries markup: it must come back as text.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Producer
from fastapi.testclient import TestClient
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

from airflow_provider_kip714.analytics.run_owner import write_run_owner
from airflow_provider_kip714.storage.data_root import DATA_DIR_ENV, troubleshoot_area
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.subscriptions.window_name import format_window_name, random_suffix
from airflow_provider_kip714.telemetry.landing import land_topic
from airflow_provider_kip714.troubleshooting.window import write_convergence_windows
from airflow_provider_kip714.ui.app import create_app

RUN_ID = "manual__2026-11-24T05:00:00+00:00"
METRICS = ["org.apache.kafka.producer."]
HOSTILE = "<b>bold</b>"


def _window(admin: ClientMetricsAdmin, label: str, match: dict[str, str]) -> Subscription:
    expires_at = (datetime.now(UTC) + timedelta(minutes=15)).replace(microsecond=0)
    subscription = Subscription.from_spec(
        name=format_window_name(label, expires_at, random_suffix()),
        metrics=METRICS,
        interval_ms=1000,
        match=match,
        expires_at=expires_at,
    )
    admin.upsert(subscription)
    return subscription


def _push(config: dict[str, str], client_ids: list[str], seconds: float) -> None:
    """Real librdkafka producers (telemetry on by default) for ``seconds``, then closed."""
    producers = [Producer({**config, "client.id": client_id}) for client_id in client_ids]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for producer in producers:
            producer.poll(0.1)
    for producer in producers:
        producer.flush(10)
    del producers  # destroying the handles sends the terminating pushes


@pytest.fixture
def page(kafka_cluster: LocalKafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    data_dir = tmp_path / "kip714-data"
    monkeypatch.setenv(DATA_DIR_ENV, str(data_dir))
    config = kafka_cluster.client_config()
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_DEFAULT", json.dumps({"conn_type": "kafka", "extra": config}))
    prefix = f"live-{uuid.uuid4().hex[:8]}"
    area = troubleshoot_area(RUN_ID, data_dir)
    write_run_owner(area, "kip714_troubleshoot", RUN_ID)
    with ClientMetricsAdmin(to_kafka_python_kwargs(config)) as admin:
        subscribed_at = datetime.now(UTC)
        window = _window(admin, "troubleshoot", {"client_id": f"{prefix}-.*"})
        untracked = _window(admin, "cli", {"client_id": f"nobody-{prefix}"})
        try:
            bounds = {
                "name": window.name,
                "start": subscribed_at.isoformat(),
                "end": window.expires_at.isoformat(),
            }
            write_convergence_windows(area, bounds, METRICS, {"client_id": f"{prefix}-.*"})
            _push(config, [f"{prefix}-fast", f"{prefix}-{HOSTILE}", f"other-{prefix}"], seconds=8)
            landed = land_topic(
                config,
                "_client_telemetry",
                area.landing,
                since=subscribed_at - timedelta(seconds=60),
                until=datetime.now(UTC),
            )
            assert landed.records > 0
            from airflow.api_fastapi import app as airflow_app
            from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
            from airflow.api_fastapi.core_api.security import get_user

            airflow_app.create_auth_manager()
            app = create_app()
            app.dependency_overrides[get_user] = lambda: SimpleAuthManagerUser(
                username="tester", role="admin"
            )
            with TestClient(app) as client:
                answer = client.get("/")
            yield {
                "status": answer.status_code,
                "text": answer.text,
                "window": window,
                "untracked": untracked,
                "prefix": prefix,
                "subscribed_at": subscribed_at,
            }
        finally:
            admin.delete(window.name)
            admin.delete(untracked.name)


def test_open_window_shows_how_far_it_has_spread(page: dict) -> None:
    assert page["status"] == 200
    text, prefix = page["text"], page["prefix"]
    live = text.split('<div id="convergence-live">', 1)[1].split("</div>\n<h3>After the window", 1)[0]
    assert 'class="live-badge">live</span>' in live
    computed = re.search(r"Computed (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", live)
    assert computed is not None
    assert datetime.strptime(computed.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) >= page[
        "subscribed_at"
    ].replace(microsecond=0)
    (row,) = re.findall(r'<tr class="live-window">.*?</tr>', live, re.S)
    assert page["window"].name in row
    assert '<td class="matched">2</td>' in row and '<td class="converged">2</td>' in row
    p100 = float(re.search(r'<td class="p100_seconds">([0-9.]+)</td>', row).group(1))
    assert 0 <= p100 < 30  # interval 1 s: each client asked again and pushed within seconds
    clients = re.findall(r'<tr class="live-client">.*?</tr>', live, re.S)
    assert len(clients) == 2 and all("not yet" not in c for c in clients)
    assert f"{prefix}-fast" in live and f"other-{prefix}" not in live  # the outsider is not matched
    # the client-controlled id is text, never markup
    assert f"{prefix}-&lt;b&gt;bold&lt;/b&gt;" in live and HOSTILE not in text
    # an open window no run recorded is named, not silently dropped
    assert page["untracked"].name in live.split('class="muted untracked"', 1)[1]
