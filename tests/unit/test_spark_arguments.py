"""Argument, rules-file and packaging checks of the Spark apps: bad input names the field and the rule."""

from __future__ import annotations

import json
import sys
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "spark_apps"))

from kip714_common.cli import base_parser, make_interval, parse_common, parse_duration_seconds
from kip714_common.errors import SparkAppInputError
from kip714_common.names import labels_key, normalise_labels, normalise_metric_name
from kip714_common.rules import load_rules, parse_rules

from spark_apps.package import DEFAULT_RULES, application_args, application_path, build_common_zip

pytestmark = pytest.mark.spark
BASE = ["--input", "/landing", "--output", "/out"]


def _parse(*extra: str):  # type: ignore[no-untyped-def]
    return parse_common(base_parser("test"), [*BASE, *extra])[1]


def test_interval_is_widened_to_whole_buckets_and_lists_its_hours():
    common = _parse("--start", "2026-01-31T13:05:10Z", "--end", "2026-01-31T14:00:01", "--bucket", "5m")
    assert common.interval.start == datetime(2026, 1, 31, 13, 5, tzinfo=UTC)
    assert common.interval.end == datetime(2026, 1, 31, 14, 5, tzinfo=UTC)
    assert [h.hour for h in common.interval.hours] == [13, 14]
    assert common.read_start == datetime(2026, 1, 31, 12, 55, tzinfo=UTC)


@pytest.mark.parametrize(
    ("argv", "field", "rule"),
    [
        (["--start", "yesterday", "--end", "2026-01-31T14:00:00Z"], "--start", "ISO-8601"),
        (["--start", "2026-01-31T14:00:00Z", "--end", "2026-01-31T13:00:00Z"], "--end", "after --start"),
        (
            ["--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T14:00:00Z", "--bucket", "7m"],
            "--bucket",
            "divide",
        ),
        (
            ["--start", "2026-01-31T13:00:00Z", "--end", "2026-01-31T14:00:00Z", "--bucket", "500ms"],
            "--bucket",
            "seconds",
        ),
    ],
)
def test_bad_arguments_name_the_flag_and_the_rule(argv, field, rule):
    with pytest.raises(SparkAppInputError) as caught:
        _parse(*argv)
    assert caught.value.field == field
    assert rule in caught.value.rule
    assert isinstance(caught.value, ValueError)


def test_durations():
    assert [parse_duration_seconds("x", t) for t in ("90", "90s", "5m", "1h", "2d")] == [
        90,
        90,
        300,
        3600,
        172800,
    ]
    with pytest.raises(SparkAppInputError):
        make_interval(datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC), 0)


def test_default_rules_file_holds_the_kip_example():
    rules = {r.name: r for r in load_rules(str(DEFAULT_RULES))}
    kip = rules["producer-record-queue-time"]
    assert (kip.metric, kip.field, kip.comparison, kip.threshold, kip.for_seconds) == (
        "producer.record.queue.time.max",
        "max",
        ">",
        5000.0,
        180,
    )


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"metric": "m", "threshold": 1}, "rules[0].name"),
        ({"name": "r", "metric": "m", "threshold": "high"}, "rules[0].threshold"),
        ({"name": "r", "metric": "m", "threshold": 1, "field": "median"}, "rules[0].field"),
        ({"name": "r", "metric": "m", "threshold": 1, "comparison": "=="}, "rules[0].comparison"),
        ({"name": "r", "metric": "m", "threshold": 1, "for_seconds": -1}, "rules[0].for_seconds"),
        ({"name": "r", "metric": "m", "threshold": 1, "match": {"topic": "x"}}, "rules[0].match.topic"),
        (
            {"name": "r", "metric": "m", "threshold": 1, "match": {"client_id": "("}},
            "rules[0].match.client_id",
        ),
        (
            {"name": "r", "metric": "m", "threshold": 10, "critical_threshold": 5},
            "rules[0].critical_threshold",
        ),
        ({"name": "r", "metric": "m", "threshold": 1, "severity": "high"}, "rules[0].severity"),
    ],
)
def test_bad_rules_name_the_field(rule, field):
    with pytest.raises(SparkAppInputError) as caught:
        parse_rules({"rules": [rule]})
    assert caught.value.field == field


