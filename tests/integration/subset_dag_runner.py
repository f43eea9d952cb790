"""Run ``dag.test()`` on some tasks of a DAG file (``dag.partial_subset``) and print a JSON summary.

Usage: python subset_dag_runner.py DAG_FILE DAG_ID TASK_IDS(comma) LOGICAL_DATE_ISO [RUN_CONF_JSON]
Prints the same last line as ``airflow_dag_runner.py``: {"state", "run_id", "tasks", "xcom"}. For steps
worth testing without the whole window (the form's validation and guardrail, then the report; without
``land_window`` the report task gets no window bounds, everything else as the DAG wires it).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime

from airflow_dag_runner import load_dag, print_summary


def main() -> int:
    dag_file, dag_id, task_ids = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    logical_date = datetime.fromisoformat(sys.argv[4])
    run_conf = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
    dag = load_dag(dag_file, dag_id)
    subset = dag.partial_subset(task_ids=task_ids, include_upstream=False, include_downstream=False)
    if "report" in task_ids and "land_window" not in task_ids:
        # no landed window to bound the report by: it covers the whole (empty) zone, as with no bounds
        report = subset.get_task("report")
        report.window_start = report.window_end = None
    run = subset.test(logical_date=logical_date, run_after=logical_date, run_conf=run_conf)
    print_summary(dag_id, run, every_key=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
