"""A real S3 server (S3Proxy, ``kip714 local-s3``) for the session, and the Airflow connection to it.

Import the ``local_s3`` fixture into a test module (``from object_storage import local_s3``). The
connection ``kip714_s3`` is set as ``AIRFLOW_CONN_KIP714_S3`` in this process's environment, so
subprocesses (the CLI, spark-submit's driver) find it too; data roots are
``s3://kip714_s3@<bucket>/<prefix>``.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kip714_dev.cli.local_s3 import airflow_connection
from kip714_dev.local_kafka.ports import free_ports
from kip714_dev.local_s3 import server

CONN_ID = "kip714_s3"


@dataclass(frozen=True)
class LocalS3:
    state: server.LocalS3State

    def url(self, prefix: str | None = None) -> str:
        """A fresh data-root URL the way ObjectStoragePath writes one."""
        return f"s3://{CONN_ID}@{self.state.bucket}/{prefix or uuid.uuid4().hex[:10]}"

    def client(self) -> Any:
        return server.s3_client(self.state.endpoint_url, self.state.access_key, self.state.secret_key)

    def keys(self, prefix: str) -> list[str]:
        """Every object key under ``prefix`` (listed through the S3 API, not the backend's folder)."""
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=self.state.bucket, Prefix=prefix)
        )
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


@pytest.fixture(scope="session")
def local_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalS3]:
    data_dir: Path = tmp_path_factory.mktemp("local-s3")
    (port,) = free_ports(1)
    state = server.start(data_dir, port=port)
    variable = f"AIRFLOW_CONN_{CONN_ID.upper()}"
    previous = os.environ.get(variable)
    os.environ[variable] = json.dumps(airflow_connection(state))
    try:
        yield LocalS3(state)
    finally:
        if previous is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = previous
        server.stop(data_dir)
