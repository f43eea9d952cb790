"""``kip714 demo``: the whole story on this machine, with embedded defaults and nothing to configure.

Local Apache Kafka with the broker plugin, a fleet of real clients (some of them misbehaving), live mode
finding the slow consumer within a minute and mailing it (``demo/live.py``), the troubleshooting window
that finding opens (``kip714_troubleshoot`` through ``airflow dags test``), then ``kip714_rollups`` over
the same period, a report, and proof that no subscription is left. Everything the demo starts, it
stops; a second run starts from a clean slate by itself.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow_provider_kip714.clock import TimeSpan
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.report.builder import build_report
from airflow_provider_kip714.storage.data_root import (
    DATA_DIR_ENV,
    scheduled_area,
    troubleshoot_areas,
)
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription, parse_match
from airflow_provider_kip714.troubleshooting.auto_window import WindowPlan
from kip714_dev.airflow_standalone import airflow_environment
from kip714_dev.demo.broker_failure import BrokerFailure, fail_a_broker_mid_window
from kip714_dev.demo.commands import Steps, run_airflow, run_cli
from kip714_dev.demo.fleet import DEMO_TELEMETRY_MAX_BYTES, ClientFleet, default_fleet, expected_pushers
from kip714_dev.demo.live import LiveDemo, demo_mail_server, window_line
from kip714_dev.demo.spark_server import DemoSparkServer
from kip714_dev.demo.summary import print_findings, telemetry_seen
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
SLOW_CONSUMER = "demo-audit-consumer-slow"
LIVE_TIMEOUT_S = 150
"""Live mode cycles until it finds the slow consumer, at most this long (it took 2-3 cycles)."""
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
    """The hand-opened window's length (the cluster topology, or when live mode found nothing)."""
    auto_window_minutes: int = 1
    """The window the slow consumer's finding opens (``kip714_auto_windows.window_minutes``)."""
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


