"""The UI's live convergence (pyarrow, ``analytics/convergence_live.py``) and the Spark app agree.

Both run on the same landed data (the convergence scenario: three clients converging 5, 25 and 65 s
after the window, one never, an outsider) for several windows: per client the same first push and
delay, per window the same counts and 50/90/100 % times. The Spark app's definition is the reference
(``spark_apps/kip714_common/convergence.py``); a rule changed on one side only fails here.
"""

from __future__ import annotations

import json
import math
from datetime import timedelta

import convergence
import pytest
from kip714_common.convergence import SHARES as SPARK_SHARES

from airflow_provider_kip714.analytics.convergence_live import (
    POINT_COLUMNS,
    SHARES,
    ConvergenceWindow,
    convergence_so_far,
    share_delays,
)
from airflow_provider_kip714.analytics.landed import read_landed_points
from tests.spark.delivery_scenarios import STANDING, WINDOW_METRIC, write_convergence_scenario

pytestmark = pytest.mark.spark


def test_shares_are_the_apps() -> None:
    assert SHARES == SPARK_SHARES
    # the k-th smallest delay with k = ceil(matched * share), null while fewer have pushed
    assert share_delays([5.0, 25.0, 65.0], 4) == {
        "p50_seconds": 25.0,
        "p90_seconds": None,
        "p100_seconds": None,
    }
    assert share_delays([], 0) == {"p50_seconds": None, "p90_seconds": None, "p100_seconds": None}
    # 70 matched, 64 pushed: 90 % is the 63rd delay; 100 % not reached
    reached = share_delays([float(i) for i in range(64)], 70)
    assert (reached["p50_seconds"], reached["p90_seconds"], reached["p100_seconds"]) == (34.0, 62.0, None)


def test_live_and_spark_agree_on_the_same_landed_data(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "landing"
    scenario = write_convergence_scenario(str(landing))
    at = scenario.subscribed_at
    windows = [
        ConvergenceWindow("orders-queue", at, (WINDOW_METRIC,), {"client_id": "orders-.*"}),
        ConvergenceWindow("everyone", at, (STANDING[:30],), {}),
        ConvergenceWindow("two-orders", at + timedelta(seconds=20), ("*",), {"client_id": "orders-[12]"}),
        ConvergenceWindow(
            "by-software",
            at,
            (WINDOW_METRIC, "org.apache.kafka.consumer."),
            {"client_software_name": "confluent-kafka-.*", "client_id": "orders-(3|4)|billing"},
        ),
    ]
    spec = [
        {
            "name": w.name,
            "subscribed_at": w.subscribed_at.isoformat(),
            "metrics": list(w.metrics),
            "match": w.match,
        }
        for w in windows
    ]
    (tmp_path / "windows.json").write_text(json.dumps(spec))
    end = at.replace(minute=30)
    convergence.run(
        [
            *("--input", str(landing), "--output", str(tmp_path / "out")),
            *("--start", "2026-01-31T13:00:00Z", "--end", end.isoformat()),
            *("--windows", str(tmp_path / "windows.json")),
        ],
        spark,
    )
    rows = [row.asDict() for row in spark.read.parquet(str(tmp_path / "out" / "convergence")).collect()]
    points = read_landed_points(landing, POINT_COLUMNS)
    assert points.num_rows > 0
    for window in windows:
        spark_rows = {r["client_instance_id"]: r for r in rows if r["subscription_name"] == window.name}
        live = convergence_so_far(points, window, end)
        assert live.problem is None
        live_rows = {r["client_instance_id"]: r for r in live.clients.to_dict("records")}
        assert set(live_rows) == set(spark_rows), window.name
        for instance, spark_row in spark_rows.items():
            mine = live_rows[instance]
            assert mine["client_id"] == spark_row["client_id"]
            spark_delay, live_delay = spark_row["delay_seconds"], mine["delay_seconds"]
            assert (spark_delay is None) == math.isnan(live_delay), (window.name, instance)
            if spark_delay is not None:
                assert live_delay == pytest.approx(spark_delay, abs=1e-6)
        first = next(iter(spark_rows.values()))
        assert (live.matched_clients, live.converged_clients) == (
            first["matched_clients"],
            first["converged_clients"],
        ), window.name
        assert live.shares == {name: first[name] for name in SHARES}, window.name
    # the scenario's known answer, so agreement is not agreement on nothing
    orders = convergence_so_far(points, windows[0], end)
    assert (orders.matched_clients, orders.converged_clients) == (4, 3)
    assert orders.shares["p50_seconds"] == 25.0