def test_rules_file_errors(tmp_path):
    broken = tmp_path / "rules.json"
    broken.write_text("{not json")
    with pytest.raises(SparkAppInputError, match="--rules: must be valid JSON"):
        load_rules(str(broken))
    broken.write_text(json.dumps({"rules": [{"name": "a", "metric": "m", "threshold": 1}] * 2}))
    with pytest.raises(SparkAppInputError, match="must be unique"):
        load_rules(str(broken))


def test_name_and_label_normalisation_table():
    assert (
        normalise_metric_name("org.apache.kafka.producer.record.queue.time.max")
        == "producer.record.queue.time.max"
    )
    assert normalise_metric_name("ORG.APACHE.KAFKA.PRODUCER.NODE-REQUEST-LATENCY-AVG") == (
        "producer.node.request.latency.avg"
    )
    assert normalise_metric_name("kafka.server.client_metrics.throttle.count") == (
        "kafka.server.client_metrics.throttle.count"
    )
    assert normalise_metric_name("a.b", {"a.b": "c.d"}) == "c.d"
    assert normalise_labels({"node.id": 1}) == normalise_labels({"node_id": "node-1"}) == {"node_id": "1"}
    assert normalise_labels({"node-id": "node--1", "client-id": "x"}) == {"node_id": "-1"}
    assert labels_key({"b": "2", "a": None}) == '{"a":null,"b":"2"}'
    assert labels_key({}) == ""


