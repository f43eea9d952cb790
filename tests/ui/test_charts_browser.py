"""The report's interactive charts in headless Chromium, opened offline from a local folder.

Real parts: the report built from the demo fleet's tables (``ui_demo_data``), the bundled uPlot, Debian's
Chromium through ChromeDriver with networking useless (``file://``, nothing else to fetch). A person's
moves: hover a point and read its value in the legend, click a legend entry to hide that series.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow_provider_kip714.report import build_report
from airflow_provider_kip714.storage.data_root import RunArea
from tests.support.ui_demo_data import land_demo_analytics
from tests.ui.charts import hover_point, legend_values
from tests.ui.chromium import WAIT_S

END = datetime(2026, 11, 27, 21, 0, tzinfo=UTC)


def test_report_charts_answer_hover_and_toggle_offline(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    zone = RunArea(tmp_path / "zone")
    land_demo_analytics(zone.analytics, END)
    report = Path(build_report(zone, dag_id="kip714_troubleshoot").html_path)
    browser.get(report.as_uri())
    wait = WebDriverWait(browser, WAIT_S)
    wait.until(lambda driver: driver.find_elements(By.CSS_SELECTOR, '[data-chart="finding-0"] canvas'))
    first_card = browser.find_element(By.CSS_SELECTOR, "article.card")
    assert "audit-consumer-slow" in first_card.text and "poll.idle.ratio" in first_card.text
    drawn = browser.execute_script("return Object.keys(window.kip714Charts.charts).length")
    assert drawn == len(browser.find_elements(By.CSS_SELECTOR, "[data-chart]"))

    # Hover the slow consumer's last bucket: the legend shows its value, then its peers' median.
    values = browser.execute_script("return window.kip714Charts.charts['finding-0'].data[1]")
    last = max(i for i, v in enumerate(values) if v is not None)
    hover_point(browser, "finding-0", last)
    wait.until(lambda driver: legend_values(driver, "finding-0")[1] == "0.02")
    shown = legend_values(browser, "finding-0")
    assert float(shown[2]) > 0.9, shown  # the peers' median at the same moment

    # Click the peers' median in the legend: that series is hidden, and shown again on a second click.
    entry = browser.find_elements(By.CSS_SELECTOR, '[data-chart="finding-0"] .u-legend .u-series > th')[2]
    assert "peers' median" in entry.text
    entry.click()
    shown_flag = "return window.kip714Charts.charts['finding-0'].series[2].show"
    wait.until(lambda driver: driver.execute_script(shown_flag) is False)
    assert "u-off" in entry.find_element(By.XPATH, "..").get_attribute("class")
    entry.click()
    wait.until(lambda driver: driver.execute_script(shown_flag) is True)

    # Nothing was fetched from the network: every resource is the file itself.
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(r => r.name)")
    assert resources == []
