"""Test DAG: a window whose create call succeeds on the broker, then the worker dies (SIGKILL).

The subclass kills its own process right after the broker accepted the subscription, before any
XCom push or cleanup: what a worker killed mid-task, or an alter timeout whose task then dies, leaves
behind. KIP714_TEST_CONN_ID, KIP714_TEST_LABEL, KIP714_TEST_WINDOW come from the environment.
"""

from __future__ import annotations

import os
import signal
from datetime import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider_kip714.operators.client_metrics import CreateClientMetricsSubscriptionOperator


class DiesAfterCreate(CreateClientMetricsSubscriptionOperator):
    def execute(self, context: Any) -> Any:
        real_create = self.hook.create

        def create_then_die(subscription: Any) -> Any:
            real_create(subscription)
            print(f"KIP714_TEST created {subscription.name}; dying now", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

        self.hook.create = create_then_die  # type: ignore[method-assign]
        return super().execute(context)


with DAG(
    dag_id="kip714_test_failed_create", schedule=None, start_date=datetime(2026, 1, 1), catchup=False
) as dag:
    DiesAfterCreate(
        task_id="open_subscription",
        kafka_config_id=os.environ.get("KIP714_TEST_CONN_ID", "kafka_default"),
        window=os.environ.get("KIP714_TEST_WINDOW", "15s"),
        window_label=os.environ.get("KIP714_TEST_LABEL", "failed-create"),
        block=True,
        match="client_id=nobody-failed-create",
    )