class DemoRun:
    """The demo's steps in order; what they start is stopped by ``stop_everything`` on every path."""

    def __init__(self, settings: DemoSettings) -> None:
        self.settings = settings
        self.steps = Steps(total=12)
        self.stack = ExitStack()
        work = self.work = settings.work_dir
        self.kafka_dir, self.data_dir, self.airflow_home = (
            work / KAFKA_DIR_NAME,
            work / "data",
            work / "airflow",
        )
        self.cluster: LocalKafkaCluster | None = None
        self.fleet: ClientFleet | None = None
        self.fleet_window: str | None = None
        self.spark_server: DemoSparkServer | None = None
        self.failure: BrokerFailure | None = None
        self.auto_window: WindowPlan | None = None
        self.env: dict[str, str] = {}
        self.fleet_started = datetime.now(UTC)

    @property
    def bootstrap(self) -> str:
        assert self.cluster is not None
        return self.cluster.bootstrap_servers

    def run(self) -> int:
        try:
            for step in (
                self.prepare, self.start_kafka, self.place_parts, self.subscribe, self.start_fleet,
                self.live_mode, self.airflow_database, self.troubleshoot, self.hourly_rollups, self.guardrail,
                self.results, self.clean_up,
            ):  # fmt: skip
                step()
            return 0
        finally:
            self.stop_everything()

    def prepare(self) -> None:
        with self.steps.step(f"Preparing {self.work} (a previous demo's state is removed)"):
            prepare_work_dir(self.work, self.kafka_dir, self.data_dir, self.airflow_home)
            os.environ[DATA_DIR_ENV] = str(self.data_dir)

    def start_kafka(self) -> None:
        brokers = CLUSTER_BROKERS if self.settings.topology == "cluster" else 1
        with self.steps.step(f"Starting Apache Kafka ({brokers} broker(s)) with the KIP-714 broker plugin"):
            self.cluster = _start_kafka(self.work, brokers)
            cluster = self.cluster
            print(f"  Apache Kafka {cluster.kafka_version} at {self.bootstrap}; log {cluster.log_path}")

    def place_parts(self) -> None:
        settings = self.settings
        with self.steps.step(f"Topology: {settings.topology} (where each part runs)"):
            if settings.spark_connect:  # its JVM boots while the fleet starts
                self.spark_server = DemoSparkServer(self.work)
                self.spark_server.start()
                self.stack.callback(self.spark_server.stop)
            topology = self.stack.enter_context(
                demo_topology(
                    settings.topology, self.work, self.bootstrap, spark_connect=settings.spark_connect
                )
            )
            os.environ[DATA_DIR_ENV] = self.data_root = topology.data_root
            os.environ.update(topology.env)
            self.env = {
                **airflow_environment(self.airflow_home, self.bootstrap, base=dict(os.environ)),
                **topology.env,
            }
            for line in topology.where:
                print(f"  {line}")

    def subscribe(self) -> None:
        settings = self.settings
        with self.steps.step(
            "Subscriptions: a standing re-ask subscription and a fleet-wide window (kip714 CLI)"
        ):
            with _admin(self.bootstrap) as admin:
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
            created, _ = run_cli(
                *(
                    "subscriptions",
                    "add",
                    "--bootstrap-server",
                    self.bootstrap,
                    "--window",
                    settings.fleet_window,
                ),
                *("--label", "demo-fleet", "--metrics", "org.apache.kafka."),
                *("--interval", str(settings.fleet_interval_ms), "--match", FLEET_MATCH),
            )
            self.fleet_window = created["name"]
            print(f"  fleet window {self.fleet_window}")

    def start_fleet(self) -> None:
        with self.steps.step("Starting the client fleet (librdkafka producers/consumers, a Java producer)"):
            # Airflow's metadata database is created meanwhile (it needs nothing from the fleet); its
            # output goes to a file, so nobody has to read a pipe while the fleet starts
            self.migrate_log = self.work / "airflow-db-migrate.log"
            with self.migrate_log.open("w") as log:
                self.migrate = subprocess.Popen(
                    [str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            self.fleet_started = datetime.now(UTC)
            fleet = self.fleet = ClientFleet(
                self.bootstrap, default_fleet(), self.work / "fleet-logs", max_seconds=1200
            )
            fleet.start()
            _wait_for_fleet(self.bootstrap, expected_pushers(fleet.specs), self.fleet_started, timeout_s=90)
            if self.spark_server is None:  # else live mode's cycles run meanwhile (next steps)
                warmup = self.settings.warmup_s
                print(f"  letting the fleet run {warmup} s so there is history to compare against")
                time.sleep(self.settings.warmup_s)
            if dead := fleet.check_alive():
                raise Kip714Error(
                    f"clients exited early: {', '.join(dead)} (logs in {self.work / 'fleet-logs'})"
                )
            self._say_who_was_killed()

    def _say_who_was_killed(self) -> None:
        """The clients that SIGKILLed themselves by now (the killed producer does after 60 s)."""
        assert self.fleet is not None
        for client_id, pid in self.fleet.killed():
            print(f"  {client_id} (pid {pid}) was killed with SIGKILL: no terminating push", flush=True)

    def airflow_database(self) -> None:
        with self.steps.step("Airflow metadata database (SQLite), created meanwhile"):
            if self.migrate.wait(timeout=300) != 0:
                tail = self.migrate_log.read_text(errors="replace").splitlines()[-30:]
                print("\n".join(f"  ! {line}" for line in tail), flush=True)
                raise Kip714Error(
                    f"airflow db migrate failed (exit {self.migrate.returncode}); see {self.migrate_log}"
                )
            print(f"  airflow db migrate: done ({self.migrate_log})")

    def live_mode(self) -> None:
        with self.steps.step("Live mode: findings within a minute, mailed, and a window that opens itself"):
            if self.spark_server is None or self.cluster is None:
                print("  (live mode runs on the single topology's Spark Connect server: skipped here)")
                return
            self.spark_server.to_normal_priority()
            sink = self.stack.enter_context(demo_mail_server())
            print(f"  the demo's SMTP server: 127.0.0.1:{sink.port}; kip714_alerts mails oncall@localhost")
            live = LiveDemo(
                self.bootstrap,
                self.cluster.telemetry_topic,
                self.spark_server,
                self.work,
                SLOW_CONSUMER,
                DEMO_TELEMETRY_MAX_BYTES,
                sink,
            )
            history_until = self.fleet_started + timedelta(seconds=self.settings.warmup_s)
            finding = live.until_target_found(LIVE_TIMEOUT_S, history_until)
            if finding is None:
                print(f"  live mode found no anomaly of {SLOW_CONSUMER} within {LIVE_TIMEOUT_S} s")
                return
            self._say_who_was_killed()
            self.auto_window = live.open_window(finding, self.settings.auto_window_minutes)
            if self.auto_window is not None:
                print(f"  {window_line(finding, self.auto_window)}", flush=True)

    def troubleshoot(self) -> None:
        settings, auto = self.settings, self.auto_window
        title = (
            f"kip714_troubleshoot: the window the finding opened ({auto.conf['window_seconds']} s at 1 s)"
            if auto is not None
            else f"kip714_troubleshoot on the slow consumer's group, opened by hand ({settings.window_s} s)"
        )
        with self.steps.step(title):
            if self.spark_server is not None:
                self.env.update(self.spark_server.airflow_env())
            if settings.topology == "cluster":
                assert self.cluster is not None
                admin = self.stack.enter_context(_admin(self.bootstrap))
                _failing, self.failure = fail_a_broker_mid_window(self.cluster, admin, settings.window_s)
            conf = json.dumps(auto.conf if auto is not None else troubleshoot_conf(settings))
            run_airflow(
                self.env, "dags", "test", "kip714_troubleshoot", "-c", conf, title="kip714_troubleshoot"
            )

    def hourly_rollups(self) -> None:
        with self.steps.step("kip714_rollups over the demo's period"):
            # An hourly data-interval timetable: `dags test` at T runs the interval that ends at T.
            hour = self.fleet_started.replace(minute=0, second=0, microsecond=0)
            while hour <= datetime.now(UTC):
                run_at = (hour + timedelta(hours=1)).isoformat()
                run_airflow(self.env, "dags", "test", "kip714_rollups", run_at, title="kip714_rollups")
                hour += timedelta(hours=1)

    def guardrail(self) -> None:
        with self.steps.step("A window asking librdkafka for metrics it does not push (the guardrail)"):
            # the rollups run above wrote the capabilities table the guardrail reads
            guarded, warnings = run_cli(
                *("subscriptions", "add", "--bootstrap-server", self.bootstrap, "--window", "1m"),
                *("--label", "demo-guardrail", "--metrics", LACKED_PREFIX, "--match", LIBRDKAFKA_MATCH),
            )
            with _admin(self.bootstrap) as admin:
                admin.delete(guarded["name"])
            if not warnings:
                print("  (no guardrail warning: the capabilities table was not readable; see the log above)")
            print(f"  {guarded['name']} deleted again: it would have brought nothing")

    def results(self) -> None:
        with self.steps.step("Results"):
            zones = troubleshoot_areas()
            report = zones[0].report / "report.html" if zones else None
            if report is None or not report.is_file():
                raise Kip714Error(f"no troubleshooting report under {self.data_root}/troubleshoot")
            print(f"  Troubleshooting report: {report}")
            if self.failure is not None and self.cluster is not None:
                for line in self.failure.lines(zones[0], self.cluster.telemetry_topic):
                    print(f"  {line}")
            fleet_report = build_report(
                scheduled_area(),
                title="KIP-714 fleet report (kip714_rollups)",
                span=TimeSpan(self.fleet_started, datetime.now(UTC)),
            )
            print(
                f"  Fleet report:           {fleet_report.html_path} "
                f"({fleet_report.clients} clients, {fleet_report.anomalies} anomalies)"
            )
            for zone_name, zone in (
                ("troubleshooting window", zones[0]),
                ("hourly rollups", scheduled_area()),
            ):
                print_findings(zone_name, zone)

    def clean_up(self) -> None:
        with self.steps.step("Cleaning up: subscriptions, clients, broker"):
            with _admin(self.bootstrap) as admin:
                for name in (self.fleet_window, STANDING_SUBSCRIPTION):
                    if name:
                        admin.delete(name)
                left = admin.list_names()
            self.fleet_window = None
            if left:
                raise Kip714Error(f"subscriptions left on the cluster: {', '.join(left)}")
            print("  No client-metrics subscription is left on the cluster.")

    def stop_everything(self) -> None:
        self.stack.close()  # the Spark Connect server, or the cluster topology's S3 server and Spark
        if self.fleet is not None:
            self.fleet.stop()
        cluster = self.cluster
        if cluster is not None and not cluster.stopped:
            if self.fleet_window:
                with _admin(cluster.bootstrap_servers) as admin:
                    admin.delete(self.fleet_window)
                    admin.delete(STANDING_SUBSCRIPTION)
            cluster.stop()
            print("  Stopped the demo's clients and broker.", flush=True)


def run_demo(settings: DemoSettings) -> int:
    logging.getLogger("kafka").setLevel(logging.WARNING)  # kafka-python narrates every connection
    return DemoRun(settings).run()
