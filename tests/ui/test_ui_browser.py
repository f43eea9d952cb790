"""The Client telemetry page in headless Chromium, served by a real ``airflow api-server``.

Real parts: Apache Kafka (session fixture) holding a time-boxed subscription this test creates,
Airflow 3's API server with the plugin loaded from its entry point and Airflow's own login (a JWT
from ``POST /auth/token`` in the UI's ``_token`` cookie), Debian's Chromium through ChromeDriver.
The analytics are small Parquet tables in the Spark apps' schemas (``analytics_data.py``).

``KIP714_UI_SCREENSHOT=docs/ui-screenshot.png`` also saves the screenshot there.
"""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kip714_dev.local_kafka.cluster import LocalKafkaCluster

from airflow_provider_kip714.analytics.run_owner import write_run_owner
from airflow_provider_kip714.storage.data_root import DATA_DIR_ENV, scheduled_area, troubleshoot_area
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.subscriptions.window_name import format_window_name, random_suffix
from airflow_provider_kip714.ui.plugin import PLUGIN_NAME, URL_PREFIX, URL_ROUTE, VIEW_NAME
from tests.ui.airflow_server import NO_ACCESS_PASSWORD, NO_ACCESS_USER, AirflowApiServer, start_api_server
from tests.ui.analytics_data import Landed, land_analytics
from tests.ui.charts import hover_point, legend_values
from tests.ui.chromium import WAIT_S


@pytest.fixture
def window(kafka_cluster: LocalKafkaCluster) -> Iterator[Subscription]:
    """A 30-minute window subscription on the real cluster, removed afterwards."""
    expires_at = (datetime.now(UTC) + timedelta(minutes=30)).replace(microsecond=0)
    subscription = Subscription.from_spec(
        name=format_window_name("ui-test", expires_at, random_suffix()),
        metrics="org.apache.kafka.consumer.",
        interval_ms=10_000,
        match={"client_id": "orders-.*"},
        expires_at=expires_at,
    )
    with ClientMetricsAdmin(to_kafka_python_kwargs(kafka_cluster.client_config())) as admin:
        admin.upsert(subscription)
        try:
            yield subscription
        finally:
            admin.delete(subscription.name)


TROUBLESHOOT_RUN = "manual__2026-11-22T08:00:00+00:00"
REPORT_SECRET = "principal User:alice from 10.0.0.7"


@pytest.fixture
def landed(tmp_path: Path) -> tuple[Path, Landed]:
    """The scheduled analytics, and one troubleshooting run of kip714_troubleshoot with its report."""
    data_dir = tmp_path / "kip714-data"
    run = troubleshoot_area(TROUBLESHOOT_RUN, data_dir)
    run.report.mkdir(parents=True)
    (run.report / "report.html").write_text(f"<h1>window report</h1><p>{REPORT_SECRET}</p>")
    write_run_owner(run, "kip714_troubleshoot", TROUBLESHOOT_RUN)
    return data_dir, land_analytics(scheduled_area(data_dir).analytics)


@pytest.fixture
def airflow_server(
    tmp_path: Path, kafka_cluster: LocalKafkaCluster, landed: tuple[Path, Landed]
) -> Iterator[AirflowApiServer]:
    data_dir, _ = landed
    server = start_api_server(
        tmp_path / "airflow", kafka_cluster.bootstrap_servers, {DATA_DIR_ENV: str(data_dir)}
    )
    try:
        yield server
    finally:
        assert server.stop() == 0, (server.log_path.read_text(errors="replace"))[-3000:]


def _status_without_login(url: str) -> tuple[int, str]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(url, timeout=30) as answer:
            return answer.status, ""
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("location", "")


