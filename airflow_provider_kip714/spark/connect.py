"""Run the Spark apps on a long-running Spark Connect server: no task pays for a JVM start.

``spark-submit`` starts a driver JVM per task: 7 to 9 s on an idle 2-core machine before any work,
and a cold JIT for the whole run. A Spark Connect server is started once (``kip714 local-spark-connect
start`` here, or the platform's own); each task then runs the same app, ``spark_apps/pipeline.py``, as a
thin Python client (``pyspark`` in Connect mode) with the same arguments, outputs and
``KIP714_SUMMARY``/``KIP714_TIMING`` lines. Pick it with ``KIP714_SPARK_CONNECT_CONN_ID`` (a
``spark_connect`` connection); unset, the DAGs use ``spark-submit`` as before.

The server reads storage with its own settings: for an ``s3://<conn>@bucket/prefix`` data root the
task passes the ``s3a://bucket/prefix`` paths, and the server must have been started with that
bucket's ``spark.hadoop.fs.s3a.*`` settings (no credentials travel with the request). The Connect
URL, which may hold a token, goes to the client in its environment (``SPARK_REMOTE``), not on its
command line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
from airflow.sdk import BaseOperator

from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.spark.arguments import storage_arguments
from spark_apps.package import application_path

CLIENT_STOP_TIMEOUT_S = 10
"""How long a killed task waits for its client to stop on SIGTERM before it kills it."""
REMOTE_ENV = "SPARK_REMOTE"
"""The Connect URL for the client (``pipeline.py`` reads it when ``--remote`` is not given)."""


def connect_command(app: str, application_args: Sequence[str]) -> list[str]:
    """``python spark_apps/pipeline.py ARGS`` running only ``app`` (every app is one of its steps)."""
    command = [sys.executable, str(application_path("pipeline")), *application_args]
    return command if app == "pipeline" else [*command, "--steps", app]


class Kip714SparkConnectOperator(BaseOperator):
    """Run ``spark_apps/<app>`` against the Spark Connect server of connection ``conn_id``.

    :param app: ``pipeline`` (its ``--steps`` among the arguments), or one app run as the pipeline's step.
    :param application_args: the app's flags, as for ``spark-submit`` (templated).
    :param conn_id: a ``spark_connect`` connection.
    """

    template_fields: Sequence[str] = ("application_args",)
    ui_color = "#fff3e0"

    def __init__(self, *, app: str, application_args: Sequence[str], conn_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.app = app
        self.application_args = list(application_args)
        self.conn_id = conn_id
        self._client: subprocess.Popen[str] | None = None

    def execute(self, context: Any) -> None:
        url = SparkConnectHook(self.conn_id).get_connection_url()
        args, storage_conf = storage_arguments([str(arg) for arg in self.application_args])
        if any(key.startswith("spark.hadoop.") for key in storage_conf):
            self.log.info("object storage: the Connect server reads it with its own spark.hadoop.* settings")
        command = connect_command(self.app, args)
        self.log.info("Spark Connect (%s): %s", self.conn_id, " ".join(command[1:]))
        process = self._client = subprocess.Popen(
            command,
            env={**os.environ, REMOTE_ENV: url},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert process.stdout is not None
        for line in process.stdout:
            self.log.info("%s", line.rstrip())
        if process.wait() != 0:
            raise Kip714Error(
                f"{self.app} on Spark Connect ({self.conn_id}) failed with exit {process.returncode}; "
                "its last lines are in the log above"
            )

    def on_kill(self) -> None:
        """Stop the client when the task is killed or times out: left running, it would go on submitting
        work to the server (in live mode, into the session the task's next try uses)."""
        client = self._client
        if client is None or client.poll() is not None:
            return
        client.terminate()
        try:
            client.wait(timeout=CLIENT_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            client.kill()
            client.wait()
