"""The page's delivery and convergence panels: silent clients with when they went silent, the 50/90/100 %
times per window, and client-controlled strings shown as text."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from airflow_provider_kip714.storage.data_root import scheduled_area
from tests.unit.test_report_fleet_health import HOSTILE, make_area
from tests.unit.test_ui_page import client, data_dir  # noqa: F401  (fixtures)


def test_panels_show_silent_clients_and_convergence_escaped(client: TestClient, data_dir: Path) -> None:  # noqa: F811
    make_area(Path(scheduled_area().root))
    text = client.get("/").text
    assert "<h2>Delivery: silent clients</h2>" in text
    assert text.count('<tr class="silent">') == 2  # the killed client and the broker's unseen instance
    assert "2026-03-01 10:20:00" in text and "2026-03-01 10:05:00" in text
    assert HOSTILE not in text and "&lt;script&gt;" in text
    assert text.count('<tr class="window">') == 1 and "<td>4</td>" in text


def test_panels_without_tables_say_so(client: TestClient, data_dir: Path) -> None:  # noqa: F811
    text = client.get("/").text
    assert "no delivery table: has delivery.py run?" in text
    assert "No convergence table in" in text
