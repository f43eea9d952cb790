"""Who sees what: Airflow's auth manager decides, per run's DAG and for the subscriptions table.

Airflow's real ``SimpleAuthManager`` with users from ``simple_auth_manager_users`` (``nobody`` has no
role, so it may read no DAG); authentication is overridden with those users, authorization is the
auth manager's own. The browser test (``tests/ui/test_ui_browser.py``) logs in as such a user through
a real API server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from airflow_provider_kip714.analytics.run_owner import write_run_owner
from airflow_provider_kip714.storage.data_root import scheduled_area, troubleshoot_area
from airflow_provider_kip714.ui.app import create_app
from tests.ui.analytics_data import land_analytics
from tests.unit.test_ui_page import PNG_MAGIC, data_dir  # noqa: F401  (fixture)

RUN_ID = "manual__2026-11-22T08:00:00+00:00"
SECRET_CLIENT = "payments-consumer-secret"


def _users() -> dict[str, object]:
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

    return {user.username: user for user in SimpleAuthManager.get_users()}


@pytest.fixture
def as_user(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:  # noqa: F811
    from airflow.api_fastapi import app as airflow_app
    from airflow.api_fastapi.core_api.security import get_user

    monkeypatch.setenv(
        "AIRFLOW__CORE__AUTH_MANAGER",
        "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
    )
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", "admin:admin,viewer:viewer,nobody:")
    monkeypatch.setenv("KIP714_UI_KAFKA_CONN_ID", "kip714_no_such_conn")
    monkeypatch.setattr(airflow_app._AuthManagerState, "instance", None)
    airflow_app.create_auth_manager()
    users = _users()
    area = troubleshoot_area(RUN_ID, data_dir)
    land_analytics(area.analytics, client_id=SECRET_CLIENT)
    area.report.mkdir(parents=True)
    (area.report / "report.html").write_text(f"<p>{SECRET_CLIENT} User:alice 10.0.0.7</p>")
    write_run_owner(area, "kip714_troubleshoot", RUN_ID)
    land_analytics(scheduled_area(data_dir).analytics)

    def client_for(name: str) -> TestClient:
        app = create_app()
        app.dependency_overrides[get_user] = lambda: users[name]
        return TestClient(app)

    yield client_for


def test_a_user_who_may_read_runs_sees_reports_and_subscriptions(as_user, data_dir: Path) -> None:  # noqa: F811
    key = troubleshoot_area(RUN_ID, data_dir).root.name
    for name in ("admin", "viewer"):
        with as_user(name) as client:
            page = client.get("/")
            assert page.status_code == 200
            assert f'href="?run={key}"' in page.text
            assert "Cannot read subscriptions" in page.text and "hidden:" not in page.text  # tried, no conn
            assert SECRET_CLIENT in client.get("/", params={"run": key}).text
            assert SECRET_CLIENT in client.get(f"/reports/{key}/report.html").text


def test_a_user_without_access_sees_no_run_no_report_no_subscriptions(as_user, data_dir: Path) -> None:  # noqa: F811
    key = troubleshoot_area(RUN_ID, data_dir).root.name
    with as_user("nobody") as client:
        for run in ("scheduled", key):
            answer = client.get("/", params={"run": run})
            assert answer.status_code == 404, run
            assert SECRET_CLIENT not in answer.text
            chart = client.get("/charts/client.png", params={"run": run, "client": "x", "metric": "y"})
            assert chart.status_code == 404 and not chart.content.startswith(PNG_MAGIC)
            assert client.get("/charts/brokers.png", params={"run": run}).status_code == 404
        report = client.get(f"/reports/{key}/report.html")
        assert report.status_code == 404 and SECRET_CLIENT not in report.text
        assert client.get(f"/reports/{key}/", follow_redirects=False).status_code == 404


def test_subscriptions_need_every_dag_using_the_connection(as_user, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_kip714.ui import access

    monkeypatch.setenv(access.DAG_IDS_ENV, "kip714_troubleshoot, kip714_reaper ,kip714_troubleshoot")
    assert access.subscription_dag_ids() == ["kip714_troubleshoot", "kip714_reaper"]
    users = _users()
    assert access.may_read_subscriptions(users["viewer"])
    assert not access.may_read_subscriptions(users["nobody"])
    assert access.may_read_runs(users["viewer"], "kip714_troubleshoot")
    assert not access.may_read_runs(users["nobody"], "kip714_troubleshoot")
    assert not access.may_read_runs(users["nobody"], None)


@pytest.mark.parametrize(
    "content",
    ["", "{", "[]", '{"dag_id": 7, "run_id": "r"}', '{"dag_id": "", "run_id": "r"}', '{"run_id": "r"}'],
)
def test_a_damaged_owner_file_means_unknown_owner(tmp_path: Path, content: str) -> None:
    from airflow_provider_kip714.analytics.run_owner import RUN_OWNER_FILE, RunOwner, read_run_owner

    area = troubleshoot_area(RUN_ID, tmp_path)
    assert read_run_owner(area) is None  # no file
    write_run_owner(area, "kip714_troubleshoot", RUN_ID)
    assert read_run_owner(area) == RunOwner("kip714_troubleshoot", RUN_ID)
    (area.root / RUN_OWNER_FILE).write_text(content)
    assert read_run_owner(area) is None  # then only users who may read every DAG's runs see it