def _get(url: str, token: str) -> tuple[int, str, bytes]:
    """(status, content type, body) of a GET with a bearer token, following no redirect."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers.get("content-type", ""), answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("content-type", ""), err.read()


def _check_access_and_escaping(server: AirflowApiServer, admin_token: str, data: Landed) -> None:
    """A logged-in user without DAG access sees no run, chart, report or subscription; errors are text."""
    base = f"{server.base_url}{URL_PREFIX}"
    run_key = troubleshoot_area(TROUBLESHOOT_RUN, Path("/")).root.name
    status, _, body = _get(f"{base}/reports/{run_key}/report.html", admin_token)
    assert status == 200 and REPORT_SECRET.encode() in body
    nobody = server.token(NO_ACCESS_USER, NO_ACCESS_PASSWORD)
    for path in (
        "/",
        f"/?run={run_key}",
        "/charts/brokers.png",
        f"/charts/client.png?client={data.client_instance_id}&metric={data.metric_name}",
        f"/reports/{run_key}/report.html",
    ):
        status, kind, body = _get(f"{base}{path}", nobody)
        assert status == 404, (path, status)
        assert kind.startswith("text/plain"), (path, kind)
        for secret in (REPORT_SECRET, data.client_id, "User:ANONYMOUS"):
            assert secret.encode() not in body, (path, secret)
    status, kind, body = _get(f"{base}/?run=%3Cscript%3Ealert(1)%3C/script%3E", admin_token)
    assert status == 404 and kind.startswith("text/plain") and b"<script>" not in body


def test_page_in_airflow_ui(
    airflow_server: AirflowApiServer,
    browser: object,
    window: Subscription,
    landed: tuple[Path, Landed],
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.wait import WebDriverWait

    _, data = landed
    base = airflow_server.base_url
    token = airflow_server.token()

    # The plugin is registered with Airflow: its app under /kip714 and a nav entry pointing there.
    plugins = {p["name"]: p for p in airflow_server.get_json("/api/v2/plugins", token)["plugins"]}
    plugin = plugins[PLUGIN_NAME]
    assert [app["url_prefix"] for app in plugin["fastapi_apps"]] == [URL_PREFIX]
    (view,) = plugin["external_views"]
    assert (view["name"], view["href"], view["url_route"], view["destination"]) == (
        VIEW_NAME,
        f"{URL_PREFIX}/",
        URL_ROUTE,
        "nav",
    )

    # Without Airflow credentials the page is not served: the browser is sent to Airflow's login.
    status, location = _status_without_login(f"{base}{URL_PREFIX}/")
    assert status in (302, 307)
    assert "/auth/login" in location

    _check_access_and_escaping(airflow_server, token, data)

    wait = WebDriverWait(browser, WAIT_S)
    browser.get(f"{base}/api/v2/monitor/health")  # type: ignore[attr-defined]
    browser.add_cookie({"name": "_token", "value": token, "path": "/"})  # type: ignore[attr-defined]

    # Reach the page through Airflow's own navigation: Browse > Client telemetry.
    browser.get(f"{base}/")  # type: ignore[attr-defined]
    browse = wait.until(
        expected_conditions.element_to_be_clickable((By.XPATH, "//button[normalize-space()='Browse']"))
    )
    browse.click()
    entry = wait.until(
        expected_conditions.element_to_be_clickable((By.XPATH, f"//a[normalize-space()='{VIEW_NAME}']"))
    )
    entry.click()
    frame = wait.until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "iframe")))
    assert frame.get_attribute("src") == f"{base}{URL_PREFIX}/"
    browser.switch_to.frame(frame)  # type: ignore[attr-defined]
    wait.until(expected_conditions.presence_of_element_located((By.ID, "brokers")))

    subscriptions = browser.find_element(By.ID, "subscriptions")  # type: ignore[attr-defined]
    rows = {
        row.find_element(By.CSS_SELECTOR, "td.name").text: row.find_element(
            By.CSS_SELECTOR, "td.expires"
        ).text
        for row in subscriptions.find_elements(By.CSS_SELECTOR, "tr.subscription")
    }
    assert rows.get(window.name) == window.expires_at.strftime("%Y-%m-%d %H:%M:%S")
    assert "expires in" in subscriptions.text

    # The full anomalies table is there, collapsed under the findings.
    anomalies = browser.find_element(By.ID, "anomalies")  # type: ignore[attr-defined]
    client_cells = [
        cell.get_attribute("textContent")
        for cell in anomalies.find_elements(By.CSS_SELECTOR, "tr.anomaly td.client_id")
    ]
    assert client_cells == [data.client_id]
    assert data.metric_name in anomalies.get_attribute("textContent")

    # Findings first: the spiking client's card, its chart answers hover with the value.
    wait.until(lambda driver: driver.find_elements(By.CSS_SELECTOR, '[data-chart="finding-0"] canvas'))
    card = browser.find_element(By.CSS_SELECTOR, "#findings article.card")  # type: ignore[attr-defined]
    assert data.client_id in card.text and data.metric_name in card.text
    values = browser.execute_script("return window.kip714Charts.charts['finding-0'].data[1]")  # type: ignore[attr-defined]
    hover_point(browser, "finding-0", values.index(max(v for v in values if v is not None)))
    wait.until(lambda driver: legend_values(driver, "finding-0")[1] == "450")
    # Inside Airflow's frame too, a legend entry hides its series and a second click shows it again.
    entry = browser.find_elements(By.CSS_SELECTOR, '[data-chart="finding-0"] .u-legend .u-series > th')[1]  # type: ignore[attr-defined]
    assert data.client_id in entry.text
    shown_flag = "return window.kip714Charts.charts['finding-0'].series[1].show"
    entry.click()
    wait.until(lambda driver: driver.execute_script(shown_flag) is False)
    assert "u-off" in entry.find_element(By.XPATH, "..").get_attribute("class")
    entry.click()
    wait.until(lambda driver: driver.execute_script(shown_flag) is True)
    metric_charts = browser.find_elements(By.CSS_SELECTOR, "#metrics [data-chart] canvas")  # type: ignore[attr-defined]
    assert metric_charts and browser.find_elements(By.CSS_SELECTOR, "#brokers [data-chart] canvas")  # type: ignore[attr-defined]

    browser.switch_to.default_content()  # type: ignore[attr-defined]
    shot = tmp_path / "ui-screenshot.png"
    assert browser.save_screenshot(str(shot))  # type: ignore[attr-defined]
    target = os.environ.get("KIP714_UI_SCREENSHOT")
    if target:
        shutil.copyfile(shot, target)
