"""Browser tests run a real Airflow API server and a real Kafka: they are integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.chromium import CHROMEDRIVER, CHROMIUM, WAIT_S, start_chromium

UI_DIR = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if UI_DIR in item.path.parents and item.path.name.startswith("test_"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """Headless Chromium through ChromeDriver, one per test."""
    # A missing browser is a set-up failure, not a reason to skip: `make test` installs it.
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail("Chromium missing: run tests/ui/install_browser.sh (make test does)")
    driver = start_chromium(tmp_path / "chromium-profile")
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()
