"""Run the matrix: per broker, start it with the plugin, run every client, land the topic, read back."""

from __future__ import annotations

import logging
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.dataset as ds

from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from airflow_provider_kip714.telemetry.landing import land_topic
from kip714_dev.compat.clients import ClientOutcome, ClientSpec, java_classpath, make_venv, run_client
from kip714_dev.compat.too_large import TooLargeAnswers, probe_answers
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory

log = logging.getLogger(__name__)

SUBSCRIPTION = "kip714-compat-all"
MATCH = "client_id=compat-.*"
INTERVAL_MS = 1000
SETTLE_S = 4.0
"""After the clients closed: the plugin's producer sends what it buffered."""


@dataclass
class Landed:
    """What landed for one client library on one broker (producer and consumer together)."""

    pushes: int = 0
    metrics: set[str] = field(default_factory=set)
    terminating_roles: set[str] = field(default_factory=set)
    source_ports: set[str] = field(default_factory=set)
    software: set[str] = field(default_factory=set)


@dataclass
class BrokerRun:
    version: str
    error: str = ""
    seconds: float = 0.0
    records: int = 0
    quarantined: int = 0
    clients: dict[ClientSpec, ClientOutcome] = field(default_factory=dict)
    landed: dict[ClientSpec, Landed] = field(default_factory=dict)
    too_large: TooLargeAnswers | None = None


@dataclass
class Prepared:
    """Per-client launch material: a venv python for librdkafka, a class path for Java."""

    pythons: dict[str, Path] = field(default_factory=dict)
    java_cps: dict[str, str] = field(default_factory=dict)
    errors: dict[ClientSpec, str] = field(default_factory=dict)


def prepare(specs: Sequence[ClientSpec], venv_root: Path) -> Prepared:
    """Create the throwaway venvs and resolve the Java class paths once, before any broker starts."""
    prepared = Prepared()
    for spec in specs:
        try:
            if spec.library == "librdkafka":
                prepared.pythons[spec.version] = make_venv(spec.version, venv_root)
            else:
                prepared.java_cps[spec.version] = java_classpath(spec.version)
        except Exception as err:  # one unavailable release must not stop the matrix
            prepared.errors[spec] = f"not installed: {err}"
            log.warning("compat: %s not installed: %s", spec.label, err)
    return prepared


def run_broker(
    factory: LocalKafkaClusterFactory,
    version: str,
    specs: Sequence[ClientSpec],
    prepared: Prepared,
    *,
    seconds: float,
    parallel: int,
    work_dir: Path,
) -> BrokerRun:
    """One broker: clients pushing through the plugin, landed with the product's landing, read back."""
    run = BrokerRun(version)
    began = time.monotonic()
    try:
        cluster = factory.start(kafka_version=version, name=f"compat-{version}", sasl_users={})
    except Exception as err:
        run.error = f"broker did not start: {err}"
        return run
    try:
        if not cluster.plugin_loaded:
            run.error = "plugin jar not built (make plugin)"
            return run
        config = cluster.client_config()
        with ClientMetricsAdmin(to_kafka_python_kwargs(config)) as admin:
            admin.upsert(
                Subscription.from_spec(SUBSCRIPTION, metrics="*", interval_ms=INTERVAL_MS, match=MATCH)
            )
            runnable = [spec for spec in specs if spec not in prepared.errors]

            def one(spec: ClientSpec) -> ClientOutcome:
                return run_client(
                    spec,
                    cluster.bootstrap_servers,
                    seconds,
                    python=prepared.pythons.get(spec.version),
                    java_cp=prepared.java_cps.get(spec.version),
                )

            with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
                for outcome in pool.map(one, runnable):
                    run.clients[outcome.spec] = outcome
            for spec, error in prepared.errors.items():
                run.clients[spec] = ClientOutcome(spec, False, error)
            try:
                run.too_large = probe_answers(cluster.bootstrap_servers, f"compat-probe-{version}")
            except Exception as err:
                log.warning("compat: too-large probe on %s failed: %s", version, err)
            time.sleep(SETTLE_S)
            admin.delete(SUBSCRIPTION)
        zone = work_dir / f"zone-{version}"
        result = land_topic(config, cluster.telemetry_topic, zone, fsync=False)
        run.records, run.quarantined = result.records, result.quarantined
        run.landed = read_landed(zone, specs)
    except Exception as err:
        run.error = f"{type(err).__name__}: {err}"
    finally:
        cluster.stop()
        run.seconds = time.monotonic() - began
    return run


def read_landed(zone: Path, specs: Sequence[ClientSpec]) -> dict[ClientSpec, Landed]:
    """Per client library: pushes, metric names, terminating pushes and source ports (raw/, datapoints/)."""
    by_prefix = {spec.prefix: spec for spec in specs}
    landed: dict[ClientSpec, Landed] = defaultdict(Landed)

    def owner(client_id: str | None) -> tuple[ClientSpec | None, str]:
        for prefix, spec in by_prefix.items():
            if client_id and client_id.startswith(prefix + "-"):
                return spec, client_id[len(prefix) + 1 :]
        return None, ""

    if (zone / "raw").is_dir():
        for row in ds.dataset(zone / "raw", format="parquet").to_table(columns=["headers"]).to_pylist():
            headers = dict(row["headers"] or [])
            spec, role = owner(headers.get("kip714.client_id"))
            if spec is None:
                continue
            entry = landed[spec]
            entry.pushes += 1
            entry.source_ports.add(headers.get("kip714.client_source_port", ""))
            software = (headers.get(f"kip714.client_software_{part}", "") for part in ("name", "version"))
            entry.software.add(" ".join(software))
            if headers.get("kip714.terminating") == "true":
                entry.terminating_roles.add(role)
    if (zone / "datapoints").is_dir():
        table = ds.dataset(zone / "datapoints", format="parquet").to_table(
            columns=["client_id", "metric_name"]
        )
        for row in table.to_pylist():
            spec, _ = owner(row["client_id"])
            if spec is not None:
                landed[spec].metrics.add(row["metric_name"])
    return dict(landed)


def run_matrix(
    brokers: Sequence[str],
    specs: Sequence[ClientSpec],
    *,
    seconds: float = 8.0,
    parallel: int = 3,
    budget_s: float | None = None,
    progress: Callable[[BrokerRun], None] | None = None,
) -> list[BrokerRun]:
    """Every broker in turn (one at a time, so the machine is not swamped), within ``budget_s``."""
    began = time.monotonic()
    runs: list[BrokerRun] = []
    with tempfile.TemporaryDirectory(prefix="kip714-compat-") as scratch:
        work_dir = Path(scratch)
        prepared = prepare(specs, work_dir / "venvs")
        with LocalKafkaClusterFactory(work_dir / "kafka") as factory:
            for version in brokers:
                if budget_s is not None and time.monotonic() - began > budget_s:
                    runs.append(BrokerRun(version, error="not run: time budget spent"))
                    continue
                run = run_broker(
                    factory, version, specs, prepared, seconds=seconds, parallel=parallel, work_dir=work_dir
                )
                runs.append(run)
                if progress is not None:
                    progress(run)
    return runs
