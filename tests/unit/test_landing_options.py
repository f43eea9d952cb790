"""Landing and reading options: every duration that is NaN, infinite, negative or zero is refused in one
line naming the field, before any client is built (no Kafka needed)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook
from airflow_provider_kip714.telemetry import topic_consumer
from airflow_provider_kip714.telemetry.landing import TopicLander

BAD_SECONDS = [math.nan, math.inf, -math.inf, -1.0, 0.0, "5", True]
DURATIONS = ["timeout_s", "chunk_interval_s", "metadata_timeout_s", "progress_interval_s"]
CONFIG = {"bootstrap.servers": "127.0.0.1:9"}


@pytest.mark.parametrize("field", DURATIONS)
@pytest.mark.parametrize("value", BAD_SECONDS, ids=repr)
def test_lander_refuses_bad_durations_naming_the_field(field: str, value: object, tmp_path: Path) -> None:
    with pytest.raises(Kip714Error) as refused:
        TopicLander(CONFIG, "t", tmp_path, **{field: value})
    message = str(refused.value)
    assert message.startswith(f"{field}: must be") and "\n" not in message


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_records": 0}, "max_records"),
        ({"chunk_records": -5}, "chunk_records"),
        ({"workers": 0}, "workers"),
        ({"max_records": 2.5}, "max_records"),
        ({"since": datetime(2026, 1, 1)}, "since"),  # naive
        ({"until": "2026-01-01"}, "until"),
        ({"until": datetime(2026, 1, 1, tzinfo=UTC), "follow": True, "timeout_s": 5}, "until"),
        ({"follow": True}, "follow"),
        ({"value_format": "xml"}, "value_format"),
    ],
)
def test_lander_refuses_other_bad_options(options: dict, field: str, tmp_path: Path) -> None:
    with pytest.raises(Kip714Error, match=f"^{field}: "):
        TopicLander(CONFIG, "t", tmp_path, **options)


@pytest.mark.parametrize("value", [math.nan, math.inf, -3.0], ids=repr)
def test_hook_reading_refuses_bad_timeouts(value: float) -> None:
    hook = TelemetryTopicHook(config=CONFIG, topic="t")
    with pytest.raises(Kip714Error, match=r"^timeout_s: must be"):
        next(hook.iter_records(timeout_s=value))


def test_good_durations_pass_and_none_means_unbounded() -> None:
    for value in (0.001, 1, 3600.0):
        topic_consumer.check_duration("x", value)
    topic_consumer.check_duration("x", None)
    topic_consumer.check_duration("x", 0, allow_zero=True)
    with pytest.raises(Kip714Error, match=r"^x: must be set"):
        topic_consumer.check_duration("x", None, allow_none=False)


def test_consumer_config_forces_no_commits_and_no_silent_reset() -> None:
    shared = {
        **CONFIG,
        "auto.offset.reset": "latest",
        "enable.auto.commit": True,
        "group.id": "someone-elses",
    }
    config = topic_consumer.consumer_config(shared)
    assert config["auto.offset.reset"] == "error"
    assert config["enable.auto.commit"] is False and config["enable.auto.offset.store"] is False
    assert config["allow.auto.create.topics"] is False
    assert config["group.id"] == "someone-elses"  # never joined: only librdkafka wants one
    assert topic_consumer.consumer_config(CONFIG)["group.id"] == topic_consumer.READER_GROUP_ID
