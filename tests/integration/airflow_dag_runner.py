"""Run ``dag.test()`` for one DAG file in this process and print a JSON summary (used via subprocess).

Usage: python airflow_dag_runner.py DAG_FILE DAG_ID LOGICAL_DATE_ISO [RUN_CONF_JSON]
Prints {"state": ..., "tasks": {task_id: state}, "xcom": {task_id: return_value}} on the last line.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import datetime


def main() -> int:
    dag_file, dag_id, logical_date = sys.argv[1], sys.argv[2], datetime.fromisoformat(sys.argv[3])
    run_conf = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    spec = importlib.util.spec_from_file_location(f"dagfile_{dag_id}", dag_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dag = next(value for value in vars(module).values() if getattr(value, "dag_id", None) == dag_id)
    # run_after fixes the run id (manual__<run_after>), so a second call is a retry of the same run.
    run = dag.test(logical_date=logical_date, run_after=logical_date, run_conf=run_conf)

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(XComModel).filter_by(dag_id=dag_id, run_id=run.run_id, key="return_value").all()
        xcom = {row.task_id: row.value for row in rows}
        tasks = {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}
    print(
        json.dumps({"state": str(run.state), "run_id": run.run_id, "tasks": tasks, "xcom": xcom}, default=str)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
