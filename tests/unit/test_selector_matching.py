"""Whole-value matching of client-controlled values is linear-time wherever it runs (RE2).

A client chooses its own client id; an operator's regex runs against it in the triggerer, the CLI
and the report. A backtracking engine takes exponential time on ``(a+)+$`` against ``aaaa...!``.
"""

from __future__ import annotations

import time

import pytest

from airflow_provider_kip714.contract.selectors import compile_pattern, matcher
from airflow_provider_kip714.report.assemble import static_rule_applies

HOSTILE_VALUE = "a" * 5_000 + "!"
CATASTROPHIC = "(a+)+$"


def test_the_shared_matcher_is_linear_on_a_catastrophic_pattern() -> None:
    matches = matcher({"client_id": CATASTROPHIC})
    started = time.perf_counter()
    assert not matches({"client_id": HOSTILE_VALUE})
    assert time.perf_counter() - started < 1.0


def test_the_reports_static_rules_use_the_same_linear_engine() -> None:
    started = time.perf_counter()
    assert not static_rule_applies(f"client_id~{CATASTROPHIC}", {"client_id": HOSTILE_VALUE})
    assert static_rule_applies("client_id~orders-.*", {"client_id": "orders-1"})
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("pattern", ["(a)\\1", "(?=a)a", "a++"])
def test_patterns_that_need_backtracking_are_refused_with_a_reason(pattern: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        compile_pattern(pattern)
    assert not static_rule_applies(f"client_id~{pattern}", {"client_id": "aa"})


def test_whole_value_rule() -> None:
    matches = matcher({"client_id": "orders-[0-9]+", "client_software_name": "librdkafka|confluent-.*"})
    assert matches({"client_id": "orders-12", "client_software_name": "confluent-kafka-python"})
    assert not matches({"client_id": "xorders-12", "client_software_name": "librdkafka"})
    assert not matches({"client_id": "orders-12"})  # an unset label is the empty string


def test_a_static_rules_client_group_round_trips_through_its_one_encoding() -> None:
    from spark_apps.kip714_common.identity import static_client_group, static_client_match

    match = {"client_id": "a,b|c", "principal": "User:x"}  # a regex may hold the separator
    assert static_client_group(match) == "client_id~a,b|c,principal~User:x"
    assert static_client_match(static_client_group(match)) == match
    assert static_client_group({}) == "*" and static_client_match("*") == {}
    assert static_rule_applies(static_client_group(match), {"client_id": "a,b", "principal": "User:x"})
    assert not static_rule_applies(static_client_group(match), {"client_id": "b", "principal": "User:x"})
