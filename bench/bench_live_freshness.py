"""Live mode's freshness and cost: a wire-level fleet pushing through a local Kafka, live cycles beside it.

Workload (issue 29, "Live analytics"): ``--instances`` (1,000) KIP-714 client instances speak the real
wire protocol (``bench_fleet_scale.py``'s load: ApiVersions, GetTelemetrySubscriptions, a PushTelemetry
one ``--interval-s`` (10 s) after each answer) through a local Kafka 4.4.0 with the broker plugin. Beside
them, live cycles run back to back exactly as the ``kip714_live`` DAG's tasks run them: ``begin_cycle``,
the landing of the scheduled zone (in-process, exactly once), the pipeline over ``[now - lookback, now)``
with ``--chunks-from`` as a Spark Connect client (``connect_command``, a fresh client process per cycle,
on one warm Connect server started by the bench), then ``detect``. Airflow's own task overhead (three
task processes per cycle) is not in the figures.

Phases, one fleet, one zone:

1. **early hour**: ``--duration-s`` at the normal interval after ``--warmup-cycles`` cycles (not
   counted). ``--breaches`` instances (5) switch, at different times, to a payload far from their peers'
   (every gauge about 10^6 against their peers' 0.5-9.5): a peer-baseline anomaly once it lasts
   ``baseline_for`` (30 s).
2. **prefill**: the fleet pushes every ``--prefill-interval-s`` (1 s) until the zone holds
   ``--prefill-minutes`` (50) minutes of normal telemetry (counted in pushes), cycles still running.
   A second subscription at that interval exists for the phase, so the broker accepts the pushes.
3. **late hour**: the normal interval again; once the prefill has left every cycle's window (lookback
   plus one minute of clock slack plus a cycle), ``--late-cycles`` (4) cycles are measured.

Figures:

- freshness per push (rollups): from the broker's accept time (the record timestamp in ``raw/``) to the
  end of the first cycle whose tables include it. Which cycle that is follows from what each cycle read:
  the chunks it landed or an earlier cycle landed, at or after its ``--chunks-from`` offsets, with the
  push's points inside its window (widened to whole buckets, as the apps widen it). Checked per cycle
  against the live ``rollups`` table: its gauge points counted must equal the points the model says the
  cycle read (else the bench exits 1);
- freshness of the injected anomalies: from each breaching instance's first breaching push (its accept
  time in ``raw/``) to the end of the first cycle whose live ``anomalies`` table holds a row for it;
- CPU: live mode's CPU (landing and detection in this process, the pipeline's client process, the
  Connect server's JVM from ``/proc``, between cycles too), over the early-hour cycles that read a whole
  lookback (the cost it settles at), per hour of telemetry against the hourly DAG's for the same
  telemetry (the whole topic landed in one go into a fresh zone, the hourly pipeline over it on the
  same server; a second such run over the first half of the pushes separates the run's fixed part,
  which the hourly DAG pays once an hour, from its per-push part, which scales with an hour's pushes);
- CPU per cycle at the start of an almost empty hour against late in a full one, and their ratio;
- ``--submit-cycle``: one more cycle with ``spark-submit --master local[2]`` instead of the server;
- ``--session-per-cycle``: each cycle in a server session of its own, as before live cycles shared one
  (``--connect-session``), to measure what sharing it saves.

``--every-s`` paces the cycles as ``KIP714_LIVE_EVERY`` does (one begins every so many seconds, or at once
after one that overran): the trade of freshness for CPU. Airflow's own scheduling delay is not in it.

Bounded: loopback only; the fleet stops after its phases (about ``--duration-s`` + 10 min). Prints the
figures; exits 1 on an internal failure (a failed cycle, a model that disagrees with the tables), never
on a missed target. The latest figures are in docs/benchmarks.md ("Live mode freshness").

    .venv/bin/python bench/bench_live_freshness.py --instances 1000 --duration-s 240
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from queue import Empty
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_fleet_scale import (  # noqa: E402
    Instance,
    Payloads,
    _open,
    _subscribe,
    broker_ports,
    push_telemetry,
    start_cluster,
    subscribe_fleet,
)
from kio.schema.errors import ErrorCode  # noqa: E402
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory  # noqa: E402
from kip714_dev.signals import exit_on_sigterm  # noqa: E402

from airflow_provider_kip714.analytics.tables import read_table  # noqa: E402
from airflow_provider_kip714.findings.store import LiveStore  # noqa: E402
from airflow_provider_kip714.live.cycle import (  # noqa: E402
    CLOCK_SLACK,
    begin_cycle,
    detect,
    window_rows,
)
from airflow_provider_kip714.live.settings import LiveSettings, interval_problem  # noqa: E402
from airflow_provider_kip714.spark.connect import REMOTE_ENV, connect_command  # noqa: E402
from airflow_provider_kip714.spark.jobs import SPARK_CONF  # noqa: E402
from airflow_provider_kip714.storage.data_root import RunArea, live_area, scheduled_area  # noqa: E402
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin  # noqa: E402
from airflow_provider_kip714.subscriptions.duration import parse_duration  # noqa: E402
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs  # noqa: E402
from airflow_provider_kip714.telemetry.landing import land_topic  # noqa: E402
from spark_apps.kip714_common.timing import timing_records  # noqa: E402
from spark_apps.package import DEFAULT_RULES, application_args, application_path, build_common_zip  # noqa: E402

SUBSCRIPTION_NAME = "bench-live-freshness"
PREFILL_SUBSCRIPTION_NAME = "bench-live-freshness-prefill"
MAX_IN_FLIGHT = 64
BREACH_SEED = 1_000_000
"""Added to every gauge of a breaching push: about 10^6 against its peers' 0.5-9.5 (seeds 0..15)."""
LANDING_TIMEOUT_S = 45
"""The DAG's ``land_new`` timeout."""
GAUGES_PER_PUSH = 9


# ---- the fleet -------------------------------------------------------------------------------------


