"""Report files are served only from one run's report folder, whatever the URL says."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.ui.report_files import media_type, report_file


@pytest.fixture
def root(tmp_path: Path) -> Path:
    report = tmp_path / "troubleshoot" / "run_1" / "report"
    report.mkdir(parents=True)
    (report / "report.html").write_text("<p>ok</p>")
    (report / "plot.png").write_bytes(b"png")
    (report / "notes.txt").write_text("not served")
    (report / ".hidden.html").write_text("hidden")
    (tmp_path / "secret.html").write_text("outside")
    (report / "escape.html").symlink_to(tmp_path / "secret.html")
    return tmp_path


def run(root: Path, folder: str = "run_1") -> RunArea:
    return RunArea(root / "troubleshoot" / folder)


def test_serves_report_files(root: Path) -> None:
    found = report_file(run(root), "report.html")
    assert found == (root / "troubleshoot" / "run_1" / "report" / "report.html").resolve()
    assert media_type(found) == "text/html; charset=utf-8"
    assert media_type(report_file(run(root), "plot.png")) == "image/png"


@pytest.mark.parametrize(
    ("run_folder", "file_name"),
    [
        ("run_1", "../../../secret.html"),
        ("run_1", "..\\secret.html"),
        ("run_1", "report.html\x00.png"),
        ("run_1", "escape.html"),
        ("run_1", ".hidden.html"),
        ("run_1", "notes.txt"),
        ("run_1", "missing.html"),
        ("run_2", "report.html"),
        ("run_1", ""),
    ],
)
def test_refuses_anything_else(root: Path, run_folder: str, file_name: str) -> None:
    assert report_file(run(root, run_folder), file_name) is None
