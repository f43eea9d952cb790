"""Run ``dag.test()`` on some tasks of a DAG file (``dag.partial_subset``) and print a JSON summary.

Usage: python subset_dag_runner.py DAG_FILE DAG_ID TASK_IDS(comma) LOGICAL_DATE_ISO [RUN_CONF_JSON]
Prints the same last line as ``airflow_dag_runner.py``: {"state", "run_id", "tasks", "xcom"}. For steps
worth testing without the whole window (the form's validation and guardrail, then the report; without
``land_window`` the report task gets no window bounds, everything else as the DAG wires it).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import datetime


def main() -> int:
    dag_file, dag_id, task_ids = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    logical_date = datetime.fromisoformat(sys.argv[4])
    run_conf = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
    spec = importlib.util.spec_from_file_location(f"dagfile_{dag_id}", dag_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dag = next(value for value in vars(module).values() if getattr(value, "dag_id", None) == dag_id)
    subset = dag.partial_subset(task_ids=task_ids, include_upstream=False, include_downstream=False)
    if "report" in task_ids and "land_window" not in task_ids:
        # no landed window to bound the report by: it covers the whole (empty) zone, as with no bounds
        report = subset.get_task("report")
        report.window_start = report.window_end = None
    run = subset.test(logical_date=logical_date, run_after=logical_date, run_conf=run_conf)

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(XComModel).filter_by(dag_id=dag_id, run_id=run.run_id).all()
        xcom = {f"{row.task_id}.{row.key}": row.value for row in rows}
        tasks = {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}
    print(
        json.dumps({"state": str(run.state), "run_id": run.run_id, "tasks": tasks, "xcom": xcom}, default=str)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
