"""A troubleshooting run's selection (``--selection``): its clients from its window's start, and only the
broker series that concern them (``kip714_common.landing.run_clients``), on a real local Spark."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kip714_common.landing import run_clients
from kip714_common.schemas import DATAPOINT_SCHEMA
from kip714_common.selectors import RunSelection

pytestmark = pytest.mark.spark

SINCE = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def row(offset: int, at: datetime, **values: Any) -> tuple[Any, ...]:
    base = {"topic": "_client_telemetry", "partition": 0, "offset": offset, "record_timestamp": at}
    base.update(values)
    return tuple(base.get(field.name) for field in DATAPOINT_SCHEMA.fields)


def client(offset: int, at: datetime, client_id: str, instance: str) -> tuple[Any, ...]:
    return row(
        offset,
        at,
        record_type="client",
        client_id=client_id,
        client_instance_id=instance,
        client_instance_id_hex=f"{instance}-hex",
        client_source_port=40000 + offset,
        metric_name="org.apache.kafka.producer.record.queue.time.avg",
    )


def broker(offset: int, at: datetime, instance: str | None) -> tuple[Any, ...]:
    attributes = {} if instance is None else {"client_instance_id": instance}
    return row(offset, at, record_type="broker", attributes=attributes, metric_name="kafka.server.x")


def test_run_keeps_its_clients_from_the_window_start_and_their_broker_series(spark: Any) -> None:
    after, before = SINCE + timedelta(seconds=5), SINCE - timedelta(seconds=30)
    rows = [
        client(1, before, "orders-1", "A"),  # the run's client, before the window: another subscription's
        client(2, after, "orders-1", "A"),
        client(3, after, "billing-1", "B"),  # another run's client
        client(4, after, "orders-10x", "C"),  # the regex must match the whole value
        broker(5, after, None),  # the broker's own series (instance count)
        broker(6, after, "A"),  # per-client series, either id form
        broker(7, after, "A-hex"),
        broker(8, after, "B"),
        broker(9, before, None),  # broker records before the window stay: counters need a previous point
    ]
    frame = spark.createDataFrame(rows, DATAPOINT_SCHEMA)
    kept = run_clients(frame, RunSelection(since=SINCE, match={"client_id": "orders-[0-9]"}))
    assert sorted(r["offset"] for r in kept.collect()) == [2, 5, 6, 7, 9]

    by_port = run_clients(frame, RunSelection(since=SINCE, match={"client_source_port": "4000[23]"}))
    assert sorted(r["offset"] for r in by_port.collect()) == [2, 3, 5, 6, 7, 8, 9]
    everyone = run_clients(frame, RunSelection(since=SINCE))
    assert sorted(r["offset"] for r in everyone.collect()) == [2, 3, 4, 5, 6, 7, 8, 9]
