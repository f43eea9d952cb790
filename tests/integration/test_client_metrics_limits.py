"""Window limits against the real broker: Java regexes judged by the broker, foreign subscriptions,
odd expiries, the maximum window length.

Each test here failed before its fix: the local Python ``re`` check refused ``\\p{L}+`` and let
``(?P<x>a)`` through to a broker error; ``describe`` raised on subscriptions our rules refuse; a name
with expiry year 0001 was re-formatted on delete (``exp10101...``) and never reaped.
"""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from kafka.admin import AlterConfigOp
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from subscription_fixtures import unique

from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin, UpsertOutcome
from airflow_provider_kip714.subscriptions.model import Subscription
from tests.support.cli import KIP714


def raw_create(admin: ClientMetricsAdmin, name: str, configs: dict[str, str]) -> None:
    """Write a subscription the way another tool would, bypassing our validation."""
    admin._alter(name, {key: (AlterConfigOp.SET, value) for key, value in configs.items()}, "raw write")
    admin._await_visible(name, lambda: name in admin.list_names())


def test_java_only_regex_is_accepted_because_the_broker_accepts_it(
    admin: ClientMetricsAdmin, cleanup: list[str]
) -> None:
    name = unique("javare")
    cleanup.append(name)
    wanted = Subscription.from_spec(name, metrics="x.", match=r"client_id=\p{L}+-nobody")
    assert admin.upsert(wanted).outcome is UpsertOutcome.CREATED
    described = admin.describe(name)
    assert described is not None and described.same_content(wanted) and not described.problems


@pytest.mark.parametrize("pattern", ["(?P<x>a)", "[z-a]", "*a"])
def test_regex_the_broker_refuses_is_refused_before_writing(
    admin: ClientMetricsAdmin, cleanup: list[str], pattern: str
) -> None:
    name = unique("badre")
    cleanup.append(name)
    wanted = Subscription.from_spec(name, metrics="x.", match=f"client_id={pattern}")
    with pytest.raises(SubscriptionValidationError) as refused:
        admin.upsert(wanted)
    assert refused.value.field == "match", str(refused.value)
    assert name not in admin.list_names()  # validate-only: nothing was written


def test_foreign_subscriptions_never_break_list_or_describe(
    admin: ClientMetricsAdmin, cleanup: list[str], kafka_cluster: LocalKafkaCluster
) -> None:
    mixed = unique("foreign-mixed")
    twice = unique("foreign-twice")
    cleanup += [mixed, twice]
    raw_create(admin, mixed, {"metrics": "a.,*,a.", "interval.ms": "1000", "match": "client_id=nobody-x"})
    raw_create(admin, twice, {"metrics": "a.", "interval.ms": "1000", "match": "client_id=a,client_id=b"})

    described = {s.name: s for s in admin.describe_all()}
    assert described[mixed].problems and set(described[mixed].metrics) == {"a.", "*"}
    assert described[twice].problems and [m.render() for m in described[twice].match] == [
        "client_id=a",
        "client_id=b",
    ]
    one = admin.describe(mixed)
    assert one is not None and one.problems

    bootstrap = kafka_cluster.client_config()["bootstrap.servers"]
    for command in (["list"], ["describe"], ["describe", "--name", twice]):
        done = subprocess.run(
            [*KIP714, "subscriptions", *command, "--bootstrap-server", bootstrap, "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert twice in done.stdout
        json.loads(done.stdout)
    assert admin.delete(twice)  # and they can be deleted


@pytest.mark.parametrize("expiry", ["00010101T000000Z", "09991231T235959Z", "99991231T235959Z"])
def test_window_names_with_odd_expiries_are_reaped_under_their_own_name(
    admin: ClientMetricsAdmin, cleanup: list[str], expiry: str
) -> None:
    name = f"kip714-odd-exp{expiry}-{uuid.uuid4().hex[:8]}"
    cleanup.append(name)
    raw_create(admin, name, {"metrics": "x.", "interval.ms": "1000", "match": "client_id=nobody-odd"})
    assert name in admin.reap(dry_run=True)
    assert name in admin.reap()
    assert name not in admin.list_names()


def test_window_names_beyond_the_maximum_length_are_refused(admin: ClientMetricsAdmin) -> None:
    name = f"kip714-far-exp99991231T235959Z-{uuid.uuid4().hex[:8]}"
    with pytest.raises(SubscriptionValidationError, match="maximum window"):
        admin.upsert(Subscription.from_spec(name, metrics="x."))
    assert name not in admin.list_names()
