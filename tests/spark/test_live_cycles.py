"""Live mode's cycles on real clients, a real broker and real Spark: what the ``kip714_live`` DAG runs.

Three librdkafka consumers of one group (one slowing down) and a producer push every second. Cycles of
``begin_cycle`` -> landing -> the pipeline over the trailing window (only the chunks landed since) ->
``detect`` run while they do. The slow consumer's peer anomaly opens once, stays open without being
announced again, and resolves once after the consumer is gone. Afterwards the same topic landed in one
go into a second zone gives the same hourly tables, row for row, as the zone live mode landed piecewise.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pipeline
import pyarrow.dataset as ds
import pytest
from kip714_dev.demo.fleet import ClientFleet

from airflow_provider_kip714.findings.model import FindingKind, Transition
from airflow_provider_kip714.findings.store import LiveStore
from airflow_provider_kip714.live.cycle import CLOCK_SLACK, begin_cycle, detect
from airflow_provider_kip714.live.settings import LiveSettings
from airflow_provider_kip714.storage.data_root import live_area
from airflow_provider_kip714.telemetry.landing import land_topic
from spark_apps.package import DEFAULT_RULES
from tests.support.slowing_group import SlowingGroup

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

SETTINGS = LiveSettings(
    lookback=timedelta(minutes=2), bucket=timedelta(seconds=10), baseline_for=timedelta(seconds=20)
)
CYCLES_WHILE_SLOW = 4
CYCLES_AFTER = 3


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cycle(spark, config, topic: str, root: Path, store: LiveStore, number: int) -> dict:  # type: ignore[no-untyped-def]
    now = datetime.now(UTC)
    plan = begin_cycle(store, root / "landing", topic, now, SETTINGS)
    land_topic(config, topic, root / "landing", fsync=False)
    pipeline.run(
        [
            *("--input", str(root / "landing"), "--output", str(live_area(root).analytics)),
            *("--start", plan.start.isoformat(), "--end", plan.end.isoformat(), "--bucket", "10s"),
            *("--rules", str(DEFAULT_RULES)),
            *("--history", "1h", "--history-root", str(root / "analytics"), "--baseline-for", "20s"),
            *("--chunks-from", plan.chunks_flag() or ""),
        ],
        spark,
    )
    changed = detect(
        store, live_area(root), plan.end, datetime.now(UTC), f"cycle-{number}", window_start=plan.start
    )
    return {"plan": plan, "changed": changed}


@pytest.fixture(scope="module")
def live_run(kafka_cluster, spark, tmp_path_factory):  # type: ignore[no-untyped-def]
    if not kafka_cluster.plugin_loaded:
        pytest.skip("broker plugin jar not built: run `make plugin`")
    root = tmp_path_factory.mktemp("live")
    config = kafka_cluster.client_config()
    group = SlowingGroup.start(config, "live")
    prefix, steady, slow, producer = group.prefix, group.steady, group.slow, group.producer
    store = LiveStore(root)
    cycles = []
    fleet = ClientFleet(kafka_cluster.bootstrap_servers, [*steady, producer], root / "logs", 600)
    slow_fleet = ClientFleet(kafka_cluster.bootstrap_servers, [slow], root / "logs", 600)
    started = datetime.now(UTC)
    try:
        with fleet:
            with slow_fleet:
                time.sleep(30)  # the group settles, every consumer pushes
                for number in range(CYCLES_WHILE_SLOW):
                    cycles.append(_cycle(spark, config, kafka_cluster.telemetry_topic, root, store, number))
            slow_stopped = datetime.now(UTC)
            # Cycle on until the slow consumer's last pushes (its closing push included, which can open an
            # episode of its own) have left the trailing window: a count of cycles alone depends on how
            # fast the machine runs them (on CI, three cycles ended inside the lookback).
            gone_from_window = slow_stopped + SETTINGS.lookback + SETTINGS.bucket * 3
            # and until a cycle's window starts after the second cycle began (the first began on an empty
            # zone, so its offsets are all 0): only then can a cycle show that it skips older chunks
            second_in_reach = cycles[1]["plan"].end + SETTINGS.lookback + CLOCK_SLACK + timedelta(seconds=5)
            number = CYCLES_WHILE_SLOW
            # judged by when the last cycle *began* (its plan's end), not by the clock after it ended: a
            # cycle that began before the mark and ended after it showed neither (seen with warm JVMs)
            while number < CYCLES_WHILE_SLOW + CYCLES_AFTER or cycles[-1]["plan"].end < max(
                gone_from_window, second_in_reach
            ):
                time.sleep(20)
                cycles.append(_cycle(spark, config, kafka_cluster.telemetry_topic, root, store, number))
                number += 1
    finally:
        group.stop()
    ended = datetime.now(UTC)
    return {
        "root": root,
        "prefix": prefix,
        "cycles": cycles,
        "store": store,
        "started": started,
        "slow_stopped": slow_stopped,
        "ended": ended,
        "config": config,
        "topic": kafka_cluster.telemetry_topic,
    }


def _mine(live_run: dict, kind: FindingKind) -> list:  # type: ignore[type-arg]
    return [
        (number, finding)
        for number, cycle in enumerate(live_run["cycles"])
        for finding in cycle["changed"]
        if finding.kind is kind and (finding.client.client_id or "").startswith(live_run["prefix"])
    ]


def test_the_slow_consumer_opens_one_finding_and_resolves_it_once(live_run) -> None:  # type: ignore[no-untyped-def]
    slow = f"{live_run['prefix']}-consumer-slow"
    # its peers may have findings of their own (a group of three is noisy: seen, a peer's request latency
    # against the other two); what is asserted is the slow consumer's episodes
    anomalies = [(n, f) for n, f in _mine(live_run, FindingKind.ANOMALY) if f.client.client_id == slow]
    opened = [(n, f) for n, f in anomalies if f.transition is Transition.OPENED]
    resolved = [(n, f) for n, f in anomalies if f.transition is Transition.RESOLVED]
    assert opened, f"no anomaly found for {slow}: {[c['changed'] for c in live_run['cycles']]}"
    # one episode per series: never opened twice while it lasts
    assert len({f.episode_key for _, f in opened}) == len(opened)
    assert all(f.against in ("peers", "own", "threshold") for _, f in opened)
    assert opened[0][0] < CYCLES_WHILE_SLOW
    # every opened episode of the slow consumer ends once; a transient one (seen: its request latency
    # max, for two cycles) may end while it is still slow, the ones still open when it stopped end after
    assert sorted(f.finding_id for _, f in resolved) == sorted(f.finding_id for _, f in opened)
    after_stop = [f for n, f in resolved if n >= CYCLES_WHILE_SLOW]
    assert after_stop, "no episode of the slow consumer lasted until it stopped"
    assert all(f.ended is not None and f.ended >= live_run["slow_stopped"] for f in after_stop)
    still_open = [f for f in live_run["store"].open_findings() if f.client.client_id == slow]
    last_push, terminated = _last_push(live_run["root"] / "landing", slow)
    if terminated:
        assert still_open == []
    else:
        # librdkafka sends its terminating push only when its telemetry is between pushes; a close that
        # finds a push in flight ends without one (rdkafka_telemetry.c, schedule_termination; at a 1 s
        # interval, seen on CI). The consumer then reads as silent, which resolves only on a new push.
        assert [(f.kind, f.since) for f in still_open] == [(FindingKind.SILENT_CLIENT, last_push)], still_open


def _last_push(landing: Path, client_id: str) -> tuple[datetime, bool]:
    """When the client's last push was accepted, and whether a terminating push of it landed."""
    pushes = (
        ds.dataset(landing / "datapoints", format="parquet", partitioning="hive")
        .to_table(
            columns=["record_timestamp", "terminating"],
            filter=(ds.field("client_id") == client_id) & (ds.field("record_type") == "client"),
        )
        .to_pylist()
    )
    assert pushes, f"nothing of {client_id} landed"
    last = max(row["record_timestamp"] for row in pushes)
    return last.replace(tzinfo=UTC) if last.tzinfo is None else last, any(
        row["terminating"] for row in pushes
    )


