"""A run id maps to its own folder inside ``troubleshoot/``: never the data root, never a shared one.

``..`` and ``.`` used to map a troubleshooting zone onto the data root (its Spark apps then
rewrote the scheduled analytics), and ``a:b``, ``a+b``, ``a~b`` shared one folder.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_kip714.report import report_url_path
from airflow_provider_kip714.storage.data_root import safe_run_name, troubleshoot_area

FOLDER = re.compile(r"[A-Za-z0-9_-]{1,100}")
HOSTILE_RUN_IDS = [
    ".",
    "..",
    "...",
    "",
    "/",
    "../..",
    "../analytics",
    "a/../..",
    "a:b",
    "a+b",
    "a~b",
    "a_b",
    "a b",
    "a\x00b",
    "a\\b",
    "~",
    "_",
    "-",
    "run",
    "manual__2026-11-22T08:00:00+00:00",
    "manual__2026-11-22T08:00:00-00:00",
    "manual__2026-11-22T08_00_00_00_00",
    "é",
    "e\u0301",
    "\ud800",
    "<script>alert(1)</script>",
    "x" * 500,
    "x" * 500 + "y",
]
RUN_IDS = st.one_of(
    st.text(),
    st.text(alphabet=".:+~/_-\\ ", max_size=8),
    st.sampled_from(HOSTILE_RUN_IDS),
)


def _inside_troubleshoot(run_id: str, root: Path) -> bool:
    folder = troubleshoot_area(run_id, root).root
    return (
        folder.resolve().parent == (root / "troubleshoot").resolve()
        and FOLDER.fullmatch(folder.name) is not None
    )


def test_hostile_run_ids_get_distinct_folders_inside_troubleshoot(tmp_path: Path) -> None:
    names = [safe_run_name(run_id) for run_id in HOSTILE_RUN_IDS]
    assert len(set(names)) == len(HOSTILE_RUN_IDS), names
    for run_id in HOSTILE_RUN_IDS:
        assert _inside_troubleshoot(run_id, tmp_path), run_id


@pytest.mark.parametrize("run_id", ["..", ".", "../.."])
def test_dot_run_ids_never_reach_the_data_root(tmp_path: Path, run_id: str) -> None:
    zone = troubleshoot_area(run_id, tmp_path)
    assert zone.root.resolve() not in (tmp_path.resolve(), (tmp_path / "troubleshoot").resolve())
    assert zone.analytics.resolve() != (tmp_path / "analytics").resolve()


@settings(max_examples=400, deadline=None)
@given(st.lists(RUN_IDS, unique=True, min_size=2, max_size=20))
def test_distinct_run_ids_distinct_folders(run_ids: list[str]) -> None:
    names = [safe_run_name(run_id) for run_id in run_ids]
    assert len(set(names)) == len(run_ids)


@settings(max_examples=400, deadline=None)
@given(RUN_IDS)
def test_every_folder_is_one_plain_name_inside_troubleshoot(run_id: str) -> None:
    root = Path("/data/kip714")
    name = safe_run_name(run_id)
    assert FOLDER.fullmatch(name), name
    assert not name.startswith(".")
    assert troubleshoot_area(run_id, root).root == root / "troubleshoot" / name
    assert report_url_path(run_id) == f"/kip714/reports/{name}/report.html"


def test_names_stay_readable() -> None:
    assert safe_run_name("manual__2026-11-22T08:00:00+00:00").startswith("manual__2026-11-22T08_00_00_00_00-")
