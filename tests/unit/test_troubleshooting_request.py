"""The troubleshooting form: validation before the cluster, thresholds -> rules, window bounds."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_kip714.exceptions import Kip714Error, SubscriptionValidationError
from airflow_provider_kip714.storage.data_root import RunArea
from airflow_provider_kip714.troubleshooting.form import THRESHOLD_FIELDS, troubleshoot_params
from airflow_provider_kip714.troubleshooting.request import TroubleshootingRequest
from airflow_provider_kip714.troubleshooting.rules import (
    checked_rules_text,
    window_rules,
    write_window_rules,
)
from airflow_provider_kip714.troubleshooting.window import WindowBounds
from spark_apps.kip714_common.rules import load_rules

REPO_ROOT = Path(__file__).resolve().parents[2]


def defaults(**overrides: object) -> dict[str, object]:
    return {**{name: param.value for name, param in troubleshoot_params().items()}, **overrides}


def test_defaults_are_a_valid_request() -> None:
    request = TroubleshootingRequest.from_params(defaults())
    assert request.match == () and request.metrics == ("org.apache.kafka.",)
    assert (
        request.interval_ms == 5000
        and request.window_seconds == 120
        and request.kafka_config_id == "kafka_default"
    )


def test_selectors_from_fields_and_extra_entries_are_combined() -> None:
    request = TroubleshootingRequest.from_params(
        defaults(
            client_id="orders-.*",
            client_software_name="apache-kafka-java",
            match=["client_source_port=9.*"],
        )
    )
    assert request.match == (
        "client_id=orders-.*",
        "client_software_name=apache-kafka-java",
        "client_source_port=9.*",
    )
    assert request.match_map()["client_id"] == "orders-.*"


@pytest.mark.parametrize(
    ("overrides", "field", "rule"),
    [
        ({"interval_ms": 50}, "interval_ms", "100"),
        ({"match": ["client_colour=red"]}, "match", "unknown selector"),
        ({"client_id": "orders-("}, "match", "unbalanced"),
        ({"metrics": []}, "metrics", "at least one"),
        ({"window_seconds": 5}, "window_seconds", "10..86400"),
        ({"bucket": "7s"}, "bucket", "must be one of"),
        ({"kafka_config_id": " "}, "kafka_config_id", "must name an Airflow connection"),
        ({"thresholds": [{"metric_prefix": "x", "threshold": "high"}]}, "thresholds[0].threshold", "number"),
        (
            {"thresholds": [{"metric_prefix": "x", "threshold": 1, "field": "median"}]},
            "thresholds[0].field",
            "one of",
        ),
        (
            {"thresholds": [{"metric_prefix": "x", "threshold": 1, "colour": 1}]},
            "thresholds[0].colour",
            "not a",
        ),
        (
            {
                "thresholds": [
                    {"metric_prefix": "x", "threshold": 5, "comparison": "<", "critical_threshold": 9}
                ]
            },
            "thresholds[0].critical_threshold",
            "direction <",
        ),
    ],
)
def test_invalid_fields_are_named_with_their_rule(overrides: dict, field: str, rule: str) -> None:
    with pytest.raises(SubscriptionValidationError) as raised:
        TroubleshootingRequest.from_params(defaults(**overrides))
    assert raised.value.field == field
    assert rule in str(raised.value)


def test_form_threshold_fields_are_rule_fields_of_the_anomalies_app() -> None:
    sys.path.insert(0, str(REPO_ROOT / "spark_apps"))
    try:
        from kip714_common.rules import RULE_FIELDS
    finally:
        sys.path.remove(str(REPO_ROOT / "spark_apps"))
    assert set(THRESHOLD_FIELDS) <= set(RULE_FIELDS)


def test_a_threshold_prefix_is_named_as_the_rollups_name_metrics() -> None:
    """One home (``kip714_common/metric_names.py``) for the provider's thresholds and the Spark apps."""
    rules = window_rules(
        TroubleshootingRequest.from_params(
            defaults(
                metrics=["org.apache.kafka.producer."],
                thresholds=[
                    {
                        "metric_prefix": " org.apache.kafka.Producer.Record-Queue",
                        "field": "max",
                        "comparison": ">",
                        "threshold": 1,
                    }
                ],
            )
        ),
        ["producer.record.queue.time.max", "consumer.fetch"],
        None,
    )
    assert [rule["metric"] for rule in rules["rules"]] == ["producer.record.queue.time.max"]


