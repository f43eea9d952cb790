"""Check that a real OpenTelemetry Collector reads the telemetry topic with ``collector.yaml`` alone.

``python -m kip714_dev.otel.check`` (``make otel-check``):

1. builds the Collector once into ``~/.cache/kip714/otelcol-v0.160.0/`` from ``builder-manifest.yaml``
   with the OpenTelemetry Collector Builder (Go from the module proxy; the builder's ``go mod tidy``
   is replaced by ``go get`` of the pinned modules, because tidy asks for a test-only module the proxy
   refuses);
2. starts a local Kafka with the broker plugin, opens a subscription, and runs real librdkafka clients;
3. runs the Collector with ``collector.yaml`` until it has exported every record of the topic;
4. checks, point for point, that every client push arrived in ``client-pushes.jsonl`` with its
   ``kip714.*`` headers as ``kafka.header.*`` resource attributes, that broker records went to
   ``broker-metrics.jsonl`` only, and that nothing was duplicated.

Not run by ``make test``: the first build takes minutes (later runs about a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription
from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.cluster_factory import LocalKafkaClusterFactory

HERE = Path(__file__).resolve().parent
COLLECTOR_VERSION = "v0.160.0"
MODULES = (
    "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/kafkareceiver@v0.160.0",
    "github.com/open-telemetry/opentelemetry-collector-contrib/processor/filterprocessor@v0.160.0",
    "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter@v0.160.0",
    "go.opentelemetry.io/collector/exporter/debugexporter@v0.160.0",
    "go.opentelemetry.io/collector/confmap/provider/envprovider@v1.66.0",
    "go.opentelemetry.io/collector/confmap/provider/fileprovider@v1.66.0",
    "go.opentelemetry.io/collector/otelcol@v0.160.0",
)


def collector_binary() -> Path:
    """The built Collector, building it on first use (needs Go; about 10 minutes on 2 cores)."""
    home = Path(os.environ.get("KIP714_CACHE_DIR", Path.home() / ".cache" / "kip714"))
    out = home / f"otelcol-{COLLECTOR_VERSION}"
    binary = out / "otelcol-kip714"
    if binary.is_file():
        return binary
    go = shutil.which("go")
    if go is None:
        raise LocalKafkaError("go: not on PATH; the Collector is built with Go from the module proxy")
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    builder = Path(env.get("GOPATH", Path.home() / "go")) / "bin" / "builder"
    if not builder.is_file():
        _run(
            [go, "install", f"go.opentelemetry.io/collector/cmd/builder@{COLLECTOR_VERSION}"], env, out.parent
        )
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / "manifest.yaml"
    manifest.write_text((HERE / "builder-manifest.yaml").read_text().replace("${OUTPUT_PATH}", str(out)))
    _run([str(builder), "--config", str(manifest), "--skip-get-modules", "--skip-compilation"], env, out)
    if not (out / "go.mod").exists():
        _run([go, "mod", "init", "otelcol-kip714"], env, out)
    _run([go, "get", *MODULES], env, out)
    _run([go, "build", "-trimpath", "-o", str(binary), "-ldflags=-s -w", "."], env, out)
    return binary


def _run(command: list[str], env: dict[str, str], cwd: Path) -> None:
    print(f"$ {' '.join(command)}", flush=True)
    completed = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise LocalKafkaError(f"{command[0]} failed:\n{completed.stderr[-3000:]}")


def run_clients(config: dict[str, str], prefix: str, seconds: float) -> None:
    """Real librdkafka producers (metrics push on by default), closed at the end (terminating push)."""
    producers = [Producer({**config, "client.id": f"{prefix}-{k}", "linger.ms": 5}) for k in range(3)]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for producer in producers:
            producer.produce(f"traffic-{prefix}", b"x")
            producer.poll(0.02)
    for producer in producers:
        producer.flush(10)
    del producers


def topic_records(config: dict[str, str], topic: str) -> list[tuple[dict[str, str], MetricsData]]:
    consumer = Consumer({**config, "group.id": f"check-{uuid.uuid4().hex[:6]}", "enable.metrics.push": False})
    records: list[tuple[dict[str, str], MetricsData]] = []
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        remaining = {p for p, end in ends.items() if end}
        while remaining:
            for message in consumer.consume(500, timeout=1):
                if message.error() is None:
                    headers = {k: (v or b"").decode() for k, v in message.headers() or []}
                    records.append((headers, MetricsData.FromString(message.value() or b"")))
                    if message.offset() >= ends[message.partition()] - 1:
                        remaining.discard(message.partition())
    finally:
        consumer.close()
    return records


def points(data: MetricsData | dict) -> Counter[tuple[str, str]]:
    """(client instance id header or broker node, metric name) -> data points, from protobuf or OTLP/JSON."""
    counted: Counter[tuple[str, str]] = Counter()
    if isinstance(data, MetricsData):
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    counted[("", metric.name)] += len(getattr(metric, kind).data_points)
        return counted
    for resource in data.get("resourceMetrics", []):
        for scope in resource.get("scopeMetrics", []):
            for metric in scope.get("metrics", []):
                kind = next(
                    k for k in ("gauge", "sum", "histogram", "exponentialHistogram", "summary") if k in metric
                )
                counted[("", metric["name"])] += len(metric[kind].get("dataPoints", []))
    return counted


def exported(path: Path) -> list[tuple[dict[str, str], dict]]:
    """(resource attributes, one resourceMetrics as a request) per exported resource."""
    found = []
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        for resource in json.loads(line).get("resourceMetrics", []):
            attributes = {
                a["key"]: a["value"].get("stringValue", "")
                for a in resource["resource"].get("attributes", [])
            }
            found.append((attributes, {"resourceMetrics": [resource]}))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="how long the clients run (default 8)")
    args = parser.parse_args()
    if not 2 <= args.seconds <= 120:
        parser.error("--seconds: must be between 2 and 120")
    binary = collector_binary()
    work = Path(tempfile.mkdtemp(prefix="kip714-otel-"))
    with LocalKafkaClusterFactory(work / "kafka") as factory:
        cluster = factory.start(name="otel", sasl_users={})
        config = cluster.client_config()
        prefix = f"otel-{uuid.uuid4().hex[:6]}"
        with ClientMetricsAdmin(to_kafka_python_kwargs(config)) as admin:
            name = f"kip714-check-{prefix}"
            admin.upsert(
                Subscription.from_spec(name, metrics="*", interval_ms=1000, match=f"client_id={prefix}-.*")
            )
            run_clients(config, prefix, args.seconds)
            admin.delete(name)
        time.sleep(6)  # one more broker-metrics record (every 5 s in the test cluster)
        on_topic = topic_records(config, cluster.telemetry_topic)
        out = work / "out"
        out.mkdir()
        env = {**os.environ, "KAFKA_BROKERS": cluster.bootstrap_servers, "OUT_DIR": str(out)}
        collector = subprocess.Popen(
            [str(binary), "--config", str(HERE / "collector.yaml")],
            env=env, stdout=(work / "collector.log").open("w"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                time.sleep(2)
                got = len(exported(out / "client-pushes.jsonl")) + len(exported(out / "broker-metrics.jsonl"))
                if got >= sum(len(data.resource_metrics) or 1 for _, data in on_topic):
                    break
        finally:
            collector.send_signal(signal.SIGTERM)
            collector.wait(timeout=30)
        return verify(on_topic, out, prefix, work)


def verify(on_topic: list[tuple[dict[str, str], MetricsData]], out: Path, prefix: str, work: Path) -> int:
    clients, brokers = exported(out / "client-pushes.jsonl"), exported(out / "broker-metrics.jsonl")
    problems: list[str] = []
    expected: Counter[tuple[str, str]] = Counter()
    for headers, data in on_topic:
        if headers.get(Header.TYPE) == "client":
            for (_, metric), n in points(data).items():
                expected[(headers[Header.CLIENT_INSTANCE_ID], metric)] += n
    got: Counter[tuple[str, str]] = Counter()
    for attributes, request in clients:
        if attributes.get("kafka.header.kip714.type") != "client":
            problems.append(f"a non-client resource in client-pushes.jsonl: {attributes}")
        missing = [str(h) for h in Header if f"kafka.header.{h}" not in attributes]
        if missing:
            problems.append(f"headers missing as resource attributes: {missing}")
        for (_, metric), n in points(request).items():
            got[(attributes.get(f"kafka.header.{Header.CLIENT_INSTANCE_ID}", ""), metric)] += n
    if got != expected:
        problems.append(
            f"client points differ: topic {sum(expected.values())}, collector {sum(got.values())}"
        )
    if not any(a.get(f"kafka.header.{Header.CLIENT_ID}", "").startswith(prefix) for a, _ in clients):
        problems.append("none of this check's clients reached the Collector")
    broker_on_topic = sum(1 for headers, _ in on_topic if headers.get(Header.TYPE) == "broker")
    if not brokers or any(a.get("kafka.header.kip714.type") != "broker" for a, _ in brokers):
        problems.append("broker records were not routed to broker-metrics.jsonl alone")
    print(
        f"topic: {len(on_topic)} records ({broker_on_topic} broker), {sum(expected.values())} client points; "
        f"collector: {len(clients)} client resources with {sum(got.values())} points, "
        f"{len(brokers)} broker resources"
    )
    for problem in problems:
        print(f"FAIL: {problem} (files in {work})")
    if not problems:
        print("OK: the Collector read every client push with its headers, broker records routed apart")
        shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
