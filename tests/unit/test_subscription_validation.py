"""The validation table: Kafka's CLIENT_METRICS rules, checked before the cluster is touched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_kip714.contract.instance_id import to_kafka_form
from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.subscriptions.model import MatchSelector, Subscription, SubscriptionChange

EXPIRY = datetime(2026, 11, 22, 8, 30, tzinfo=UTC)
WINDOW = "kip714-orders-exp20261122T083000Z-0a1b2c3d"

VALID = [
    pytest.param({"name": "all-clients", "metrics": "*"}, id="all-metrics-star"),
    pytest.param({"name": "p", "metrics": "org.apache.kafka.producer."}, id="one-prefix"),
    pytest.param({"name": "p", "metrics": "a.b, c.d ,e"}, id="prefix-list-trimmed"),
    pytest.param({"name": "blocked", "block": True}, id="block-no-metrics"),
    pytest.param({"name": "p", "interval_ms": 100}, id="interval-min"),
    pytest.param({"name": "p", "interval_ms": 3_600_000}, id="interval-max"),
    pytest.param({"name": "p", "interval_ms": "10000"}, id="interval-as-text"),
    pytest.param({"name": "p", "match": "client_id=orders-.*"}, id="match-client-id-regex"),
    pytest.param(
        {"name": "p", "match": "client_software_name=apache-kafka-java,client_source_port=9\\d+"}, id="two"
    ),
    pytest.param({"name": "p", "match": {"client_source_address": "127\\.0\\.0\\.1"}}, id="match-mapping"),
    pytest.param({"name": "p", "match": "client_id=a=b"}, id="split-on-first-equals"),
    pytest.param(
        {"name": "p", "match": "client_instance_id=3f2504e0-4f89-11d3-9a0c-0305e82c3301"}, id="hex-id"
    ),
    pytest.param({"name": WINDOW, "metrics": "*"}, id="window-name-derives-expiry"),
    pytest.param({"name": WINDOW, "expires_at": EXPIRY}, id="window-name-with-matching-expiry"),
    pytest.param(
        {"name": "p", "metrics": ["org.apache.kafka.consumer.", "org.apache.kafka.producer."]}, id="iter"
    ),
]

INVALID = [
    pytest.param({"name": ""}, "name", "non-empty", id="empty-name"),
    pytest.param({"name": "has space"}, "name", "whitespace", id="name-with-space"),
    pytest.param({"name": "x" * 256}, "name", "at most 255", id="name-too-long"),
    pytest.param(
        {"name": "p", "interval_ms": 99}, "interval.ms", "between 100 and 3600000", id="interval-low"
    ),
    pytest.param({"name": "p", "interval_ms": 3_600_001}, "interval.ms", "between", id="interval-high"),
    pytest.param({"name": "p", "interval_ms": "10s"}, "interval.ms", "integer", id="interval-not-int"),
    pytest.param({"name": "p", "interval_ms": True}, "interval.ms", "integer", id="interval-bool"),
    pytest.param({"name": "p", "match": "client_idd=x"}, "match", "unknown selector", id="unknown-selector"),
    pytest.param({"name": "p", "match": "client_id"}, "match", "selector=regex", id="match-without-equals"),
    pytest.param({"name": "p", "match": "client_id=("}, "match", "unbalanced", id="bad-regex"),
    pytest.param({"name": "p", "match": "client_id="}, "match", "non-empty regex", id="empty-regex"),
    pytest.param(
        {"name": "p", "match": ["client_id=a,b"]}, "match", "cannot contain ','", id="comma-in-regex"
    ),
    pytest.param({"name": "p", "match": "client_id=a,client_id=b"}, "match", "once", id="duplicate-selector"),
    pytest.param({"name": "p", "metrics": "a.,a."}, "metrics", "duplicate", id="duplicate-prefix"),
    pytest.param({"name": "p", "metrics": "*,a."}, "metrics", "'*' already means", id="star-mixed"),
    pytest.param({"name": "p", "metrics": "a.,,b."}, "metrics", "non-empty", id="empty-prefix"),
    pytest.param({"name": "p", "metrics": "org.\x01x"}, "metrics", "control", id="control-in-prefix"),
    pytest.param({"name": "p", "metrics": "org.\x1b[2J"}, "metrics", "control", id="escape-in-prefix"),
    pytest.param(
        {"name": "p", "metrics": "a.", "block": True}, "block", "no metrics", id="block-with-metrics"
    ),
    pytest.param(
        {"name": "p", "expires_at": EXPIRY}, "expires_at", "only window names", id="expiry-non-window"
    ),
    pytest.param(
        {"name": WINDOW, "expires_at": EXPIRY + timedelta(hours=1)}, "expires_at", "disagrees", id="exp-ne"
    ),
    pytest.param(
        {"name": WINDOW, "expires_at": datetime(2026, 11, 22)}, "expires_at", "aware", id="naive-expiry"
    ),
]


@pytest.mark.parametrize("spec", VALID)
def test_valid_specs_build(spec: dict) -> None:
    subscription = Subscription.from_spec(**spec)
    # Round trip through the broker's representation keeps the content.
    again = Subscription.from_configs(subscription.name, subscription.to_configs())
    assert again.same_content(subscription)


@pytest.mark.parametrize(("spec", "field", "rule_fragment"), INVALID)
def test_invalid_specs_name_field_and_rule(spec: dict, field: str, rule_fragment: str) -> None:
    with pytest.raises(SubscriptionValidationError) as caught:
        Subscription.from_spec(**spec)
    assert caught.value.field == field
    assert rule_fragment in caught.value.rule


def test_table_is_at_least_twenty_cases() -> None:
    assert len(VALID) + len(INVALID) >= 20


def test_hex_instance_id_becomes_kafka_base64_in_configs() -> None:
    hex_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    subscription = Subscription.from_spec("p", match=f"client_instance_id={hex_id}")
    assert subscription.to_configs()["match"] == f"client_instance_id={to_kafka_form(hex_id)}"
    assert len(to_kafka_form(hex_id)) == 22


def test_configs_render_block_as_empty_metrics_and_window_expiry_is_parsed() -> None:
    blocked = Subscription.from_spec(WINDOW, block=True, interval_ms=500)
    assert blocked.to_configs() == {"metrics": "", "interval.ms": "500", "match": ""}
    assert blocked.expires_at == EXPIRY
    assert blocked.to_json()["block"] is True


def test_unknown_broker_key_is_a_contract_break() -> None:
    with pytest.raises(SubscriptionValidationError) as caught:
        Subscription.from_configs("p", {"metrics": "", "interval.ms": "1000", "match": "", "expiry": "x"})
    assert caught.value.field == "configs"


def test_same_content_ignores_order() -> None:
    one = Subscription.from_spec("p", metrics="a.,b.", match="client_id=x,client_software_name=y")
    two = Subscription.from_spec("p", metrics="b.,a.", match="client_software_name=y,client_id=x")
    three = Subscription.from_spec("p", metrics="b.", match="client_software_name=y,client_id=x")
    assert one.same_content(two)
    assert not one.same_content(three)


def test_match_selector_rejects_surrounding_whitespace_when_built_directly() -> None:
    with pytest.raises(SubscriptionValidationError):
        MatchSelector("client_id", " x")


@pytest.mark.parametrize(
    "configs",
    [
        {"metrics": "a.,*", "interval.ms": "1000", "match": ""},
        {"metrics": "a.,a.", "interval.ms": "1000", "match": ""},
        {"metrics": "a.", "interval.ms": "1000", "match": "client_id=a,client_id=b"},
        {"metrics": "a.", "interval.ms": "1000", "match": "client_id=(?P<x>a)"},
        {"metrics": "a.", "interval.ms": "1000", "match": r"client_id=\p{L}+,client_software_name= x"},
        {"metrics": "a.", "interval.ms": "7", "match": ""},
    ],
)
def test_a_foreign_subscription_read_from_a_broker_is_kept_with_its_problem(configs: dict) -> None:
    """Someone else's subscription must never make describe fail (it did: from_configs raised)."""
    found = Subscription.from_configs("made by someone else", configs)
    assert found.name == "made by someone else"
    rendered = found.to_json()
    assert rendered["metrics"] and rendered["interval_ms"] == int(configs["interval.ms"])
    assert ",".join(rendered["match"]) == configs["match"].replace("= ", "=")
    assert found.problems or r"\p{L}" in configs["match"] or "(?P" in configs["match"]


