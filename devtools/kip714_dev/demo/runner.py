"""``kip714 demo``: the whole story on this machine, with embedded defaults and nothing to configure.

Local Apache Kafka with the broker plugin, a fleet of real clients (two of them misbehaving), a
troubleshooting window opened by ``kip714_troubleshoot`` (``airflow dags test``) aimed at the slow
consumer, then ``kip714_rollups`` over the same period, a report, and proof that no subscription is
left. Everything the demo starts, it stops; a second run starts from a clean slate by itself.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.report.builder import build_report
from airflow_provider_kip714.storage.data_root import DATA_DIR_ENV, scheduled_area, troubleshoot_areas
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription, parse_match
from kip714_dev.airflow_standalone import airflow_environment
from kip714_dev.demo.broker_failure import BrokerFailure, fail_a_broker_mid_window
from kip714_dev.demo.fleet import DEMO_TELEMETRY_MAX_BYTES, ClientFleet, default_fleet, expected_pushers
from kip714_dev.demo.spark_server import DemoSparkServer
from kip714_dev.demo.summary import anomaly_lines, convergence_lines, silent_lines, telemetry_seen
from kip714_dev.demo.topology import demo_topology
from kip714_dev.local_kafka.brokers import cluster_status, stop_cluster
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory

log = logging.getLogger("kip714.demo")

DEMO_DIR_ENV = "KIP714_DEMO_DIR"
STANDING_SUBSCRIPTION = "kip714-demo-standing-reask"
FLEET_MATCH = "client_id=demo-.*"
LIBRDKAFKA_MATCH = "client_software_name=confluent-kafka-python"
LACKED_PREFIX = "org.apache.kafka.producer.buffer."
"""The Java producer's buffer pool metrics: librdkafka has no such metric (the guardrail's case)."""
SLOW_CONSUMER_MATCH = "demo-audit-consumer-.*"
KAFKA_DIR_NAME = "kafka"
CLUSTER_BROKERS = 3


def default_demo_dir() -> Path:
    configured = os.environ.get(DEMO_DIR_ENV)
    return (
        Path(configured).expanduser() if configured else Path.home() / ".local" / "state" / "kip714" / "demo"
    )


@dataclass(frozen=True)
class DemoSettings:
    work_dir: Path
    warmup_s: int = 40
    window_s: int = 120
    window_interval_ms: int = 1000
    fleet_interval_ms: int = 5000
    standing_interval_ms: int = 5000
    fleet_window: str = "20m"
    topology: str = "single"  # or "cluster": S3Proxy + Spark standalone (kip714_dev.demo.topology)
    spark: str = "connect"  # or "submit": a spark-submit per analytics task (the cluster topology's way)

    @property
    def spark_connect(self) -> bool:
        """A warmed Spark Connect server runs the analytics (single topology only: the cluster topology
        shows ``spark-submit`` to a standalone master)."""
        return self.spark == "connect" and self.topology == "single"


class Steps:
    """Numbered progress lines, with the time each step took."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.number = 0
        self.started = time.monotonic()

    @contextmanager
    def step(self, title: str) -> Iterator[None]:
        self.number += 1
        print(f"\n[{self.number}/{self.total}] {title} ...", flush=True)
        began = time.monotonic()
        yield
        print(
            f"[{self.number}/{self.total}] done in {time.monotonic() - began:.1f} s "
            f"(demo at {time.monotonic() - self.started:.0f} s)",
            flush=True,
        )


def _admin(bootstrap: str) -> ClientMetricsAdmin:
    return ClientMetricsAdmin(to_kafka_python_kwargs({"bootstrap.servers": bootstrap}))


def _stop_leftover(kafka_dir: Path) -> None:
    if kafka_dir.exists() and any(state for _, state in cluster_status(kafka_dir)):
        print(f"  stopping the brokers a previous demo left running in {kafka_dir}")
        stop_cluster(kafka_dir, 30)


def prepare_work_dir(work: Path, kafka_dir: Path, data_dir: Path, airflow_home: Path) -> None:
    """Remove what a previous demo left, the Airflow home included.

    Its metadata database keeps the previous run's Assets active: after a ``single`` demo, the
    ``cluster`` demo's Assets have the same names at ``s3://`` URIs, so Airflow leaves them inactive
    and refuses to run the tasks that emit them (``dags test`` runs no scheduler to retire the old ones).
    """
    _stop_leftover(kafka_dir)
    for folder in (kafka_dir, data_dir, airflow_home, work / "fleet-logs"):
        shutil.rmtree(folder, ignore_errors=True)
    airflow_home.mkdir(parents=True, exist_ok=True)