@dataclass
class FleetReport:
    """What one load process saw: answers by code, and each breaching instance's first breaching push."""

    subscribed: int = 0
    answers: dict[str, int] = field(default_factory=dict)
    breaches: dict[str, float] = field(default_factory=dict)
    """Instance id (Kafka's base64 text) -> wall time its first breaching push was sent."""


def instance_text(instance_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without padding (the landing's ``client_instance_id``)."""
    return base64.urlsafe_b64encode(instance_id.bytes).rstrip(b"=").decode()


def interval_at(schedule: list[tuple[float, float]], elapsed: float) -> float:
    """The push interval at ``elapsed`` seconds: the first phase (until, interval) not over yet."""
    for until, interval in schedule:
        if elapsed < until:
            return interval
    return schedule[-1][1]


async def _push(instance: Instance, payload: bytes, terminating: bool) -> ErrorCode:
    answer = await push_telemetry(instance, payload, terminating)
    if answer is ErrorCode.unknown_subscription_id:
        await _subscribe(instance)  # as a real client does: ask again, push at the next interval
    return answer


@dataclass(frozen=True)
class LoadShare:
    """One load process's part of the fleet, handed to the spawned process whole."""

    process: int
    ports: list[int]
    instances: int
    schedule: list[tuple[float, float]]
    """(until, interval): push every ``interval`` s until ``until`` s after ``started_wall``."""
    breaches: dict[int, float]
    """Instance index -> seconds after ``started_wall`` it starts sending breaching pushes."""
    started_wall: float


async def _run_load(share: LoadShare) -> FleetReport:
    report = FleetReport()
    answers: dict[str, int] = {}
    normal, breaching = Payloads(seed=share.process), Payloads(seed=BREACH_SEED + share.process)
    connections = await _open(share.ports, share.process)
    fleet = [Instance(connections[index % len(connections)]) for index in range(share.instances)]
    gate = asyncio.Semaphore(MAX_IN_FLIGHT)
    offset = time.monotonic() - (time.time() - share.started_wall)  # the monotonic clock at started_wall
    end = offset + share.schedule[-1][0]
    ramp = min(share.schedule[0][1], share.schedule[-1][0] / 4)
    subscribed: set[int] = set()

    async def life(index: int) -> None:
        """Subscribe, push one interval after each answer (as ``bench_fleet_scale``), terminate last."""
        instance = fleet[index]
        await asyncio.sleep(ramp * index / share.instances)
        async with gate:
            await _subscribe(instance)
        subscribed.add(index)
        answered = time.monotonic()
        breach_at = share.breaches.get(index)
        while True:
            due = answered + interval_at(share.schedule, answered - offset) + random.uniform(0, 0.05)
            if due >= end:
                break
            await asyncio.sleep(due - time.monotonic())
            bad = breach_at is not None and time.monotonic() - offset >= breach_at
            async with gate:
                sent = time.time()
                code = await _push(instance, (breaching if bad else normal).now(), False)
            answers[code.name] = answers.get(code.name, 0) + 1
            key = instance_text(instance.instance_id)
            if bad and code is ErrorCode.none and key not in report.breaches:
                report.breaches[key] = sent
            answered = time.monotonic()
        await asyncio.sleep(max(0.0, end - time.monotonic()))
        async with gate:
            code = await _push(instance, normal.now(), True)
        answers[code.name] = answers.get(code.name, 0) + 1

    await asyncio.gather(*(life(index) for index in range(share.instances)))
    report.subscribed, report.answers = len(subscribed), answers
    for connection in connections:
        await connection.close()
    return report


def load_process(share: LoadShare, out: Any) -> None:
    """One load process (spawned): its share of the fleet, its report put on ``out``."""
    out.put(asyncio.run(_run_load(share)))


# ---- the cycles ------------------------------------------------------------------------------------


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (the Connect server's JVM), from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spark_env() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def run_child(command: list[str], env: dict[str, str], log: Path) -> float:
    """Run ``command`` to its end; its CPU seconds (``wait4``: this child's alone, not the fleet's)."""
    with log.open("a") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{Path(command[1]).name} failed (exit {process.returncode}); see {log}")
    return usage.ru_utime + usage.ru_stime


@dataclass
class Cycle:
    number: int
    began: float
    """Wall time of ``begin_cycle``'s now (the plan's end)."""
    window: tuple[float, float]
    """The analysed interval as the apps widen it to whole buckets (epoch seconds)."""
    start_offsets: dict[int, int]
    chunks_from: dict[int, int] | None
    done: float
    """Wall time ``detect`` finished: from then on the cycle's tables are what the live tables hold."""
    landed_records: int
    cpu_local: float
    cpu_client: float
    cpu_server: float
    server_cpu_before: float
    """The server JVM's CPU seconds when the cycle began (0 for a ``spark-submit`` cycle): the difference
    between two cycles' readings also counts what the server did between them (GC, cleanup, JIT)."""
    wall: float
    rollup_gauge_points: int
    anomaly_instances: set[str]
    input_bytes: int | None = None
    """Landed bytes the cycle's pipeline read, as it reported them (``KIP714_TIMING`` phase ``input``)."""
    small_input_conf: bool | None = None
    """Whether the pipeline ran interpreted (``SMALL_INPUT_CONF``) for that input."""

    @property
    def cpu(self) -> float:
        return self.cpu_local + self.cpu_client + self.cpu_server

    @property
    def started(self) -> float:
        """Wall time the cycle's measurement began (before ``begin_cycle``)."""
        return self.done - self.wall


@dataclass
class Live:
    """One live mode: its zone, its store, its server; runs cycles and keeps what each did."""

    root: Path
    config: dict[str, Any]
    topic: str
    settings: LiveSettings
    server_url: str
    server_pid: int
    log: Path
    cycles: list[Cycle] = field(default_factory=list)
    session_per_cycle: bool = False
    """Each cycle in a server session of its own (no ``--connect-session``), as before session 27."""

    @property
    def landing(self) -> Path:
        return self.root / "landing"

    @property
    def area(self) -> RunArea:
        return live_area(self.root)

    def pipeline_args(
        self,
        start: datetime,
        end: datetime,
        chunks_from: str,
        steps: str,
        spark_session: str | None = None,
        history_end: str | None = None,
        baselines_cache: str | None = None,
    ) -> list[str]:
        """The ``kip714_live`` DAG's ``analyse`` arguments."""
        return application_args(
            str(self.landing),
            str(self.area.analytics),
            start.isoformat(),
            end.isoformat(),
            self.settings.bucket_flag,
            rules=str(DEFAULT_RULES),
            history=f"{int(self.settings.history.total_seconds())}s",
            history_root=str(scheduled_area(self.root).analytics),
            history_end=history_end,
            baselines_cache=baselines_cache,
            baseline_for=f"{int(self.settings.baseline_for.total_seconds())}s",
            chunks_from=chunks_from,
            steps=steps,
            no_read_back=True,
            connect_session=spark_session,
        )

    def cycle(self, submit: bool = False) -> Cycle:
        store = LiveStore(self.root)
        wall0, cpu0, server0 = time.time(), time.process_time(), process_cpu(self.server_pid)
        now = datetime.now(UTC)
        plan = begin_cycle(store, self.landing, self.topic, now, self.settings, scheduled_area(self.root))
        start_offsets = next(c.next_offsets for c in reversed(store.cycle_starts()) if c.at == now)
        landed = land_topic(self.config, self.topic, self.landing, timeout_s=LANDING_TIMEOUT_S)
        args = self.pipeline_args(
            plan.start,
            plan.end,
            plan.chunks_flag() or "",
            plan.steps_flag(),
            None if self.session_per_cycle else plan.spark_session,
            plan.history_end_flag(),
            plan.baselines_cache_flag(),
        )
        log_offset = self.log.stat().st_size if self.log.exists() else 0
        if submit:
            command = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]"]
            command += ["--py-files", str(build_common_zip())]
            for key, value in SPARK_CONF.items():
                command += ["--conf", f"{key}={value}"]
            client = run_child([*command, str(application_path("pipeline")), *args], spark_env(), self.log)
        else:
            env = {**spark_env(), REMOTE_ENV: self.server_url}
            client = run_child(connect_command("pipeline", args), env, self.log)
        detect(
            store,
            self.area,
            plan.end,
            datetime.now(UTC),
            f"bench-{len(self.cycles)}",
            window_start=plan.start,
        )
        done, cpu_local = time.time(), time.process_time() - cpu0
        cpu_server = process_cpu(self.server_pid) - server0 if not submit else 0.0
        bucket = int(self.settings.bucket.total_seconds())
        window = (
            float(int(plan.start.timestamp()) // bucket * bucket),
            float(-(-plan.end.timestamp() // bucket) * bucket),
        )
        cycle = Cycle(
            number=len(self.cycles),
            began=now.timestamp(),
            window=window,
            start_offsets=start_offsets,
            chunks_from=plan.chunks_from,
            done=done,
            landed_records=landed.records,
            cpu_local=cpu_local,
            cpu_client=client,
            cpu_server=cpu_server,
            server_cpu_before=server0 if not submit else 0.0,
            wall=done - wall0,
            rollup_gauge_points=self.rollup_gauge_points(plan.start, plan.end),
            anomaly_instances=self.anomaly_instances(plan.start, plan.end),
            **pipeline_input(self.log, log_offset),
        )
        self.cycles.append(cycle)
        return cycle

    def rollup_gauge_points(self, start: datetime, end: datetime) -> int:
        """Client gauge points the live rollups table counts in the window's hours (read after the cycle,
        outside its CPU; an hour the window has left keeps an older cycle's rows, as ``detect`` knows)."""
        frame = read_table(
            self.area, "rollups", columns=["record_type", "metric_type", "count", "date", "hour"]
        )
        frame = window_rows(frame, start, end)
        if frame.empty:
            return 0
        mine = frame[(frame["record_type"] == "client") & (frame["metric_type"] == "gauge")]
        return int(mine["count"].sum())

    def anomaly_instances(self, start: datetime, end: datetime) -> set[str]:
        frame = window_rows(
            read_table(self.area, "anomalies", columns=["client_instance_id", "date", "hour"]), start, end
        )
        return set() if frame.empty else set(frame["client_instance_id"].dropna().astype(str))


# ---- what each cycle read --------------------------------------------------------------------------


@dataclass(frozen=True)
class Pushes:
    """Every landed client push of the zone: partition, offset, accept time, point time, instance, gauges."""

    partition: np.ndarray
    offset: np.ndarray
    accepted: np.ndarray
    point_time: np.ndarray
    instance: np.ndarray
    gauges: np.ndarray

    @classmethod
    def read(cls, landing: Path) -> Pushes:
        dataset = ds.dataset(landing / "datapoints", format="parquet", partitioning="hive")
        table = dataset.to_table(
            columns=["partition", "offset", "record_timestamp", "time", "metric_type", "client_instance_id"],
            filter=pc.field("record_type") == "client",
        )
        gauge = pc.cast(pc.equal(table["metric_type"], "gauge"), pa.int64())
        table = table.append_column("gauge", gauge).drop_columns(["metric_type"])
        table = table.set_column(2, "record_timestamp", pc.cast(table["record_timestamp"], pa.int64()))
        table = table.set_column(3, "time", pc.cast(table["time"], pa.int64()))
        grouped = table.group_by(["partition", "offset"]).aggregate(
            [
                ("record_timestamp", "min"),
                ("time", "min"),
                ("client_instance_id", "min"),
                ("gauge", "sum"),
            ]
        )
        unit = {"ms": 1e3, "us": 1e6, "ns": 1e9, "s": 1.0}
        ts_unit = dataset.schema.field("record_timestamp").type.unit
        time_unit = dataset.schema.field("time").type.unit
        return cls(
            partition=grouped["partition"].to_numpy(),
            offset=grouped["offset"].to_numpy(),
            accepted=grouped["record_timestamp_min"].to_numpy() / unit[ts_unit],
            point_time=grouped["time_min"].to_numpy() / unit[time_unit],
            instance=np.array(grouped["client_instance_id_min"].to_pylist(), dtype=object),
            gauges=grouped["gauge_sum"].to_numpy(),
        )


def landed_by(pushes: Pushes, cycles: list[Cycle]) -> np.ndarray:
    """Index of the cycle that landed each push: the last whose start offset is at or below its offset."""
    result = np.full(len(pushes.offset), -1)
    for index, cycle in enumerate(cycles):
        starts = np.array([cycle.start_offsets.get(int(p), 0) for p in pushes.partition])
        result = np.where(pushes.offset >= starts, index, result)
    return result


def read_by(pushes: Pushes, cycle: Cycle, index: int, landed: np.ndarray) -> np.ndarray:
    """The pushes cycle ``index`` read: landed by then, in its selected chunks, points in its window."""
    mask = (landed >= 0) & (landed <= index)
    mask &= (pushes.point_time >= cycle.window[0]) & (pushes.point_time < cycle.window[1])
    if cycle.chunks_from is not None:
        first = np.array([cycle.chunks_from.get(int(p), -1) for p in pushes.partition])
        mask &= (first >= 0) & (pushes.offset >= first)
    return mask


def first_readable(pushes: Pushes, cycles: list[Cycle]) -> tuple[np.ndarray, list[str]]:
    """Per push, the wall time its first including cycle ended (NaN: none); the per-cycle model check."""
    landed = landed_by(pushes, cycles)
    readable = np.full(len(pushes.offset), np.nan)
    problems = []
    for index, cycle in enumerate(cycles):
        mask = read_by(pushes, cycle, index, landed)
        expected = int(pushes.gauges[mask].sum())
        if expected != cycle.rollup_gauge_points:
            problems.append(
                f"cycle {index}: the live rollups count {cycle.rollup_gauge_points} gauge points, "
                f"the model {expected}"
            )
        readable = np.where(mask & np.isnan(readable), cycle.done, readable)
    return readable, problems


# ---- figures ---------------------------------------------------------------------------------------


def quantiles(values: list[float] | np.ndarray) -> tuple[float, float, float]:
    data = np.asarray(values, dtype=float)
    return float(np.percentile(data, 50)), float(np.percentile(data, 95)), float(data.max())


def print_freshness(what: str, instances: int, values: list[float] | np.ndarray) -> None:
    p50, p95, most = quantiles(values)
    print(f"freshness p50: {p50:.1f} s ({what}, {instances} instances)")
    print(f"freshness p95: {p95:.1f} s ({what}, {instances} instances)")
    print(f"freshness max: {most:.1f} s ({what}, {instances} instances)")


def cpu_rate(cycles: list[Cycle]) -> float:
    """CPU seconds per wall second over whole periods, from the first of these consecutive cycles' start to
    the last one's: each earlier cycle's own CPU and the server's until the next began (paced cycles leave
    it idle, not at rest). One cycle alone: its own CPU over its own time."""
    first, last = cycles[0], cycles[-1]
    if len(cycles) == 1:
        return first.cpu / first.wall
    span = last.started - first.started
    server = last.server_cpu_before - first.server_cpu_before
    return (sum(c.cpu_local + c.cpu_client for c in cycles[:-1]) + server) / span


def full_window(cycles: list[Cycle], live_since: float, lookback: timedelta) -> list[Cycle]:
    """Those of ``cycles`` that began once a whole lookback (and ``begin_cycle``'s minute of clock slack) of
    chunks had landed since live mode's first cycle began (``live_since``): each reads as much as any later
    one, so together they show the cost live mode settles at."""
    return [c for c in cycles if c.began >= live_since + lookback.total_seconds() + 60]


def pipeline_input(log: Path, offset: int) -> dict[str, Any]:
    """``input_bytes`` and ``small_input_conf`` of the pipeline run written to ``log`` from ``offset`` on."""
    with log.open("rb") as out:
        out.seek(offset)
        text = out.read().decode(errors="replace")
    for record in timing_records(text):  # only the pipeline prints an input phase
        if record.get("phase") == "input":
            return {"input_bytes": record.get("bytes"), "small_input_conf": record.get("small_input_conf")}
    return {}


def describe(cycle: Cycle) -> str:
    read = ""
    if cycle.input_bytes is not None:
        how = "interpreted" if cycle.small_input_conf else "generated code"
        read = f", read {cycle.input_bytes / 1e6:.1f} MB ({how})"
    return (
        f"cycle {cycle.number}: {cycle.wall:.1f} s wall, {cycle.landed_records} records landed{read}, CPU "
        f"{cycle.cpu:.1f} s (landing+detect {cycle.cpu_local:.1f}, client {cycle.cpu_client:.1f}, "
        f"server {cycle.cpu_server:.1f})"
    )


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# ---- the run ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HourlyLanding:
    """The topic landed in one go into a fresh zone, as the hourly DAG lands it (``until`` bounds it)."""

    zone: Path
    pushes: Pushes
    cpu: float

    @classmethod
    def land(cls, live: Live, folder: Path, until: datetime | None = None) -> HourlyLanding:
        cpu0 = time.process_time()
        land_topic(live.config, live.topic, folder / "landing", until=until)
        cpu = time.process_time() - cpu0
        return cls(folder / "landing", Pushes.read(folder / "landing"), cpu)


def hourly_run(
    live: Live, landed: HourlyLanding, hours: tuple[datetime, datetime], pushes_per_s: float
) -> dict[str, Any]:
    """The hourly DAG's pipeline over a landing, on the same server: CPU seconds of its landing, client
    and server, and the pipeline's wall seconds."""
    zone, pushes, landing_cpu = landed.zone, landed.pushes, landed.cpu
    server0, wall0 = process_cpu(live.server_pid), time.time()
    start, end = hours
    args = application_args(
        str(zone),
        str(zone.parent / "analytics"),
        start.isoformat(),
        end.isoformat(),
        "1m",
        rules=str(DEFAULT_RULES),
        history="24h",
    )  # fmt: skip  (the kip714_rollups DAG's analytics task)
    env = {**spark_env(), REMOTE_ENV: live.server_url}
    log_offset = live.log.stat().st_size if live.log.exists() else 0
    client = run_child(connect_command("pipeline", args), env, live.log)
    server = process_cpu(live.server_pid) - server0
    read = pipeline_input(live.log, log_offset)
    return {
        "read": (
            f"read {read['input_bytes'] / 1e6:.1f} MB "
            f"({'interpreted' if read.get('small_input_conf') else 'generated code'})"
            if read.get("input_bytes") is not None
            else "input not reported"
        ),
        "pushes": len(pushes.offset),
        "telemetry_s": len(pushes.offset) / pushes_per_s,
        "landing_cpu": landing_cpu,
        "client_cpu": client,
        "server_cpu": server,
        "cpu": landing_cpu + client + server,
        "wall": time.time() - wall0,
        "hours": (end - start).total_seconds() / 3600,
    }


def hourly(live: Live, work: Path, pushes_per_s: float) -> dict[str, Any]:
    """The hourly DAG over the same telemetry, per hour of telemetry, its fixed part counted once.

    The real DAG runs once an hour: a run's fixed part (the client, planning, the listing) is paid once
    per hour, its per-push part for every push. Scaling one run over a few minutes of telemetry up to an
    hour would count the fixed part about ten times. So a run over the first half of the same pushes
    (first: what warming up remains counts as fixed, which errs against live mode) and a run over all of
    them, both over the same hours, give a line: its slope is the CPU per push, its intercept the fixed
    part, and an hour costs the fixed part once plus an hour's pushes. When the line does not rise, or its
    fixed part falls outside [0, the whole run's CPU], the whole run scaled to an hour stands instead, and
    says so. Each landing is landed once: the whole one first (its pushes give the hours and the middle).
    """
    whole_landing = HourlyLanding.land(live, work / "hourly")
    accepted = np.sort(whole_landing.pushes.accepted)
    start = datetime.fromtimestamp(float(accepted[0]), UTC).replace(minute=0, second=0, microsecond=0)
    last_hour = datetime.fromtimestamp(float(accepted[-1]), UTC).replace(minute=0, second=0, microsecond=0)
    middle = datetime.fromtimestamp(float(accepted[len(accepted) // 2]), UTC)
    half_landing = HourlyLanding.land(live, work / "hourly-half", until=middle)
    hours = (start, last_hour + timedelta(hours=1))
    half = hourly_run(live, half_landing, hours, pushes_per_s)
    whole = hourly_run(live, whole_landing, hours, pushes_per_s)
    scaled = whole["cpu"] * 3600 / whole["telemetry_s"]
    spread = whole["telemetry_s"] - half["telemetry_s"]
    slope = (whole["cpu"] - half["cpu"]) / spread if spread > 0 else 0.0
    fixed = whole["cpu"] - slope * whole["telemetry_s"]
    if slope <= 0 or not 0 <= fixed <= whole["cpu"]:
        print(
            f"the two hourly runs give no usable line (slope {slope:.4f} CPU s per telemetry second): scaled"
        )
        return {
            **whole,
            "half": half,
            "fixed_cpu": None,
            "cpu_per_hour": scaled,
            "cpu_per_hour_scaled": scaled,
        }
    return {
        **whole,
        "half": half,
        "fixed_cpu": fixed,
        "cpu_per_hour": fixed + slope * 3600,
        "cpu_per_hour_scaled": scaled,
    }


def run(args: argparse.Namespace, work: Path) -> int:
    from kip714_dev.local_spark import connect

    settings = LiveSettings(lookback=args.lookback)
    connect.READY_TIMEOUT_S = 600.0  # a loaded shared machine takes minutes to start a JVM
    factory = LocalKafkaClusterFactory(work / "kafka")
    print(f"load average at start: {load_average()}", flush=True)
    cluster = start_cluster(factory, brokers=args.brokers, name="live")
    try:
        if not cluster.plugin_loaded:
            raise SystemExit(
                "the broker plugin jar is not built: run `make plugin` (or set KIP714_PLUGIN_JAR)"
            )
        ports = broker_ports(cluster)
        subscribe_fleet(cluster.client_config(), SUBSCRIPTION_NAME, args.interval_s)
        state = connect.start(args.connect_dir or work / "connect", master="local[2]")
        print(f"Spark Connect server {state.url} (pid {state.pid}) on local[2]", flush=True)
        live = Live(
            work / "root", cluster.client_config(), cluster.telemetry_topic, settings, state.url, state.pid,
            work / "spark.log", session_per_cycle=args.session_per_cycle,
        )  # fmt: skip
        if args.connect_dir is None:
            warm_server(live, work)
        return fleet_and_cycles(args, live, ports, work)
    finally:
        with contextlib.suppress(Exception):
            if args.connect_dir is None:
                connect.stop(work / "connect")
        factory.stop_all()


def warm_server(live: Live, work: Path, runs: int = 2) -> None:
    """A server in service has run many cycles: warm this one (its JIT, its caches) before the fleet,
    with the live pipeline over the brokers' own records (the plugin exports them every 10 s)."""
    zone = work / "warm" / "landing"
    time.sleep(15)  # a broker record or two
    for run in range(runs):
        began = time.time()
        land_topic(live.config, live.topic, zone)
        end = datetime.now(UTC)
        args = application_args(
            str(zone), str(work / "warm" / "analytics"), (end - live.settings.lookback).isoformat(),
            end.isoformat(), live.settings.bucket_flag, rules=str(DEFAULT_RULES), history="1h",
            history_root=str(work / "warm" / "hourly"), baseline_for="30s",
        )  # fmt: skip
        run_child(connect_command("pipeline", args), {**spark_env(), REMOTE_ENV: live.server_url}, live.log)
        print(f"server warm-up run {run + 1}: {time.time() - began:.0f} s", flush=True)


def fleet_and_cycles(args: argparse.Namespace, live: Live, ports: list[int], work: Path) -> int:
    settings = live.settings
    warm_s = args.warmup_s
    early_end = warm_s + args.duration_s
    normal_rate = args.instances / args.interval_s
    prefill_pushes = args.prefill_minutes * 60 * normal_rate
    prefill_s = prefill_pushes / (args.instances / args.prefill_interval_s) if args.prefill_minutes else 0.0
    settle_s = (settings.lookback + CLOCK_SLACK).total_seconds() + args.interval_s
    late_end = early_end + prefill_s + (settle_s + args.late_s if args.prefill_minutes else 0.0)
    schedule = [(early_end, args.interval_s)]
    if args.prefill_minutes:
        schedule += [(early_end + prefill_s, args.prefill_interval_s), (late_end, args.interval_s)]
    breach_times = [
        warm_s + args.duration_s * (0.2 + 0.4 * k / max(1, args.breaches - 1)) for k in range(args.breaches)
    ]
    shares = [
        args.instances // args.processes + (1 if k < args.instances % args.processes else 0)
        for k in range(args.processes)
    ]
    breaches: list[dict[int, float]] = [{} for _ in range(args.processes)]
    for k, at in enumerate(breach_times):
        process = k % args.processes
        breaches[process][(k * 97 + 11) % shares[process]] = at
    context = multiprocessing.get_context("spawn")
    queue: Any = context.Queue()
    started = time.time() + 3
    workers = [
        context.Process(
            target=load_process,
            args=(LoadShare(k, ports, shares[k], schedule, breaches[k], started), queue),
            daemon=True,
        )
        for k in range(args.processes)
    ]
    print(
        f"fleet: {args.instances} instances from {args.processes} processes, {args.brokers} broker(s); "
        f"{warm_s:.0f} s warm-up + {args.duration_s:.0f} s every {args.interval_s:g} s (early hour), "
        f"{prefill_s:.0f} s every {args.prefill_interval_s:g} s (prefill, {args.prefill_minutes:g} min of "
        f"telemetry), {late_end - early_end - prefill_s:.0f} s every {args.interval_s:g} s (late hour); "
        f"{args.breaches} breaching instances from {', '.join(f'{t:.0f}' for t in breach_times)} s; "
        f"lookback {settings.lookback}, bucket {settings.bucket}, breach for {settings.baseline_for}",
        flush=True,
    )
    for worker in workers:
        worker.start()
    if args.prefill_minutes:
        threading.Thread(
            target=prefill_subscription,
            args=(live.config, started + early_end, started + early_end + prefill_s, args.prefill_interval_s),
            daemon=True,
        ).start()
    try:
        return cycles_beside(args, live, work, workers, queue, started, schedule, prefill_s)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()


def prefill_subscription(config: dict[str, Any], begin: float, end: float, interval_s: float) -> None:
    """A second subscription at the prefill's interval from ``begin`` to ``end`` (wall clock).

    A client matched by two subscriptions pushes at the shorter interval; without it the broker throttles
    every push that comes sooner than the bench's normal interval (``THROTTLING_QUOTA_EXCEEDED``), and
    the prefill does not fill the hour. The fleet's instances ask again on ``UNKNOWN_SUBSCRIPTION_ID``."""
    time.sleep(max(0.0, begin - time.time()))
    subscribe_fleet(config, PREFILL_SUBSCRIPTION_NAME, interval_s)
    print(f"prefill: subscription {PREFILL_SUBSCRIPTION_NAME} at {interval_s:g} s created", flush=True)
    time.sleep(max(0.0, end - time.time()))
    with ClientMetricsAdmin(to_kafka_python_kwargs(config)) as admin:
        admin.delete(PREFILL_SUBSCRIPTION_NAME)
    print(f"prefill: subscription {PREFILL_SUBSCRIPTION_NAME} deleted", flush=True)


def cycles_beside(
    args: argparse.Namespace,
    live: Live,
    work: Path,
    workers: list[Any],
    queue: Any,
    started: float,
    schedule: list[tuple[float, float]],
    prefill_s: float,
) -> int:
    """Cycles while the fleet runs (back to back, or one per ``--every-s`` as ``KIP714_LIVE_EVERY`` runs
    them), one more after it; then the figures."""
    warm_s, early_end, late_end = args.warmup_s, schedule[0][0], schedule[-1][0]
    normal_rate = args.instances / args.interval_s
    phase_of: list[str] = []
    fleet_end = started + late_end
    time.sleep(max(0.0, started + 2 * args.interval_s - time.time()))  # a first cycle finds pushes to land
    while time.time() < fleet_end + args.interval_s:
        began = time.time() - started
        cycle = live.cycle()
        phase = (
            "warm-up" if began < warm_s or len(live.cycles) <= args.warmup_cycles
            else "early" if began < early_end or not args.prefill_minutes
            else "prefill" if began < early_end + prefill_s
            else "late"
        )  # fmt: skip
        phase_of.append(phase)
        print(f"[{phase} {began:.0f} s, load {load_average()}] {describe(cycle)}", flush=True)
        # a cycle that overran its interval is followed at once, as the DAG's next run would be
        time.sleep(max(0.0, started + began + args.every_s - time.time()))
    for _ in range(1):  # begins after the fleet's last push: reads what the last cycle did not land
        cycle = live.cycle()
        phase_of.append("tail")
        print(f"[tail] {describe(cycle)}", flush=True)
    reports: list[FleetReport] = []
    deadline = time.monotonic() + 120
    while len(reports) < len(workers) and time.monotonic() < deadline:
        with contextlib.suppress(Empty):
            reports.append(queue.get(timeout=1))
    for worker in workers:
        worker.join(timeout=10)
    if len(reports) < len(workers):
        raise SystemExit("a load process did not report")
    return figures(args, live, work, reports, phase_of, started, early_end, normal_rate)


def figures(
    args: argparse.Namespace,
    live: Live,
    work: Path,
    reports: list[FleetReport],
    phase_of: list[str],
    started: float,
    early_end: float,
    normal_rate: float,
) -> int:
    failed = 0
    answers: dict[str, int] = {}
    for report in reports:
        for code, count in report.answers.items():
            answers[code] = answers.get(code, 0) + count
    print(f"\nanswers: {answers}; subscribed {sum(r.subscribed for r in reports)} of {args.instances}")
    pushes = Pushes.read(live.landing)
    readable, problems = first_readable(pushes, live.cycles)
    print(f"landed client pushes: {len(pushes.offset)}; cycles: {len(live.cycles)}")
    for problem in problems:
        print(f"MODEL CHECK FAILED: {problem}")
    failed |= bool(problems)
    measured = [c for c, phase in zip(live.cycles, phase_of, strict=True) if phase == "early"]
    if not measured:
        print("no early-hour cycle was measured (the warm-up took the whole duration)")
        return 1
    since, until = measured[0].began, started + early_end
    chosen = (pushes.accepted >= since) & (pushes.accepted < until)
    unread = int(np.isnan(readable[chosen]).sum())
    delays = readable[chosen] - pushes.accepted[chosen]
    print(
        f"\nearly hour: {int(chosen.sum())} pushes accepted from the first measured cycle's start to the "
        f"prefill ({unread} never read); {len(measured)} cycles, wall p50 "
        f"{np.percentile([c.wall for c in measured], 50):.1f} s"
    )
    if unread or not chosen.any():
        failed = 1
    else:
        print_freshness("rollups", args.instances, delays)
    breach_delays = []
    for report in reports:
        for instance, sent in report.breaches.items():
            mine = (pushes.instance == instance) & (pushes.accepted >= sent)
            if not mine.any():
                print(f"breach {instance}: its first breaching push did not land")
                failed = 1
                continue
            accepted = float(pushes.accepted[mine].min())
            shown = next(
                (c for c in live.cycles if c.done > accepted and instance in c.anomaly_instances), None
            )
            if shown is None:
                print(f"breach {instance} (accepted at {accepted - started:.0f} s): no cycle showed it")
                continue
            breach_delays.append(shown.done - accepted)
            print(
                f"breach {instance}: first breaching push accepted at {accepted - started:.0f} s, its "
                f"anomaly row first in cycle {shown.number}, {shown.done - accepted:.1f} s later"
            )
    if breach_delays:
        which = f"{len(breach_delays)} injected of {args.instances}"
        print_freshness(
            f"anomaly, {which}; includes the {live.settings.baseline_for.seconds} s breach",
            args.instances,
            breach_delays,
        )
    else:
        print("no injected anomaly was found by any cycle")
        failed = 1
    pace = f"one cycle per {args.every_s:g} s" if args.every_s else "back-to-back"
    rate = cpu_rate(measured)
    print(
        f"\nlive mode CPU: {rate:.2f} cores over {len(measured)} {pace} early-hour cycles = "
        f"{rate * 3600:.0f} CPU s per hour of telemetry ({normal_rate:.0f} pushes/s)"
    )
    settled = full_window(measured, live.cycles[0].began, live.settings.lookback)
    if len(settled) > 1:  # the figure compared with the hourly DAG: what live mode costs once settled
        rate = cpu_rate(settled)
        print(
            f"live mode CPU once each cycle reads a whole lookback: {rate:.2f} cores over {len(settled)} "
            f"cycles ({settled[0].number}-{settled[-1].number}) = {rate * 3600:.0f} CPU s per hour"
        )
    else:
        print("fewer than 2 early-hour cycles read a whole lookback (raise --duration-s): all of them count")
    live_per_hour = rate * 3600
    failed |= report_cost(args, live, work, measured, phase_of, normal_rate, live_per_hour)
    return failed


def report_cost(
    args: argparse.Namespace,
    live: Live,
    work: Path,
    measured: list[Cycle],
    phase_of: list[str],
    normal_rate: float,
    live_per_hour: float,
) -> int:
    """Live mode's CPU against the hourly DAG's, minute 5 against minute 55, the spark-submit cycle."""
    failed = 0
    prefill = [c for c, phase in zip(live.cycles, phase_of, strict=True) if phase == "prefill"]
    after = [c for c, phase in zip(live.cycles, phase_of, strict=True) if phase in ("late", "tail")]
    if args.prefill_minutes and prefill and len(after) > 1:
        # The prefill's last pushes were landed by the first cycle that began after it, at offsets at or
        # after the ones that cycle recorded when it began: only the next cycle began with them all
        # committed. A cycle is clean of the prefill when its chunk selection starts at or after that
        # second cycle's offsets (after[0]'s would still take the prefill's tail: seen, 43k pushes).
        clean_from = after[1].start_offsets
        late = [
            c
            for c, phase in zip(live.cycles, phase_of, strict=True)
            if phase == "late"
            and c.chunks_from is not None
            and all(c.chunks_from.get(p, 0) >= offset for p, offset in clean_from.items())
        ][: args.late_cycles]
        if not late:
            print("no late-hour cycle ran after the prefill left the window: raise --late-s")
            failed = 1
        else:
            early = float(np.median([c.cpu for c in measured]))
            late_cpu = float(np.median([c.cpu for c in late]))
            hour_files = zone_hour_files(live.landing, late[-1].began)
            print(
                f"\nper-cycle CPU, median: early hour {early:.1f} s ({len(measured)} cycles, "
                f"{measured[0].number}-{measured[-1].number}), late hour {late_cpu:.1f} s "
                f"({len(late)} cycles, "
                f"{late[0].number}-{late[-1].number}; the current hour folder then held {hour_files[0]} "
                f"datapoints files, {hour_files[1] / 1e6:.0f} MB): late/early {late_cpu / early:.2f}x "
                "(target < 2x)"
            )
            for cycle in late:
                print(f"  late {describe(cycle)}")
    elif args.prefill_minutes:
        print("no cycle ran during or after the prefill")
        failed = 1
    cost = hourly(live, work, normal_rate)
    half = cost["half"]
    print(
        f"\nhourly DAG over the same topic ({cost['pushes']} pushes = {cost['telemetry_s'] / 60:.0f} min of "
        f"telemetry at {normal_rate:.0f} pushes/s, landed in one go, pipeline over {cost['hours']:.0f} "
        f"hour(s) of 1m buckets on the same server, {cost['read']}): "
        f"landing {cost['landing_cpu']:.1f} + client "
        f"{cost['client_cpu']:.1f} + server {cost['server_cpu']:.1f} CPU s, {cost['wall']:.0f} s wall"
    )
    print(
        f"the same over the first half, run first ({half['pushes']} pushes, {half['hours']:.0f} hour(s), "
        f"{half['read']}): landing {half['landing_cpu']:.1f} + client {half['client_cpu']:.1f} + server "
        f"{half['server_cpu']:.1f} CPU s"
    )
    if cost["fixed_cpu"] is not None:
        print(
            f"hourly DAG per hour of telemetry: fixed part {cost['fixed_cpu']:.1f} CPU s once + "
            f"{cost['cpu_per_hour'] - cost['fixed_cpu']:.0f} for an hour's pushes = "
            f"{cost['cpu_per_hour']:.0f} CPU s (the whole run scaled to an hour, fixed part and all: "
            f"{cost['cpu_per_hour_scaled']:.0f})"
        )
    print(
        f"live/hourly CPU per hour of telemetry: {live_per_hour:.0f} / {cost['cpu_per_hour']:.0f} = "
        f"{live_per_hour / cost['cpu_per_hour']:.1f}x (target <= 3x; against the scaled run: "
        f"{live_per_hour / cost['cpu_per_hour_scaled']:.1f}x)"
    )
    if args.submit_cycle:
        cycle = live.cycle(submit=True)
        print(
            f"\nspark-submit per cycle (local[2]): {cycle.wall:.1f} s wall, CPU {cycle.cpu:.1f} s "
            f"(spark-submit {cycle.cpu_client:.1f}, landing+detect {cycle.cpu_local:.1f})"
        )
    return failed


def zone_hour_files(landing: Path, at: float) -> tuple[int, int]:
    """(files, bytes) of the datapoints hour folder of ``at``."""
    hour = datetime.fromtimestamp(at, UTC)
    folder = landing / "datapoints" / f"date={hour:%Y-%m-%d}" / f"hour={hour.hour:02d}"
    files = [path for path in folder.glob("*.parquet")] if folder.exists() else []
    return len(files), sum(path.stat().st_size for path in files)


def duration(text: str) -> timedelta:
    try:
        return parse_duration(text, "--lookback", timedelta(hours=1))
    except Exception as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=None, help="load processes (default: 1 per 2,500)")
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--interval-s", type=float, default=10.0, help="push interval")
    parser.add_argument("--duration-s", type=float, default=240.0, help="the early hour, after the warm-up")
    parser.add_argument("--warmup-s", type=float, default=45.0, help="fleet time before measuring")
    parser.add_argument("--warmup-cycles", type=int, default=3, help="cycles not measured (a cold server)")
    parser.add_argument("--lookback", type=duration, default=LiveSettings().lookback, help="e.g. 3m")
    parser.add_argument("--breaches", type=int, default=5, help="instances that breach (at spread times)")
    parser.add_argument("--prefill-minutes", type=float, default=50.0, help="0: no late-hour phase")
    parser.add_argument("--prefill-interval-s", type=float, default=1.0)
    parser.add_argument(
        "--late-s", type=float, default=420.0, help="late-hour seconds after the prefill (long cycles)"
    )
    parser.add_argument("--late-cycles", type=int, default=4)
    parser.add_argument(
        "--every-s",
        type=float,
        default=0.0,
        help="a cycle every this many seconds, as KIP714_LIVE_EVERY (0: back to back, @continuous)",
    )
    parser.add_argument("--submit-cycle", action="store_true", help="one more cycle with spark-submit")
    parser.add_argument(
        "--session-per-cycle",
        action="store_true",
        help="each cycle in a Spark Connect session of its own (as before cycles shared one)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--connect-dir",
        type=Path,
        default=None,
        help="use (or start) the Spark Connect server of this folder and leave it running: a server "
        "already warm from earlier runs, as in service (default: a server of the run's own, warmed first)",
    )
    args = parser.parse_args(argv)
    if args.processes is None:
        args.processes = max(1, -(-args.instances // 2500))
    if not (
        3 <= args.instances <= 20_000
        and 1 <= args.processes <= 16
        and args.brokers in (1, 3)
        and 1 <= args.interval_s <= 60
        and 30 <= args.duration_s <= 1800
        and 0 <= args.breaches <= 20
        and 0 <= args.prefill_minutes <= 60
        and 0.5 <= args.prefill_interval_s <= args.interval_s
        and 0 <= args.late_s <= 3600
        and 1 <= args.late_cycles <= 20
        and 0 <= args.every_s <= 3600  # also false for NaN
    ):
        parser.error(
            "--instances 3..20000, --processes 1..16, --brokers 1 or 3, --interval-s 1..60, "
            "--duration-s 30..1800, --breaches 0..20, --prefill-minutes 0..60, "
            "--prefill-interval-s 0.5..--interval-s, --late-s 0..3600, --late-cycles 1..20, --every-s 0..3600"
        )
    pace = timedelta(seconds=args.every_s)
    if args.every_s and (problem := interval_problem(pace, args.lookback, "--lookback")):
        parser.error(f"--every-s: {problem}")
    if args.breaches and args.instances // args.processes < args.breaches + 3:
        parser.error("--breaches: every load process needs at least 3 peers per breaching instance")
    return args


def main() -> int:
    args = parse_args()
    print(f"command: {' '.join(sys.argv)}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    work = Path(tempfile.mkdtemp(prefix="kip714-live-fresh-"))
    try:
        return run(args, work)
    finally:
        print(f"load average at the end: {load_average()}", flush=True)
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    exit_on_sigterm()  # a kill still stops the brokers and the Connect server this script started
    sys.exit(main())
