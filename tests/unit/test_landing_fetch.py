"""Choosing the landing's topic reader: the native one where it can serve the connection's config."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from airflow_provider_kip714 import native_switches
from airflow_provider_kip714.native_switches import READER_ENV, NativeSwitchError
from airflow_provider_kip714.telemetry import landing_fetch, topic_consumer
from airflow_provider_kip714.telemetry.landing import land_topic
from airflow_provider_kip714.telemetry.landing_fetch import (
    NativeFetcher,
    PythonFetcher,
    native_config,
    open_fetcher,
    software_identity,
)


def test_native_config_renders_librdkafka_properties() -> None:
    config = {
        "bootstrap.servers": "127.0.0.1:9092",
        "enable.auto.commit": False,
        "fetch.max.bytes": 1024,
        "socket.timeout.ms": 1500.0,
        "logger": object(),
        "error_cb": print,
    }
    assert native_config(config) == [
        *software_identity().items(),
        ("bootstrap.servers", "127.0.0.1:9092"),
        ("enable.auto.commit", "false"),
        ("fetch.max.bytes", "1024"),
        ("socket.timeout.ms", "1500.0"),
    ]


def test_the_native_reader_says_what_confluent_kafka_says_unless_the_connection_does() -> None:
    import confluent_kafka

    identity = software_identity()
    assert identity["client.software.name"] == "confluent-kafka-python"
    assert identity["client.software.version"] == (
        f"{confluent_kafka.__version__}-rdkafka-{confluent_kafka.libversion()[0]}"
    )
    mine = dict(native_config({"client.software.name": "orders-lander", "bootstrap.servers": "x"}))  # type: ignore[arg-type]
    assert mine["client.software.name"] == "orders-lander"


def test_a_callback_only_confluent_kafka_serves_keeps_the_python_reader() -> None:
    reason = native_config({"bootstrap.servers": "x", "oauth_cb": lambda _config: ("token", 0.0)})
    assert reason == "oauth_cb is a function, which only confluent-kafka's client serves"


def test_librdkafka_path_is_the_library_confluent_kafka_loaded() -> None:
    path = landing_fetch.librdkafka_path()
    assert os.path.isfile(path) and "librdkafka" in os.path.basename(path)


def _policy() -> topic_consumer.ErrorPolicy:
    return topic_consumer.ErrorPolicy("telemetry")


def test_open_fetcher_picks_native_then_python_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"bootstrap.servers": "127.0.0.1:1", "group.id": "unit", "logger": logging.getLogger("unit")}
    native = open_fetcher(config, "telemetry", _policy(), 10)
    assert isinstance(native, NativeFetcher) and native.metadata is native
    native.close()
    monkeypatch.setenv(READER_ENV, "python")
    python = open_fetcher(config, "telemetry", _policy(), 10)
    assert isinstance(python, PythonFetcher) and isinstance(python.metadata, Consumer)
    python.close()
    monkeypatch.setenv(READER_ENV, "native")
    with_stats = {**config, "stats_cb": lambda _stats: None, "statistics.interval.ms": 60_000}
    python = open_fetcher(with_stats, "telemetry", _policy(), 10)
    assert isinstance(python, PythonFetcher)
    python.close()


def test_a_bad_reader_choice_or_property_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(READER_ENV, "")
    assert native_switches.choice(READER_ENV) == "native"
    monkeypatch.setenv(READER_ENV, "rust")
    with pytest.raises(NativeSwitchError, match=r"^KIP714_LANDING_READER: must be"):
        land_topic({"bootstrap.servers": "127.0.0.1:1"}, "telemetry", tmp_path)  # before connecting
    with pytest.raises(NativeSwitchError, match=r"^KIP714_LANDING_READER: must be 'native' or 'python'"):
        open_fetcher({"bootstrap.servers": "x"}, "telemetry", _policy(), 10)
    for chosen in ("native", "python"):
        monkeypatch.setenv(READER_ENV, chosen)
        with pytest.raises(topic_consumer.TopicReadError, match=r"^connection extra: .*no\.such\.property"):
            open_fetcher({"no.such.property": "1"}, "telemetry", _policy(), 10)
        with pytest.raises(topic_consumer.TopicReadError, match=r"^connection extra: .*fetch\.max\.bytes"):
            open_fetcher({"fetch.max.bytes": "lots"}, "telemetry", _policy(), 10)