def write_rollup_names(area: RunArea, names: list[str]) -> None:
    folder = area.table("rollups") / "date=2026-03-01" / "hour=10"
    folder.mkdir(parents=True)
    table = pa.table(
        {"metric_name": [*names, "broker.only"], "record_type": ["client"] * len(names) + ["broker"]}
    )
    pq.write_table(table, folder / "part-0.parquet")


def test_thresholds_become_one_rule_per_rolled_up_metric(tmp_path: Path) -> None:
    zone = RunArea(tmp_path)
    write_rollup_names(
        zone, ["producer.record.queue.time.avg", "producer.record.queue.time.max", "consumer.x"]
    )
    request = TroubleshootingRequest.from_params(
        defaults(
            client_id="orders-.*",
            client_source_port="9092",
            use_default_rules=False,
            thresholds=[
                {"metric_prefix": "org.apache.kafka.producer.record.queue", "threshold": 10, "field": "max"},
                {"metric_prefix": "broker.", "threshold": 1},
            ],
        )
    )
    path, count = write_window_rules(zone, request, None)
    rules = json.loads(path.read_text())["rules"]
    assert count == 2 and [r["metric"] for r in rules] == [
        "producer.record.queue.time.avg",
        "producer.record.queue.time.max",
    ]
    assert all(r["match"] == {"client_id": "orders-.*"} for r in rules)  # no port in the rollups
    assert all(r["field"] == "max" and r["threshold"] == 10 for r in rules)


def test_default_rules_are_included_when_asked(tmp_path: Path) -> None:
    default_rules = REPO_ROOT / "spark_apps" / "rules" / "default_rules.json"
    request = TroubleshootingRequest.from_params(defaults())
    document = window_rules(request, [], default_rules)
    assert document == json.loads(default_rules.read_text())


def test_window_bounds_come_from_the_create_operators_result() -> None:
    start, end = datetime(2026, 3, 1, 10, 0, 2, tzinfo=UTC), datetime(2026, 3, 1, 10, 5, tzinfo=UTC)
    window = {"name": "kip714-troubleshoot-exp20260301T100500Z-0badcafe", "kafka_config_id": "k"}
    bounds = WindowBounds.of_xcom({**window, "start": start.isoformat(), "end": end.isoformat()})
    assert (bounds.start, bounds.end) == (start, end)
    for bad in (
        {},
        {"start": "x", "end": end.isoformat()},
        {"start": end.isoformat(), "end": start.isoformat()},
    ):
        with pytest.raises(Kip714Error, match="open_subscription"):
            WindowBounds.of_xcom(bad)


NON_FINITE = [float("nan"), float("inf"), float("-inf")]


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize("key", ["threshold", "critical_threshold"])
def test_thresholds_refuse_nan_and_infinity(key: str, value: float) -> None:
    """NaN never breaches and infinity always does: both were accepted and silently useless."""
    threshold = {"metric_prefix": "org.apache.kafka.producer.", "threshold": 1, key: value}
    with pytest.raises(SubscriptionValidationError) as raised:
        TroubleshootingRequest.from_params(defaults(thresholds=[threshold]))
    assert raised.value.field == f"thresholds[0].{key}" and "finite" in raised.value.rule


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"window_seconds": 86401}, "window_seconds"),
        ({"window_seconds": float("inf")}, "window_seconds"),
        ({"min_clients": 0}, "min_clients"),
        ({"min_clients": -3}, "min_clients"),
        ({"baseline_for_seconds": -1}, "baseline_for_seconds"),
        (
            {"thresholds": [{"metric_prefix": "x", "threshold": 1, "for_seconds": -5}]},
            "thresholds[0].for_seconds",
        ),
        ({"thresholds": [{"metric_prefix": "x", "threshold": True}]}, "thresholds[0].threshold"),
    ],
)
def test_negative_and_out_of_range_counts_are_refused(overrides: dict, field: str) -> None:
    with pytest.raises(SubscriptionValidationError) as raised:
        TroubleshootingRequest.from_params(defaults(**overrides))
    assert raised.value.field == field


