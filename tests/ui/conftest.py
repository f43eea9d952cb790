"""Browser tests run a real Airflow API server and a real Kafka: they are integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

UI_DIR = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if UI_DIR in item.path.parents and item.path.name.startswith("test_"):
            item.add_marker(pytest.mark.integration)