def test_cycles_read_only_the_chunks_landed_since_their_window(live_run) -> None:  # type: ignore[no-untyped-def]
    plans = [cycle["plan"] for cycle in live_run["cycles"]]
    later = [plan for plan in plans if plan.chunks_from is not None]
    assert later, "no cycle selected chunks: the lookback never fell inside live mode's life"
    raw = ds.dataset(live_run["root"] / "landing" / "raw", format="parquet").to_table(
        columns=["partition", "offset"]
    )
    first_offsets = {}
    for row in raw.to_pylist():
        first_offsets[row["partition"]] = min(
            first_offsets.get(row["partition"], row["offset"]), row["offset"]
        )
    last = later[-1].chunks_from
    # the last cycle skipped what was landed before its window: some partition starts past its first offset
    assert any(last.get(partition, 0) > first for partition, first in first_offsets.items())


def test_a_closed_interval_is_the_same_whether_or_not_live_mode_landed_it(live_run, spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    live_root = live_run["root"]
    land_topic(live_run["config"], live_run["topic"], live_root / "landing", fsync=False)  # the hourly run
    land_topic(live_run["config"], live_run["topic"], tmp_path / "landing", fsync=False)  # never live
    # The interval ends on a whole minute (the 1m buckets) at least 30 s before the run did: every
    # record with points in it (client pushes every second, the brokers' own records every 5 s) was
    # accepted before either landing below began. Ending 5 s before, inside a bucket, the broker's
    # records exported between the two landings gave the second zone 6 more rollup rows in that
    # bucket (seen under the parallel test streams).
    start, end = (
        live_run["started"].replace(second=0, microsecond=0),
        (live_run["ended"] - timedelta(seconds=30)).replace(second=0, microsecond=0),
    )
    outputs = {}
    for name, landing in (("live", live_root / "landing"), ("fresh", tmp_path / "landing")):
        output = tmp_path / f"analytics-{name}"
        pipeline.run(
            [
                *("--input", str(landing), "--output", str(output), "--start", _iso(start)),
                *("--end", _iso(end), "--bucket", "1m", "--steps", "rollups,delivery,broker_metrics"),
            ],
            spark,
        )
        outputs[name] = output
    for table in ("rollups", "delivery", "broker_metrics"):
        live, fresh = (_sorted_rows(outputs[name] / table) for name in ("live", "fresh"))
        assert len(live) > 0 and len(live) == len(fresh), table
        assert list(live.columns) == list(fresh.columns), table
        for column in live.columns:
            left, right = live[column], fresh[column]
            if pd.api.types.is_float_dtype(left):
                # the same points summed in another order (other files, other tasks) differ in the last bits
                assert np.allclose(left, right, rtol=1e-12, atol=0.0, equal_nan=True), (table, column)
            else:
                assert left.equals(right), (table, column)
    # and each record landed once in the zone live mode and the hourly run shared
    raw = ds.dataset(live_root / "landing" / "raw", format="parquet").to_table(
        columns=["partition", "offset"]
    )
    keys = list(zip(raw["partition"].to_pylist(), raw["offset"].to_pylist(), strict=True))
    assert len(keys) == len(set(keys))


def _sorted_rows(table: Path) -> pd.DataFrame:
    """A table's rows, maps as sorted tuples, in one order (every column), partition columns dropped."""
    frame = ds.dataset(table, format="parquet", partitioning="hive").to_table().to_pandas()
    frame = frame.drop(columns=[c for c in ("date", "hour") if c in frame.columns])
    for column in frame.columns:
        if frame[column].map(lambda v: isinstance(v, list)).any():
            frame[column] = frame[column].map(lambda v: tuple(sorted(v)) if isinstance(v, list) else v)
    key = [c for c in frame.columns if not pd.api.types.is_float_dtype(frame[c])]
    return frame.sort_values(key, kind="stable", na_position="first").reset_index(drop=True)