def test_package_builds_a_reproducible_zip_and_launch_arguments(tmp_path):
    first = build_common_zip(tmp_path / "a")
    second = build_common_zip(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    names = zipfile.ZipFile(first).namelist()
    assert "kip714_common/rollup.py" in names and "kip714_common/__init__.py" in names
    assert application_path("anomalies").name == "anomalies.py"
    assert application_args("/l", "/o", "s", "e", rules="r.json", no_baselines=True, history=None) == [
        "--input", "/l", "--output", "/o", "--start", "s", "--end", "e", "--bucket", "1m",
        "--rules", "r.json", "--no-baselines",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="application"):
        application_path("report")


def test_selection_file_is_read_once_before_spark(tmp_path: Path) -> None:
    """``--selection``: a troubleshooting run's selectors and window start, parsed with the shared flags."""
    path = tmp_path / "selection.json"
    path.write_text(json.dumps({"match": {"client_id": "orders-.*"}, "since": "2026-01-31T13:05:10+00:00"}))
    common = _parse(
        "--start", "2026-01-31T13:05:10Z", "--end", "2026-01-31T13:06:00Z", "--selection", str(path)
    )
    assert common.selection is not None
    assert common.selection.match == {"client_id": "orders-.*"}
    assert common.selection.since == datetime(2026, 1, 31, 13, 5, 10, tzinfo=UTC)
    assert _parse("--start", "2026-01-31T13:05:10Z", "--end", "2026-01-31T13:06:00Z").selection is None


@pytest.mark.parametrize(
    ("document", "field", "rule"),
    [
        (
            {"match": {"client_colour": "red"}, "since": "2026-01-31T13:00:00Z"},
            "--selection.match.client_colour",
            "is not a selector",
        ),
        (
            {"match": {"client_id": "(orders"}, "since": "2026-01-31T13:00:00Z"},
            "--selection.match.client_id",
            "unbalanced",
        ),
        (
            {"match": {"client_id": ""}, "since": "2026-01-31T13:00:00Z"},
            "--selection.match.client_id",
            "non-empty",
        ),
        ({"match": {}, "since": "yesterday"}, "--selection.since", "ISO-8601"),
        ({"match": {}, "since": "2026-01-31T13:00:00Z", "until": "x"}, "--selection", '"match" and "since"'),
        (["client_id=orders-.*"], "--selection", '"match" and "since"'),
    ],
)
def test_bad_selection_names_the_field(tmp_path: Path, document: object, field: str, rule: str) -> None:
    path = tmp_path / "selection.json"
    path.write_text(json.dumps(document))
    with pytest.raises(SparkAppInputError) as raised:
        _parse("--start", "2026-01-31T13:05:10Z", "--end", "2026-01-31T13:06:00Z", "--selection", str(path))
    assert raised.value.field == field and rule in raised.value.rule


def test_the_baseline_history_ends_where_asked_never_after_the_window() -> None:
    from kip714_common.anomaly_args import parse_anomaly_args

    window = ["--start", "2026-01-31T14:51:00Z", "--end", "2026-01-31T14:59:00Z", "--history", "1h"]
    at = datetime(2026, 1, 31, 14, 51, tzinfo=UTC)
    assert parse_anomaly_args([*BASE, *window]).history_span == (at - timedelta(hours=1), at)
    assert parse_anomaly_args([*BASE, *window, "--history-end", ""]).history_end is None  # an empty template
    hourly = parse_anomaly_args([*BASE, *window, "--history-end", "2026-01-31T14:00:00Z"])
    assert hourly.history_span == (at.replace(hour=13, minute=0), at.replace(minute=0))
    for text, rule in (("2026-01-31T14:52:00Z", "at or before --start"), ("soon", "ISO-8601")):
        with pytest.raises(SparkAppInputError) as caught:
            parse_anomaly_args([*BASE, *window, "--history-end", text])
        assert (caught.value.field, rule in caught.value.rule) == ("--history-end", True)


def test_a_baselines_cache_needs_a_history_that_ends_before_the_window() -> None:
    from kip714_common.anomaly_args import parse_anomaly_args

    window = ["--start", "2026-01-31T14:51:00Z", "--end", "2026-01-31T14:59:00Z"]
    with pytest.raises(SparkAppInputError) as caught:
        parse_anomaly_args([*BASE, *window, "--baselines-cache", "/live/baselines"])
    assert (caught.value.field, "needs --history-end" in caught.value.rule) == ("--baselines-cache", True)
    ended = [*window, "--history-end", "2026-01-31T14:00:00Z"]
    with pytest.raises(SparkAppInputError) as caught:
        parse_anomaly_args([*BASE, *ended, "--baselines-cache", "/live/baselines"])
    assert (caught.value.field, "needs --history-root" in caught.value.rule) == ("--baselines-cache", True)
    kept = parse_anomaly_args(
        [*BASE, *ended, "--history-root", "/hourly", "--baselines-cache", "/live/baselines/"]
    )
    assert kept.baselines_cache == "/live/baselines"
    assert parse_anomaly_args([*BASE, *window, "--baselines-cache", ""]).baselines_cache is None


def test_kept_baselines_are_looked_for_under_their_own_settings_and_version() -> None:
    from kip714_common import baseline_store

    learned_with = {
        "history": ["13:00", "14:00"],
        "history_root": "/hourly",
        "group_by": ["client_id"],
        "k": 4,
    }
    folder = baseline_store.settings_folder("/live/baselines/", learned_with)
    assert folder.startswith("/live/baselines/learned-")
    for changed in ({"k": 5}, {"group_by": ["client_software_name"]}, {"history": ["12:00", "13:00"]}):
        assert baseline_store.settings_folder("/live/baselines", {**learned_with, **changed}) != folder
    assert baseline_store.settings_folder("/live/baselines", dict(reversed(learned_with.items()))) == folder
    original = baseline_store.STORE_VERSION
    try:
        baseline_store.STORE_VERSION = original + 1  # learning changed: the old folders are not read
        assert baseline_store.settings_folder("/live/baselines", learned_with) != folder
    finally:
        baseline_store.STORE_VERSION = original
