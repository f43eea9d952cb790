"""Everything under tests/integration talks to real servers: mark it ``integration`` automatically."""

from __future__ import annotations

from pathlib import Path

import pytest
from object_storage import local_s3  # noqa: F401 (the session's S3 server, for any test here)
from subscription_fixtures import admin, cleanup  # noqa: F401 (a CLIENT_METRICS admin, for any test here)

INTEGRATION_DIR = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION_DIR in item.path.parents:
            item.add_marker(pytest.mark.integration)
