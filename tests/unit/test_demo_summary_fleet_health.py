"""The demo's printed silent clients and convergence lines, from the same tables as the report."""

from __future__ import annotations

from pathlib import Path

from kip714_dev.demo.summary import convergence_lines, silent_lines

from tests.unit.test_report_fleet_health import HOSTILE, make_area


def test_silent_and_convergence_lines(tmp_path: Path) -> None:
    area = make_area(tmp_path)
    assert silent_lines(area) == [
        "silent since 10:05:00 UTC: 1 instance(s) on broker 1: ?",
        f"silent since 10:20:00 UTC: {HOSTILE} (confluent-kafka-python): no push since 10:20",
    ]
    assert convergence_lines(area) == [
        f"kip714-{HOSTILE}: 1/2 clients; 50 % 4.0 s, 90 % not yet, 100 % not yet"
    ]
