# The whole set-up lives here: `make test` and `make demo` install everything they need, idempotently.
SHELL := /bin/bash
.DEFAULT_GOAL := help

UV_VERSION := 0.13.9
UV := $(shell command -v uv 2>/dev/null || echo $(CURDIR)/.tools/bin/uv)
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
KAFKA_VERSION ?= 4.4.0
KAFKA_COMPAT_VERSION ?= 3.9.2
# The oldest Kafka line the plugin supports: tests/integration/test_kafka_37.py and the compat subset run it.
KAFKA_OLDEST_VERSION ?= 3.7.2
COMPAT_ARGS ?=
PLUGIN_JAR := broker_plugin/target/kip714-broker-plugin.jar
JAVA_CLIENT_JAR := tests/java_client/target/kip714-java-client.jar
PYTEST_ARGS ?=
# rustup's default location, in case the calling shell has not sourced ~/.cargo/env
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: help install venv plugin java-client kafka cluster-jars browser test unit-test lint demo demo-cluster bench airflow clean dist otel-check compat

help:
	@echo "make demo   - install, start local Kafka + clients, run the troubleshooting job"
	@echo "make demo-cluster - the same story on S3 (S3Proxy) and Spark standalone with 2 workers"
	@echo "make test   - install, then run the whole test suite"
	@echo "make plugin - build the broker plugin jar ($(PLUGIN_JAR))"
	@echo "make lint   - ruff check + format check"
	@echo "make dist   - build the provider wheel + sdist and the native decoder's abi3 wheel into dist/"
	@echo "make bench  - run the benchmarks in bench/"
	@echo "make compat - the compatibility matrix (8 brokers x librdkafka 2.5-2.16 x Java 3.7-4.4; COMPAT_ARGS=--quick for the CI subset)"
	@echo "make airflow - airflow standalone with the DAGs and the Client telemetry page"

$(CURDIR)/.tools/bin/uv:
	python3 -m venv .tools
	.tools/bin/pip install -q uv==$(UV_VERSION)

# Bytecode compiled at install time: with PYTHONDONTWRITEBYTECODE set (this machine, many container images)
# no process caches its imports, so every Airflow task, Spark Connect client and report compiled pandas,
# matplotlib, pyspark and Airflow from source again (the report's imports: 2.3 s instead of 0.9 s).
venv: $(UV)
	@command -v cargo >/dev/null || { echo "make: the native OTLP decoder (native/) needs a Rust toolchain: install it with rustup (https://rustup.rs), then rerun" >&2; exit 1; }
	$(UV) sync --frozen --extra native --compile-bytecode
	$(BIN)/python -m compileall -q airflow_provider_kip714 spark_apps dags devtools bench tests >/dev/null

$(PLUGIN_JAR): broker_plugin/pom.xml $(shell find broker_plugin/src -type f 2>/dev/null)
	mvn -q -B -f broker_plugin/pom.xml package

plugin: $(PLUGIN_JAR)

$(JAVA_CLIENT_JAR): tests/java_client/pom.xml $(shell find tests/java_client/src -type f 2>/dev/null)
	mvn -q -B -f tests/java_client/pom.xml package -DskipTests

java-client: $(JAVA_CLIENT_JAR)

kafka: venv
	$(BIN)/kip714 local-kafka install --kafka-version $(KAFKA_VERSION)
	$(BIN)/kip714 local-kafka install --kafka-version $(KAFKA_COMPAT_VERSION)
	$(BIN)/kip714 local-kafka install --kafka-version $(KAFKA_OLDEST_VERSION)

# S3Proxy and Spark's s3a connector (hadoop-aws + the 686 MB AWS SDK bundle), resolved once into ~/.cache/kip714.
cluster-jars: venv
	$(BIN)/python -c "from kip714_dev.maven_jars import classpath; from kip714_dev.local_s3.server import S3PROXY; from kip714_dev.local_spark.s3a_jars import HADOOP_AWS; [classpath(s) for s in (S3PROXY, HADOOP_AWS)]"

browser:
	bash tests/ui/install_browser.sh

install: venv plugin java-client kafka cluster-jars browser

# Two pytest processes side by side (kip714_dev/test_streams.py: the waiting integration tests beside the
# computing ones); with PYTEST_ARGS, one ordinary pytest run with them.
test: install
	$(BIN)/python -m kip714_dev.test_streams $(PYTEST_ARGS)

unit-test: venv
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

DIST_DIR ?= $(CURDIR)/dist

# What users install: the provider's wheel and sdist (runtime code and spark_apps/ only) and the native
# decoder's abi3 wheel (the optional extra `airflow-provider-kip714[native]`).
dist: $(UV)
	$(UV) build --out-dir $(DIST_DIR) .
	$(UV) build --wheel --out-dir $(DIST_DIR) native

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

demo: install
	$(BIN)/kip714 demo

demo-cluster: install
	$(BIN)/kip714 demo --topology cluster

bench: install
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

airflow: install
	$(BIN)/python -m kip714_dev.airflow_standalone

# Real brokers and clients of every supported version (docs/compatibility.md); niced, one broker at a time.
compat: install
	nice -n 5 $(BIN)/python -m kip714_dev.compat $(COMPAT_ARGS)

# A real OpenTelemetry Collector (built once with Go, minutes) reads the topic with docs' configuration.
otel-check: install
	$(BIN)/python -m kip714_dev.otel.check

clean:
	rm -rf broker_plugin/target tests/java_client/target native/target .pytest_cache .ruff_cache