def test_the_written_rules_file_is_accepted_by_the_spark_loader(tmp_path: Path) -> None:
    """One schema: what the DAG writes is read back by ``load_rules``, the anomalies app's loader."""
    zone = RunArea(tmp_path)
    odd = ["producer.a" * 20, "producer.a" * 20 + "x", "producer.queue/time é", "producer.q"]
    write_rollup_names(zone, odd)
    request = TroubleshootingRequest.from_params(
        defaults(
            client_id=r"\p{L}+-orders",
            thresholds=[
                {"metric_prefix": "org.apache.kafka.producer.", "threshold": -1.5, "critical_threshold": 9},
                {"metric_prefix": "producer.q", "threshold": 3, "comparison": "<", "for_seconds": 30},
            ],
        )
    )
    path, count = write_window_rules(zone, request, REPO_ROOT / "spark_apps" / "rules" / "default_rules.json")
    loaded = load_rules(str(path))
    assert len(loaded) == count and len({rule.name for rule in loaded}) == count
    form_rules = [rule for rule in loaded if rule.name.startswith("threshold")]
    assert len(form_rules) == len(odd) + 2  # "producer.q" also prefixes "producer.queue/time é"
    assert all(rule.match == {"client_id": r"\p{L}+-orders"} for rule in form_rules)


def test_a_rules_document_the_loader_refuses_is_refused_before_writing() -> None:
    bad = {"rules": [{"name": "x", "metric": "m", "threshold": float("nan")}]}
    with pytest.raises(SubscriptionValidationError, match="rules file would be refused"):
        checked_rules_text(bad)
    with pytest.raises(SubscriptionValidationError, match=r"rules\[0\]\.field"):
        checked_rules_text({"rules": [{"name": "x", "metric": "m", "threshold": 1, "field": "colour"}]})


NAN = float("nan")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        *[
            ("metrics", bad)
            for bad in (NAN, float("inf"), -1, 0, 1.5, True, [None], [1], {"a": 1}, "org.apache.")
        ],
        *[("client_id", bad) for bad in (True, [], NAN, ["("], 7, {"a": "b"})],
        *[("match", bad) for bad in ({}, 0, "client_id=x", [1], [None])],
        *[("thresholds", bad) for bad in ({}, 0, "", "[]")],
        *[("use_default_rules", bad) for bad in ("false", "no", 0, 1, None, [])],
        *[("kafka_config_id", bad) for bad in ("<script>alert(1)</script>", "(", "", " ", "a" * 251, 5)],
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_its_field(field: str, value: object) -> None:
    """Never coerced into text that means something else (``[None]`` -> prefix 'None', 'false' -> True)."""
    with pytest.raises(SubscriptionValidationError) as caught:
        TroubleshootingRequest.from_params({**defaults(), field: value})
    assert caught.value.field == field, caught.value
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            {"thresholds": [{"metric_prefix": "org.x", "threshold": 10**400}]},
            "thresholds[0].threshold: must be a finite number",
        ),
        (
            {"thresholds": [{"metric_prefix": "org.x", "threshold": 1, "critical_threshold": -(10**400)}]},
            "thresholds[0].critical_threshold: must be a finite number",
        ),
        ({"thresholds": [{1: 2, "zz": 3, "metric_prefix": "x", "threshold": 1}]}, "thresholds[0].1: is not"),
        (
            {"thresholds": [{"metric_prefix": "org.x\nFAKE LOG LINE", "threshold": 1}]},
            "thresholds[0].metric_prefix: a prefix cannot contain ',', whitespace or control characters",
        ),
        ({"thresholds": [{"metric_prefix": "a,b", "threshold": 1}]}, "thresholds[0].metric_prefix: a prefix"),
        ({"client_id": "orders\n.*"}, "client_id: cannot contain control characters"),
        ({"client_id": "orders.*\n"}, "client_id: cannot contain control characters"),  # was stripped
        ({"client_id": "a\x00b"}, "client_id: cannot contain control characters"),
        ({"client_software_name": "\udcff"}, "client_software_name: cannot contain control characters"),
        ({"match": ["client_id=a\x1bb"]}, "match: a client_id regex cannot contain control characters"),
        ({"interval_ms": 5}, "interval_ms: must be between 100 and 3600000 ms"),
        ({"thresholds": [{"metric_prefix": "org.x", "threshold": "1" * 500}]}, "(502 characters)"),
    ],
)
def test_hostile_form_values_are_one_named_refusal(overrides: dict, expected: str) -> None:
    """Found by a review: a huge integer (OverflowError), keys of mixed types (TypeError) and text with
    control characters (accepted, then quoted into logs or refused by the broker's encoder)."""
    with pytest.raises(SubscriptionValidationError) as raised:
        TroubleshootingRequest.from_params(defaults(**overrides))
    message = str(raised.value)
    assert expected in message and "\n" not in message and len(message) < 400


@pytest.mark.parametrize("params", [None, [], "client_id=x"])
def test_params_that_are_not_an_object_are_refused(params: object) -> None:
    with pytest.raises(SubscriptionValidationError, match=r"^params: must be an object"):
        TroubleshootingRequest.from_params(params)  # type: ignore[arg-type]