def test_java_regex_syntax_is_left_to_the_broker() -> None:
    r"""``\p{L}`` is valid Java (the broker's engine) though Python's ``re`` refuses it."""
    assert Subscription.from_spec("p", match=r"client_id=\p{L}+").match[0].pattern == r"\p{L}+"


def test_a_change_applies_removals_then_additions_and_keeps_what_it_does_not_name() -> None:
    current = Subscription.from_spec("orders", metrics="a.,b.", interval_ms=5000, match="client_id=x")
    change = SubscriptionChange.of("orders", add_metrics="c.,a.", remove_metrics="b.")
    wanted = change.applied_to(current)
    assert wanted.metrics == ("a.", "c.")
    assert wanted.interval_ms == 5000 and wanted.match == current.match

    retimed = SubscriptionChange.of("orders", interval_ms="1000", match="").applied_to(current)
    assert retimed.metrics == current.metrics
    assert retimed.interval_ms == 1000 and retimed.match == ()


@pytest.mark.parametrize(
    ("pieces", "field", "rule_fragment"),
    [
        ({"add_metrics": "a b."}, "metrics", "whitespace"),
        ({"add_metrics": "a.,a."}, "metrics", "duplicate"),
        ({"remove_metrics": "a.,,b."}, "metrics", "cannot be empty"),
        ({"interval_ms": "10"}, "interval.ms", "between"),
        ({"interval_ms": True}, "interval.ms", "integer"),
        ({"match": "nosuch=x"}, "match", "unknown selector"),
    ],
)
def test_a_change_is_refused_where_it_enters_naming_the_field(
    pieces: dict[str, object], field: str, rule_fragment: str
) -> None:
    with pytest.raises(SubscriptionValidationError) as refused:
        SubscriptionChange.of("orders", **pieces)  # type: ignore[arg-type]
    assert refused.value.field == field
    assert rule_fragment in str(refused.value)


def test_a_foreign_subscriptions_prefix_can_be_removed_though_our_rules_refuse_it_as_an_addition() -> None:
    foreign = Subscription.from_configs("legacy", {"metrics": "*,a b.", "interval.ms": "5000", "match": ""})
    assert foreign.problems  # kept as the broker has it
    cleaned = SubscriptionChange.of("legacy", remove_metrics="a b.").applied_to(foreign)
    assert cleaned.metrics == ("*",) and not cleaned.problems


@pytest.mark.parametrize(
    "pieces",
    [
        {"add_metrics": "ab."},  # a string where a tuple belongs: not taken apart into "a", "b", "."
        {"remove_metrics": ("",)},
        {"interval_ms": "1000"},
        {"match": "client_id=x"},
    ],
)
def test_a_change_built_directly_checks_its_types(pieces: dict[str, object]) -> None:
    with pytest.raises(SubscriptionValidationError):
        SubscriptionChange("orders", **pieces)  # type: ignore[arg-type]


def test_a_change_applies_only_to_its_own_subscription() -> None:
    with pytest.raises(SubscriptionValidationError, match="the change is for 'orders'"):
        SubscriptionChange.of("orders", add_metrics="a.").applied_to(Subscription.from_spec("billing"))