def _start_kafka(work_dir: Path, brokers: int) -> LocalKafkaCluster:
    cluster = LocalKafkaClusterFactory(work_dir).start(
        name=KAFKA_DIR_NAME,
        brokers=brokers,
        sasl_users={},
        broker_metrics_interval_ms=10_000,
        telemetry_max_bytes=DEMO_TELEMETRY_MAX_BYTES,  # too small for the Java producer: a silent client
    )
    if not cluster.plugin_loaded:
        cluster.stop()
        raise Kip714Error("the broker plugin jar is missing: run `make plugin` (make demo does it for you)")
    return cluster


def _run_cli(*args: str) -> tuple[dict[str, Any], list[str]]:
    """The command's JSON result and its ``warning:`` lines (the guardrail's advice when a window opens)."""
    command = [_kip714(), *args, "--json"]
    print("  $ " + " ".join(command[1:]), flush=True)
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise Kip714Error(f"{' '.join(command[1:3])} failed: {completed.stderr.strip()}")
    warnings = [line for line in completed.stderr.splitlines() if line.startswith("warning:")]
    for line in warnings:
        print(f"  {line}", flush=True)
    return json.loads(completed.stdout), warnings


def _kip714() -> str:
    return str(Path(sys.executable).parent / "kip714")


def _wait_for_fleet(bootstrap: str, client_ids: list[str], since: datetime, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    seen: set[str] = set()
    while time.monotonic() < deadline:
        seen = telemetry_seen(bootstrap, since)
        waiting = sorted(set(client_ids) - seen)
        print(f"  pushes seen from {len(client_ids) - len(waiting)}/{len(client_ids)} clients", flush=True)
        if not waiting:
            return
        time.sleep(5)
    raise Kip714Error(
        f"no telemetry within {timeout_s:.0f} s from: {', '.join(sorted(set(client_ids) - seen))}"
    )


def _airflow(env: dict[str, str], *args: str, title: str) -> None:
    command = [str(Path(sys.executable).parent / "airflow"), *args]
    print("  $ airflow " + " ".join(args), flush=True)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    tail: list[str] = []
    for line in process.stdout:
        tail = [*tail[-40:], line.rstrip()]
        shown = task_log_line(line)
        if shown:
            print(f"  | {shown}", flush=True)
    if process.wait() != 0:
        print("\n".join(f"  ! {line}" for line in tail), flush=True)
        raise Kip714Error(f"{title} failed (exit {process.returncode}); its last log lines are above")


_STRUCTLOG = re.compile(
    r"^\d{4}-\d\d-\d\dT(\d\d:\d\d:\d\d)\.\d+Z \[(\w+)\s*\] (.*?)(?: \[([\w.]+)\])?(?: loc=.*)?$"
)
_OUR_LOGGERS = ("airflow_provider_kip714", "kip714", "airflow.task.operators")
_SPARK_LINES = ("KIP714_SUMMARY", "kip714:")


def task_log_line(line: str) -> str | None:
    """The part of ``airflow dags test`` output a demo viewer wants: task starts/ends and our own logs."""
    match = _STRUCTLOG.match(line.rstrip())
    if not match:
        return None
    clock, level, message, logger = match.groups()
    logger = logger or ""
    if message.startswith("[DAG TEST] starting task_id="):
        return f"{clock} > {message.split('=')[1].split()[0]}"
    if message.startswith("[DAG TEST] end task task_id="):
        return f"{clock}   {message.split('=')[1].split()[0]} done"
    if "spark_submit" in logger or logger.endswith("SparkSubmitHook"):
        return f"{clock}   {message}" if any(key in message for key in _SPARK_LINES) else None
    if level in ("error", "critical") or logger.startswith(_OUR_LOGGERS) or logger == "task.stdout":
        return f"{clock}   {message}"
    return None


def troubleshoot_conf(settings: DemoSettings) -> dict[str, Any]:
    return {
        "client_id": SLOW_CONSUMER_MATCH,
        "min_clients": 2,
        "metrics": ["org.apache.kafka.consumer."],
        "interval_ms": settings.window_interval_ms,
        "window_seconds": settings.window_s,
        "bucket": "10s",
        "thresholds": [
            {
                "metric_prefix": "org.apache.kafka.consumer.poll.idle.ratio.avg",
                "comparison": "<",
                "threshold": 0.3,
                "critical_threshold": 0.05,
                "for_seconds": 30,
            }
        ],
    }


def run_demo(settings: DemoSettings) -> int:
    logging.getLogger("kafka").setLevel(logging.WARNING)  # kafka-python narrates every connection
    steps = Steps(total=11)
    stack = ExitStack()
    work = settings.work_dir
    kafka_dir, data_dir, airflow_home = work / KAFKA_DIR_NAME, work / "data", work / "airflow"
    cluster: LocalKafkaCluster | None = None
    fleet: ClientFleet | None = None
    spark_server: DemoSparkServer | None = None
    fleet_window: str | None = None
    try:
        with steps.step(f"Preparing {work} (a previous demo's state is removed)"):
            prepare_work_dir(work, kafka_dir, data_dir, airflow_home)
            os.environ[DATA_DIR_ENV] = str(data_dir)

        brokers = CLUSTER_BROKERS if settings.topology == "cluster" else 1
        with steps.step(f"Starting Apache Kafka ({brokers} broker(s)) with the KIP-714 broker plugin"):
            cluster = _start_kafka(work, brokers)
            bootstrap = cluster.bootstrap_servers
            print(f"  Apache Kafka {cluster.kafka_version} at {bootstrap}; log {cluster.log_path}")

        with steps.step(f"Topology: {settings.topology} (where each part runs)"):
            topology = stack.enter_context(demo_topology(settings.topology, work, bootstrap))
            os.environ[DATA_DIR_ENV] = topology.data_root
            os.environ.update(topology.env)
            for line in topology.where:
                print(f"  {line}")
            if settings.spark_connect:
                spark_server = DemoSparkServer(
                    work, [_kip714(), "telemetry", "land", "--bootstrap-server", bootstrap]
                )
                spark_server.start()
                stack.callback(spark_server.stop)
                print(
                    "  Spark: a Spark Connect server (local[2]) instead, started now; the DAGs' analytics "
                    "tasks are its clients (KIP714_SPARK_CONNECT_CONN_ID)"
                )

        with steps.step("Subscriptions: a standing re-ask subscription and a fleet-wide window (kip714 CLI)"):
            with _admin(bootstrap) as admin:
                admin.upsert(
                    Subscription(
                        name=STANDING_SUBSCRIPTION,
                        block=True,
                        interval_ms=settings.standing_interval_ms,
                        match=parse_match(FLEET_MATCH),
                    )
                )
            print(
                f"  {STANDING_SUBSCRIPTION}: no metrics, idle demo clients re-ask every "
                f"{settings.standing_interval_ms} ms, so a new window reaches them quickly"
            )
            created, _ = _run_cli(
                "subscriptions",
                "add",
                "--bootstrap-server",
                bootstrap,
                "--window",
                settings.fleet_window,
                "--label",
                "demo-fleet",
                "--metrics",
                "org.apache.kafka.",
                "--interval",
                str(settings.fleet_interval_ms),
                "--match",
                FLEET_MATCH,
            )
            fleet_window = created["name"]
            print(f"  fleet window {fleet_window}")

        env = {**airflow_environment(airflow_home, bootstrap, base=dict(os.environ)), **topology.env}
        with steps.step("Starting the client fleet (librdkafka producers/consumers, a Java producer)"):
            # Airflow's metadata database is created meanwhile (it needs nothing from the fleet); its
            # output goes to a file, so nobody has to read a pipe while the fleet starts
            migrate_log = work / "airflow-db-migrate.log"
            with migrate_log.open("w") as log:
                migrate = subprocess.Popen(
                    [str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            fleet_started = datetime.now(UTC)
            fleet = ClientFleet(bootstrap, default_fleet(), work / "fleet-logs", max_seconds=1200)
            fleet.start()
            _wait_for_fleet(bootstrap, expected_pushers(fleet.specs), fleet_started, timeout_s=90)
            print(f"  letting the fleet run {settings.warmup_s} s so there is history to compare against")
            time.sleep(settings.warmup_s)
            if dead := fleet.check_alive():
                raise Kip714Error(f"clients exited early: {', '.join(dead)} (logs in {work / 'fleet-logs'})")
            for client_id, pid in fleet.killed():
                print(f"  {client_id} (pid {pid}) was killed with SIGKILL: no terminating push", flush=True)

        with steps.step("Airflow metadata database (SQLite), created during the warm-up"):
            if migrate.wait(timeout=300) != 0:
                tail = migrate_log.read_text(errors="replace").splitlines()[-30:]
                print("\n".join(f"  ! {line}" for line in tail), flush=True)
                raise Kip714Error(f"airflow db migrate failed (exit {migrate.returncode}); see {migrate_log}")
            print(f"  airflow db migrate: done ({migrate_log})")

        failure: BrokerFailure | None = None
        with steps.step(f"kip714_troubleshoot on the slow consumer ({settings.window_s} s window)"):
            if spark_server is not None:
                env.update(spark_server.airflow_env())
                # the window is mostly waiting: warm the server on the fleet's pushes meanwhile
                spark_server.warm_until(since=fleet_started, deadline=time.monotonic() + settings.window_s)
                print("  warming the Spark Connect server on the fleet's pushes while the window is open")
            if settings.topology == "cluster":
                admin = stack.enter_context(_admin(bootstrap))
                _failing, failure = fail_a_broker_mid_window(cluster, admin, settings.window_s)
            conf = troubleshoot_conf(settings)
            _airflow(
                env,
                "dags",
                "test",
                "kip714_troubleshoot",
                "-c",
                json.dumps(conf),
                title="kip714_troubleshoot",
            )

        with steps.step("kip714_rollups over the demo's period"):
            # An hourly data-interval timetable: `dags test` at T runs the interval that ends at T.
            hour = fleet_started.replace(minute=0, second=0, microsecond=0)
            while hour <= datetime.now(UTC):
                run_at = (hour + timedelta(hours=1)).isoformat()
                _airflow(env, "dags", "test", "kip714_rollups", run_at, title="kip714_rollups")
                hour += timedelta(hours=1)

        with steps.step("A window asking librdkafka for metrics it does not push (the guardrail)"):
            # the rollups run above wrote the capabilities table the guardrail reads
            guarded, warnings = _run_cli(
                *("subscriptions", "add", "--bootstrap-server", bootstrap, "--window", "1m"),
                *("--label", "demo-guardrail", "--metrics", LACKED_PREFIX, "--match", LIBRDKAFKA_MATCH),
            )
            with _admin(bootstrap) as admin:
                admin.delete(guarded["name"])
            if not warnings:
                print("  (no guardrail warning: the capabilities table was not readable; see the log above)")
            print(f"  {guarded['name']} deleted again: it would have brought nothing")

        with steps.step("Results"):
            zones = troubleshoot_areas()
            report = zones[0].report / "report.html" if zones else None
            if report is None or not report.is_file():
                raise Kip714Error(f"no troubleshooting report under {topology.data_root}/troubleshoot")
            print(f"  Troubleshooting report: {report}")
            if spark_server is not None:
                print(f"  {spark_server.summary()}")
            if failure is not None:
                for line in failure.lines(zones[0], cluster.telemetry_topic):
                    print(f"  {line}")
            fleet_report = build_report(
                scheduled_area(),
                title="KIP-714 fleet report (kip714_rollups)",
                window=(fleet_started, datetime.now(UTC)),
            )
            print(
                f"  Fleet report:           {fleet_report.html_path} "
                f"({fleet_report.clients} clients, {fleet_report.anomalies} anomalies)"
            )
            for zone_name, zone in (
                ("troubleshooting window", zones[0]),
                ("hourly rollups", scheduled_area()),
            ):
                lines = anomaly_lines(zone)
                print(f"  Anomalies in the {zone_name} ({len(lines)}):")
                for line in lines[:12] or ["(none)"]:
                    print(f"    {line}")
                for title, found in (
                    ("Silent clients", silent_lines(zone)),
                    ("Convergence", convergence_lines(zone)),
                ):
                    if found:  # delivery.py / convergence.py ran for this zone
                        print(f"  {title} in the {zone_name} ({len(found)}):")
                        for line in found[:12]:
                            print(f"    {line}")

        with steps.step("Cleaning up: subscriptions, clients, broker"):
            with _admin(bootstrap) as admin:
                for name in (fleet_window, STANDING_SUBSCRIPTION):
                    if name:
                        admin.delete(name)
                left = admin.list_names()
            fleet_window = None
            if left:
                raise Kip714Error(f"subscriptions left on the cluster: {', '.join(left)}")
            print("  No client-metrics subscription is left on the cluster.")
        return 0
    finally:
        stack.close()  # the cluster topology's S3 server and Spark master and workers
        if fleet is not None:
            fleet.stop()
        if cluster is not None and not cluster.stopped:
            if fleet_window:
                with _admin(cluster.bootstrap_servers) as admin:
                    admin.delete(fleet_window)
                    admin.delete(STANDING_SUBSCRIPTION)
            cluster.stop()
            print("  Stopped the demo's clients and broker.", flush=True)
