"""The Spark Connect operator's client process: a killed task stops it (live mode's next try shares the
server session with it)."""

from __future__ import annotations

import subprocess
import sys

from airflow_provider_kip714.spark.connect import Kip714SparkConnectOperator


def test_a_killed_task_stops_its_client_and_one_that_ignores_sigterm_is_killed() -> None:
    operator = Kip714SparkConnectOperator(task_id="analyse", app="pipeline", application_args=[], conn_id="c")
    operator.on_kill()  # no client yet: nothing to do
    for script in (
        "import time; time.sleep(120)",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
        "time.sleep(120)",
    ):
        client = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        if "SIG_IGN" in script:
            assert client.stdout is not None and client.stdout.readline().strip() == "ready"
        operator._client = client
        operator.on_kill()
        assert client.poll() is not None  # stopped, within CLIENT_STOP_TIMEOUT_S
    operator.on_kill()  # an ended client: nothing to do
