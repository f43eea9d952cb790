"""Synthetic landing zone: ``datapoints/`` rows in the exact ``DATAPOINT_SCHEMA``, for tests, bench and demos.

Not shipped to the cluster. Scenario builders (tests) and the fleet generator (bench) both end in
``LandingWriter.write``; swapping synthetic data for data landed from real clients means pointing the
apps' ``--input`` at the real landing root instead. Names and labels follow what the real clients push
(KIP714-FACTS.md): librdkafka sends ``org.apache.kafka.producer.*`` with an int ``node.id`` label, the
Java client sends ``node_id="node-1"``; sums are DELTA; broker records carry ``node_id``/``cluster_id``.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_provider_kip714.contract.landing_schema import DATAPOINT_SCHEMA

TOPIC = "_client_telemetry"
NANOS = 1_000_000_000
LIBRDKAFKA = "librdkafka"
JAVA = "java"


@dataclass(frozen=True)
class SyntheticClient:
    """One client instance and the broker-added labels its pushes carry."""

    instance_id: str
    instance_id_hex: str
    client_id: str
    software_name: str
    software_version: str
    source_address: str
    source_port: int
    principal: str
    flavour: str


def make_client(index: int, flavour: str = LIBRDKAFKA, client_id: str | None = None) -> SyntheticClient:
    """Deterministic client number ``index`` (same index, same instance id)."""
    raw = uuid.UUID(int=(0x714 << 100) + index)
    software = (
        ("confluent-kafka-python", "2.16.0") if flavour == LIBRDKAFKA else ("apache-kafka-java", "3.9.1")
    )
    return SyntheticClient(
        instance_id=base64.urlsafe_b64encode(raw.bytes).decode("ascii").rstrip("="),
        instance_id_hex=str(raw),
        client_id=client_id or f"{flavour}-app-{index % 7}",
        software_name=software[0],
        software_version=software[1],
        source_address=f"10.0.{index // 250}.{index % 250 + 1}",
        source_port=40000 + index % 20000,
        principal="User:ANONYMOUS",
        flavour=flavour,
    )


def _map_array(entries: Mapping[str, str | None], rows: int) -> pa.Array:
    """``rows`` copies of one string map, built from offsets (fast for millions of rows); None stays null."""
    keys = list(entries)
    width = len(keys)
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * width)
    return pa.MapArray.from_arrays(
        offsets,
        pa.array(keys * rows, pa.string()),
        pa.array([None if entries[k] is None else str(entries[k]) for k in keys] * rows, pa.string()),
        type=DATAPOINT_SCHEMA.field("attributes").type,
    )


def _per_row(values: Sequence[object], repeats: np.ndarray, kind: pa.DataType) -> pa.Array:
    """Column where ``values[i]`` fills ``repeats[i]`` consecutive rows (dictionary-decoded, fast)."""
    indices = pa.array(np.repeat(np.arange(len(values), dtype=np.int32), repeats))
    return pa.DictionaryArray.from_arrays(indices, pa.array(list(values), kind)).cast(kind)


def series_table(
    clients: Sequence[SyntheticClient | None],
    metric_name: str,
    metric_type: str,
    temporality: str | None,
    attributes: Mapping[str, str | None],
    times_ns: np.ndarray,
    values: np.ndarray,
    start_ns: np.ndarray | None = None,
    *,
    record_type: str = "client",
    broker_node_id: int | None = 1,
    cluster_id: str = "synthetic-cluster",
    resource_attributes: Mapping[str, str] | None = None,
    push_interval_ms: int = 10_000,
    is_monotonic: bool | None = None,
) -> pa.Table:
    """Scalar points of one metric for many clients: ``times_ns``/``values`` are (clients, points)."""
    n_clients, n_points = times_ns.shape
    rows = n_clients * n_points
    repeats = np.full(n_clients, n_points)
    present = [c for c in clients if c is not None]

    def identity(getter: str, kind: pa.DataType | None = None) -> pa.Array:
        kind = kind or pa.string()
        if len(present) != n_clients:
            return pa.nulls(rows, kind)
        return _per_row([getattr(c, getter) for c in clients], repeats, kind)

    flat_times = times_ns.reshape(-1).astype(np.int64)
    ts_type = DATAPOINT_SCHEMA.field("time").type
    starts = (
        pa.array(start_ns.reshape(-1).astype(np.int64)).cast(ts_type)
        if start_ns is not None
        else pa.nulls(rows, ts_type)
    )
    flat_values = values.reshape(-1).astype(np.float64)
    moments = [datetime.fromtimestamp(int(t) // NANOS, UTC) for t in (flat_times.min(), flat_times.max())]
    if moments[0].strftime("%Y%m%d%H") != moments[1].strftime("%Y%m%d%H"):
        seconds = flat_times // NANOS
        date_text = pa.array(seconds.astype("datetime64[s]").astype("datetime64[D]").astype(str))
        hour_values = pa.array(((seconds % 86400) // 3600).astype(np.int32))
    else:
        date_text = pa.repeat(moments[0].strftime("%Y-%m-%d"), rows)
        hour_values = pa.repeat(pa.scalar(moments[0].hour, pa.int32()), rows)
    columns: dict[str, pa.Array] = {
        "topic": pa.repeat(TOPIC, rows),
        "partition": pa.repeat(pa.scalar(0, pa.int32()), rows),
        "offset": pa.array(np.arange(rows, dtype=np.int64)),
        "record_timestamp": pa.array(flat_times // 1_000_000).cast(
            DATAPOINT_SCHEMA.field("record_timestamp").type
        ),
        "record_type": pa.repeat(record_type, rows),
        "client_instance_id": identity("instance_id"),
        "client_instance_id_hex": identity("instance_id_hex"),
        "client_id": identity("client_id"),
        "client_software_name": identity("software_name"),
        "client_software_version": identity("software_version"),
        "client_source_address": identity("source_address"),
        "client_source_port": identity("source_port", pa.int32()),
        "principal": identity("principal"),
        "listener": pa.repeat("PLAINTEXT", rows),
        "node_id": pa.repeat(pa.scalar(broker_node_id, pa.int32()), rows),
        "cluster_id": pa.repeat(cluster_id, rows),
        "push_interval_ms": pa.repeat(pa.scalar(push_interval_ms, pa.int64()), rows),
        "terminating": pa.repeat(False, rows),
        "resource_attributes": _map_array(resource_attributes or {}, rows),
        "metric_name": pa.repeat(metric_name, rows),
        "metric_type": pa.repeat(metric_type, rows),
        "temporality": pa.repeat(pa.scalar(temporality, pa.string()), rows),
        "is_monotonic": pa.repeat(
            pa.scalar(is_monotonic if is_monotonic is not None else metric_type == "sum", pa.bool_()), rows
        ),
        "attributes": _map_array(attributes, rows),
        "start_time": starts,
        "time": pa.array(flat_times).cast(ts_type),
        "value": pa.array(flat_values),
        "date": date_text,
        "hour": hour_values,
    }
    return _complete(columns, rows)


def _complete(columns: Mapping[str, pa.Array], rows: int) -> pa.Table:
    arrays = [
        columns[f.name].cast(f.type) if f.name in columns else pa.nulls(rows, f.type)
        for f in DATAPOINT_SCHEMA
    ]
    return pa.Table.from_arrays(arrays, schema=DATAPOINT_SCHEMA)


def rows_table(rows: Iterable[Mapping[str, object]]) -> pa.Table:
    """Small tables from per-point dicts (histograms, hand-written scenarios); missing columns are null."""
    listed = []
    for row in rows:
        point = dict(row)
        moment = datetime.fromtimestamp(int(point["time"]) // NANOS, UTC)  # type: ignore[call-overload]
        point.setdefault("date", moment.strftime("%Y-%m-%d"))
        point.setdefault("hour", moment.hour)
        point.setdefault("topic", TOPIC)
        for column in ("time", "start_time"):
            if point.get(column) is not None:
                point[column] = pa.scalar(int(point[column]), pa.int64()).cast(
                    DATAPOINT_SCHEMA.field(column).type
                )  # type: ignore[call-overload]
        for column in ("attributes", "resource_attributes"):
            if isinstance(point.get(column), Mapping):
                point[column] = [(k, str(v)) for k, v in point[column].items()]  # type: ignore[union-attr]
        listed.append(point)
    return pa.Table.from_pylist(listed, schema=DATAPOINT_SCHEMA)


def client_labels(client: SyntheticClient) -> dict[str, object]:
    """The broker-added label columns of one client, for ``rows_table`` points."""
    return {
        "record_type": "client",
        "client_instance_id": client.instance_id,
        "client_instance_id_hex": client.instance_id_hex,
        "client_id": client.client_id,
        "client_software_name": client.software_name,
        "client_software_version": client.software_version,
        "client_source_address": client.source_address,
        "client_source_port": client.source_port,
        "principal": client.principal,
        "listener": "PLAINTEXT",
        "node_id": 1,
    }


class LandingWriter:
    """Writes tables under ``<root>/datapoints/date=YYYY-MM-DD/hour=HH/`` like the landing hook does."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._files = 0
        self._token = uuid.uuid4().hex[:12]  # several writers may share one landing root
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        keys = pc.binary_join_element_wise(table["date"], pc.cast(table["hour"], pa.string()), "/")
        for key in pc.unique(keys).to_pylist():
            date, hour = key.split("/")
            part = table.filter(pc.equal(keys, key))
            folder = self.root / "datapoints" / f"date={date}" / f"hour={int(hour):02d}"
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(part, folder / f"part-{self._token}-{self._files:05d}.parquet")
            self._files += 1
            self.rows += part.num_rows


