"""Run ``dag.test()`` for one DAG file in this process and print a JSON summary (used via subprocess).

Usage: python airflow_dag_runner.py DAG_FILE DAG_ID LOGICAL_DATE_ISO [RUN_CONF_JSON]
Prints {"state": ..., "tasks": {task_id: state}, "xcom": {task_id: return_value}} on the last line.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import datetime


def load_dag(dag_file: str, dag_id: str):  # type: ignore[no-untyped-def]
    """The DAG ``dag_id`` of ``dag_file``, loaded as Airflow's DAG processor would import the file."""
    spec = importlib.util.spec_from_file_location(f"dagfile_{dag_id}", dag_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return next(value for value in vars(module).values() if getattr(value, "dag_id", None) == dag_id)


def print_summary(dag_id: str, run, every_key: bool = False) -> None:  # type: ignore[no-untyped-def]
    """The last line: state, run id, task states, XComs (``task`` -> return value, or ``task.key``)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        query = session.query(XComModel).filter_by(dag_id=dag_id, run_id=run.run_id)
        if every_key:
            xcom = {f"{row.task_id}.{row.key}": row.value for row in query.all()}
        else:
            xcom = {row.task_id: row.value for row in query.filter_by(key="return_value").all()}
        tasks = {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}
    print(
        json.dumps({"state": str(run.state), "run_id": run.run_id, "tasks": tasks, "xcom": xcom}, default=str)
    )


def main() -> int:
    dag_file, dag_id, logical_date = sys.argv[1], sys.argv[2], datetime.fromisoformat(sys.argv[3])
    run_conf = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    dag = load_dag(dag_file, dag_id)
    # run_after fixes the run id (manual__<run_after>), so a second call is a retry of the same run.
    print_summary(dag_id, dag.test(logical_date=logical_date, run_after=logical_date, run_conf=run_conf))
    return 0


if __name__ == "__main__":
    sys.exit(main())