def test_a_missing_field_means_the_forms_default() -> None:
    """The REST API and ``airflow dags test -c`` may leave fields out: they mean what the form shows
    (the push interval was Kafka's 300,000 ms instead of the form's 5,000)."""
    request = TroubleshootingRequest.from_params({"kafka_config_id": "kafka_default"})
    assert request == TroubleshootingRequest.from_params(defaults())
    assert request.interval_ms == 5000 and request.metrics == ("org.apache.kafka.",)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"window_second": 3600}, "window_second: is not a field of the form (its fields: kafka_config_id, "),
        ({"\x1b[2J": 1}, "\\x1b[2J: is not a field"),
        ({"x" * 5000: 1}, "…: is not a field"),
        ({"interval_ms": "5000"}, "interval_ms: must be a whole number of milliseconds (100..3600000)"),
        ({"interval_ms": 5000.0}, "interval_ms: must be a whole number of milliseconds"),
    ],
)
def test_unknown_fields_and_coercible_text_are_refused(params: dict, expected: str) -> None:
    with pytest.raises(SubscriptionValidationError) as raised:
        TroubleshootingRequest.from_params(defaults(**params))
    message = str(raised.value)
    assert message.startswith(expected) or expected in message, message
    assert "\x1b" not in message and len(message) < 600


@pytest.mark.parametrize(
    ("metrics", "prefix"),
    [
        (["org.apache.kafka.producer."], "org.apache.kafka.consumer.fetch.manager.fetch.latency"),
        (["org.apache.kafka.producer."], "consumer.fetch"),
        (["org.apache.kafka.consumer.fetch"], "org.apache.kafka.consumer.poll"),
    ],
)
def test_a_threshold_on_metrics_the_window_does_not_collect_is_refused(metrics: list, prefix: str) -> None:
    """It could never fire, and the report would read "no anomaly"."""
    threshold = {"metric_prefix": prefix, "threshold": 1}
    with pytest.raises(SubscriptionValidationError) as raised:
        TroubleshootingRequest.from_params(defaults(metrics=metrics, thresholds=[threshold]))
    assert raised.value.field == "thresholds[0].metric_prefix"
    assert "must watch metrics the window collects" in str(raised.value)


@pytest.mark.parametrize(
    ("metrics", "prefix"),
    [
        (["org.apache.kafka.producer."], "producer.record.queue"),  # the rollups' short name
        (["org.apache.kafka.producer."], "Org.Apache.Kafka.Producer-Record"),  # normalised like the rollups
        (["org.apache.kafka.producer.record.queue.time.avg"], "org.apache.kafka.producer."),  # broader
        (["org.apache.kafka"], "consumer.poll"),  # a subscription prefix without the last dot
        (["*"], "anything.at.all"),
    ],
)
def test_a_threshold_on_collected_metrics_is_accepted(metrics: list, prefix: str) -> None:
    threshold = {"metric_prefix": prefix, "threshold": 1}
    request = TroubleshootingRequest.from_params(defaults(metrics=metrics, thresholds=[threshold]))
    assert request.thresholds[0].metric_prefix == prefix


def test_request_travels_through_xcom_typed_and_is_not_validated_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``validate_request`` validates once; later tasks rebuild the same typed request from its XCom."""
    request = TroubleshootingRequest.from_params(
        defaults(
            client_id="orders-.*",
            match=["client_software_name=apache-kafka-java"],
            metrics=["org.apache.kafka.producer."],
            thresholds=[
                {"metric_prefix": "org.apache.kafka.producer.record", "threshold": 5, "for_seconds": 10}
            ],
        )
    )
    travelled = json.loads(json.dumps(request.as_xcom()))  # XCom stores JSON
    monkeypatch.setattr(
        TroubleshootingRequest, "from_params", classmethod(lambda cls, params: pytest.fail("validated again"))
    )
    again = TroubleshootingRequest.from_xcom(travelled)
    assert again == request
    assert again.match_map() == {"client_id": "orders-.*", "client_software_name": "apache-kafka-java"}
    assert again.thresholds[0].for_seconds == 10 and isinstance(again.thresholds, tuple)


def test_request_xcom_of_another_shape_is_refused_naming_it() -> None:
    written = TroubleshootingRequest.from_params(defaults()).as_xcom()
    del written["metrics"]
    with pytest.raises(SubscriptionValidationError) as raised:
        TroubleshootingRequest.from_xcom(written)
    assert raised.value.field == "request" and "metrics" in raised.value.rule