# (name as the client sends it, OTLP type, labels) for the fleet generator.
LIBRDKAFKA_PRODUCER_METRICS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("org.apache.kafka.producer.connection.creation.rate", "gauge", {}),
    ("org.apache.kafka.producer.connection.creation.total", "sum", {}),
    ("org.apache.kafka.producer.node.request.latency.avg", "gauge", {"node.id": "1"}),
    ("org.apache.kafka.producer.node.request.latency.max", "gauge", {"node.id": "1"}),
    ("org.apache.kafka.producer.produce.throttle.time.avg", "gauge", {}),
    ("org.apache.kafka.producer.produce.throttle.time.max", "gauge", {}),
    ("org.apache.kafka.producer.record.queue.time.avg", "gauge", {}),
    ("org.apache.kafka.producer.record.queue.time.max", "gauge", {}),
    ("org.apache.kafka.producer.request.latency.avg", "gauge", {}),
    ("org.apache.kafka.producer.request.latency.max", "gauge", {}),
)
JAVA_PRODUCER_METRICS: tuple[tuple[str, str, dict[str, str]], ...] = tuple(
    (name, kind, {"node_id": "node-1"} if labels else {})
    for name, kind, labels in LIBRDKAFKA_PRODUCER_METRICS
)


def generate_fleet(
    root: str | Path,
    start: datetime,
    hours: float,
    target_points: int,
    push_interval_seconds: int = 10,
    java_share: float = 0.2,
    clients_per_chunk: int = 200,
    seed: int = 714,
) -> int:
    """Write about ``target_points`` producer data points for a fleet over ``hours``; returns rows written.

    Memory stays bounded: one chunk of ``clients_per_chunk`` clients is built and written at a time.
    """
    rng = np.random.default_rng(seed)
    pushes = int(hours * 3600 // push_interval_seconds)
    metrics_per_client = len(LIBRDKAFKA_PRODUCER_METRICS)
    n_clients = max(1, round(target_points / (pushes * metrics_per_client)))
    writer = LandingWriter(root)
    start_ns = int(start.timestamp()) * NANOS
    for first in range(0, n_clients, clients_per_chunk):
        indices = range(first, min(n_clients, first + clients_per_chunk))
        chunk = [make_client(i, JAVA if rng.random() < java_share else LIBRDKAFKA) for i in indices]
        offsets = rng.integers(0, push_interval_seconds * NANOS, size=(len(chunk), 1))
        times = start_ns + offsets + np.arange(pushes)[None, :] * push_interval_seconds * NANOS
        for flavour, catalogue in ((LIBRDKAFKA, LIBRDKAFKA_PRODUCER_METRICS), (JAVA, JAVA_PRODUCER_METRICS)):
            mask = np.array([c.flavour == flavour for c in chunk])
            if not mask.any():
                continue
            members = [c for c, keep in zip(chunk, mask, strict=True) if keep]
            member_times = times[mask]
            groups = np.array([int(c.client_id.rsplit("-", 1)[-1]) for c in members])
            for metric_index, (name, kind, labels) in enumerate(catalogue):
                # clients of one application (client_id) behave alike: the level depends on app and metric
                level = (5 + (groups * 37 + metric_index * 11) % 100 * 5.0)[:, None]
                values = np.abs(level + rng.normal(0, level * 0.05, size=member_times.shape))
                starts = member_times - push_interval_seconds * NANOS if kind == "sum" else None
                writer.write(
                    series_table(
                        members,
                        name,
                        kind,
                        "delta" if kind == "sum" else None,
                        labels,
                        member_times,
                        values,
                        starts,
                        push_interval_ms=push_interval_seconds * 1000,
                    )
                )
    return writer.rows
