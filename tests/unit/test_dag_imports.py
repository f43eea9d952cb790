"""The product DAG files import under Airflow 3 without errors or warnings (a fresh process each run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from airflow_provider_kip714.troubleshooting.window import SENSOR_RETRIES

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGS = REPO_ROOT / "dags"
PARSE = """
import json, sys, warnings
from pathlib import Path
import kafka  # third-party import-time DeprecationWarnings happen here, before recording
from airflow.dag_processing.dagbag import DagBag
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    bag = DagBag(dag_folder=sys.argv[1], bundle_path=Path(sys.argv[1]), bundle_name="kip714-test")
ours = [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught
        if "/site-packages/" not in w.filename or "airflow" in str(w.message).lower()]
dags = {dag_id: {"tasks": sorted(t.task_id for t in dag.tasks),
                 "teardowns": sorted(t.task_id for t in dag.tasks if t.is_teardown),
                 "setups": sorted(t.task_id for t in dag.tasks if t.is_setup),
                 "retries": {t.task_id: t.retries for t in dag.tasks},
                 "schedule": type(dag.timetable).__name__, "params": sorted(dag.params.keys()),
                 "kafka_conn_ids": sorted({t.kafka_config_id for t in dag.tasks
                                           if isinstance(getattr(t, "kafka_config_id", None), str)})}
        for dag_id, dag in bag.dags.items()}
print(json.dumps({"errors": {k: str(v) for k, v in bag.import_errors.items()},
                  "captured": {k: list(map(str, v)) for k, v in bag.captured_warnings.items()},
                  "warnings": ours, "dags": dags}))
"""


def parse_dags(tmp_path: Path, extra_env: dict[str, str] | None = None) -> dict:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "KIP714_"))},
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "KIP714_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(REPO_ROOT),
        **(extra_env or {}),
    }
    done = subprocess.run(
        [sys.executable, "-c", PARSE, str(DAGS)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_product_dags_import_cleanly(tmp_path: Path) -> None:
    parsed = parse_dags(tmp_path)
    assert parsed["errors"] == {}
    assert parsed["captured"] == {}
    assert parsed["warnings"] == []
    dags = parsed["dags"]
    assert {"kip714_troubleshoot", "kip714_rollups", "kip714_reaper"} <= set(dags)

    troubleshoot = dags["kip714_troubleshoot"]
    assert troubleshoot["setups"] == ["open_subscription"]
    assert troubleshoot["teardowns"] == ["check_subscription_gone", "close_subscription"]
    assert {"write_rules", "analytics", "report", "validate_request"} <= set(troubleshoot["tasks"])
    # only the sensor retries (apache/airflow #67287; SENSOR_RETRIES): it opens and deletes nothing
    retrying = {task: retries for task, retries in troubleshoot["retries"].items() if retries}
    assert retrying == {"wait_for_pushes": SENSOR_RETRIES} and SENSOR_RETRIES >= 1
    assert {
        "client_id",
        "client_source_port",
        "metrics",
        "interval_ms",
        "window_seconds",
        "thresholds",
    } <= set(troubleshoot["params"])
    rollups = dags["kip714_rollups"]
    assert rollups["tasks"] == ["analytics", "land"]
    assert rollups["schedule"] == "CronDataIntervalTimetable"  # hourly data intervals, not zero-length
    assert rollups["kafka_conn_ids"] == ["kafka_default"]
    # one mapped reap task per cluster, the clusters read at run time (environment + recorded)
    assert dags["kip714_reaper"]["tasks"] == ["reap_expired_subscriptions", "window_clusters"]
    # the findings' consumers: on the kip714_findings asset, and on a timer (alerts ten minutes, windows five)
    assert dags["kip714_alerts"]["tasks"] == ["send_alerts"]
    assert dags["kip714_alerts"]["schedule"] == "AssetOrTimeSchedule"
    assert dags["kip714_auto_window"]["tasks"] == ["open_window", "plan"]
    assert dags["kip714_auto_window"]["schedule"] == "AssetOrTimeSchedule"
    assert "opened_by_finding" in troubleshoot["params"]


def test_scheduled_dags_take_their_connections_from_the_environment(tmp_path: Path) -> None:
    parsed = parse_dags(
        tmp_path, {"KIP714_KAFKA_CONN_ID": "kafka_prod", "KIP714_REAPER_CONN_IDS": "kafka_prod, kafka_eu,"}
    )
    assert parsed["errors"] == {}
    dags = parsed["dags"]
    assert dags["kip714_rollups"]["kafka_conn_ids"] == ["kafka_prod"]
    assert dags["kip714_reaper"]["tasks"] == ["reap_expired_subscriptions", "window_clusters"]


def test_a_bad_connection_id_in_the_environment_is_an_import_error_naming_it(
    tmp_path: Path,
) -> None:
    parsed = parse_dags(tmp_path, {"KIP714_REAPER_CONN_IDS": "kafka_default,bad id!"})
    [error] = [text for path, text in parsed["errors"].items() if "kip714_reaper" in path]
    assert "KIP714_REAPER_CONN_IDS: 'bad id!' is not a connection id" in error


def test_connection_settings_defaults_and_order() -> None:
    from airflow_provider_kip714.settings import reaper_conn_ids, scheduled_kafka_conn_id

    assert scheduled_kafka_conn_id({}) == "kafka_default"
    assert scheduled_kafka_conn_id({"KIP714_KAFKA_CONN_ID": "  "}) == "kafka_default"
    assert reaper_conn_ids({"KIP714_KAFKA_CONN_ID": "kafka_prod"}) == ["kafka_prod"]
    assert reaper_conn_ids({"KIP714_REAPER_CONN_IDS": "b,a,b"}) == ["b", "a"]
