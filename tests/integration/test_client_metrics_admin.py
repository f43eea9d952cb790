"""Subscriptions against the real local Apache Kafka: create/describe/list/alter/delete/reap, SASL, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dag_test_env import kafka_connection
from kip714_dev.local_kafka.cluster import LocalKafkaCluster
from kip714_dev.local_kafka.tls import ca_location, make_keystore
from subscription_fixtures import unique

from airflow_provider_kip714.clock import ManualClock
from airflow_provider_kip714.exceptions import (
    ClientMetricsAdminError,
    ClusterUnreachableError,
    SubscriptionValidationError,
)
from airflow_provider_kip714.hooks.client_metrics import ClientMetricsHook
from airflow_provider_kip714.subscriptions.admin import (
    DEFAULT_BOOTSTRAP_TIMEOUT_MS,
    ClientMetricsAdmin,
    UpsertOutcome,
)
from airflow_provider_kip714.subscriptions.kafka_python_config import to_kafka_python_kwargs
from airflow_provider_kip714.subscriptions.model import Subscription, SubscriptionChange
from airflow_provider_kip714.subscriptions.window_name import format_window_name, parse_window_name
from tests.support.cli import KIP714, REPO_ROOT, run_subscriptions_cli


def nobody() -> str:
    """A match that no real client of the session has, so tests never change other tests' clients."""
    return f"client_id=nobody-{uuid.uuid4().hex[:8]}"


def test_create_describe_list_alter_delete_round_trip(admin: ClientMetricsAdmin, cleanup: list[str]) -> None:
    name = unique("roundtrip")
    cleanup.append(name)
    match = nobody()
    wanted = Subscription.from_spec(name, metrics="org.apache.kafka.producer.", interval_ms=1000, match=match)

    assert admin.upsert(wanted).outcome is UpsertOutcome.CREATED
    assert name in admin.list_names()
    described = admin.describe(name)
    assert described is not None and described.same_content(wanted)
    assert described.to_configs() == wanted.to_configs()

    altered = admin.alter(
        SubscriptionChange.of(
            name,
            add_metrics="org.apache.kafka.consumer.",
            remove_metrics="org.apache.kafka.producer.",
            interval_ms=2000,
        )
    )
    again = admin.describe(name)
    assert again is not None
    assert again.metrics == ("org.apache.kafka.consumer.",)
    assert again.interval_ms == 2000
    assert again.same_content(altered)

    admin.alter(SubscriptionChange.of(name, add_metrics="org.apache.kafka.producer."))
    appended = admin.describe(name)
    assert appended is not None
    assert set(appended.metrics) == {"org.apache.kafka.consumer.", "org.apache.kafka.producer."}

    assert admin.delete(name) is True
    assert name not in admin.list_names()
    assert admin.describe(name) is None
    assert admin.delete(name) is False  # deleting a missing subscription is not an error


def test_the_hook_alters_through_the_admin_with_its_keyword_api(
    kafka_cluster: LocalKafkaCluster, admin: ClientMetricsAdmin, cleanup: list[str]
) -> None:
    name = unique("hookalter")
    cleanup.append(name)
    admin.upsert(Subscription.from_spec(name, metrics="a.", interval_ms=5000, match=nobody()))
    with ClientMetricsHook(config=kafka_cluster.client_config()) as hook:
        altered = hook.alter(name, add_metrics="b.", remove_metrics="a.", interval_ms="2000")
        with pytest.raises(SubscriptionValidationError, match=r"interval\.ms"):
            hook.alter(name, interval_ms=10)
    described = admin.describe(name)
    assert described is not None and described.same_content(altered)
    assert described.metrics == ("b.",) and described.interval_ms == 2000


def test_create_is_idempotent_and_updates_changed_content(
    admin: ClientMetricsAdmin, cleanup: list[str]
) -> None:
    name = unique("idempotent")
    cleanup.append(name)
    match = nobody()
    first = Subscription.from_spec(name, metrics="a.,b.", interval_ms=5000, match=match)
    assert admin.upsert(first).outcome is UpsertOutcome.CREATED
    same_in_other_order = Subscription.from_spec(name, metrics="b.,a.", interval_ms=5000, match=match)
    assert admin.upsert(same_in_other_order).outcome is UpsertOutcome.UNCHANGED
    blocked = Subscription.from_spec(name, block=True, interval_ms=5000, match=match)
    assert admin.upsert(blocked).outcome is UpsertOutcome.UPDATED
    described = admin.describe(name)
    assert described is not None and described.block and described.metrics == ()
    assert admin.list_names().count(name) == 1


def test_alter_of_missing_subscription_is_a_clear_error(admin: ClientMetricsAdmin) -> None:
    with pytest.raises(ClientMetricsAdminError, match="no such subscription"):
        admin.alter(SubscriptionChange.of(unique("missing"), add_metrics="a."))


def test_broker_rejects_what_we_would_reject(admin: ClientMetricsAdmin) -> None:
    """Our validation mirrors the broker: bypass it and the broker says no for the same input."""
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

    name = unique("raw")
    resource = ConfigResource(
        ConfigResourceType.CLIENT_METRICS, name, {"interval.ms": (AlterConfigOp.SET, "50")}
    )
    result = admin.client.alter_configs([resource], raise_on_unknown=False, incremental=True)
    assert result["client_metrics"][name] != "OK"
    resource = ConfigResource(
        ConfigResourceType.CLIENT_METRICS, name, {"match": (AlterConfigOp.SET, "client_idd=x")}
    )
    result = admin.client.alter_configs([resource], raise_on_unknown=False, incremental=True)
    assert result["client_metrics"][name] != "OK"
    assert name not in admin.list_names()


def test_reap_deletes_only_expired_window_names(
    admin: ClientMetricsAdmin, cleanup: list[str], kafka_cluster: LocalKafkaCluster
) -> None:
    admin_kwargs = to_kafka_python_kwargs(kafka_cluster.client_config())
    now = datetime.now(UTC).replace(microsecond=0)
    label = unique("reap")
    expired = format_window_name(label, now - timedelta(minutes=1), "0000000a")
    current = format_window_name(label, now + timedelta(hours=1), "0000000b")
    look_alike = f"kip714-{label}-expired-by-name-only"
    plain = unique("plain")
    cleanup.extend([expired, current, look_alike, plain])
    for name in (current, look_alike, plain):
        admin.upsert(Subscription.from_spec(name, block=True, match=nobody()))
    # An expired window cannot be created now (upsert refuses it): create it with a clock from before.
    with ClientMetricsAdmin(admin_kwargs, clock=ManualClock(now - timedelta(minutes=5))) as earlier:
        earlier.upsert(Subscription.from_spec(expired, block=True, match=nobody()))

    clock = ManualClock(now)
    assert expired in admin.reap(now=clock.now(), dry_run=True)
    assert expired in admin.list_names()  # dry run changed nothing

    deleted = admin.reap(now=clock.now())
    assert expired in deleted
    assert not {current, look_alike, plain} & set(deleted)
    remaining = set(admin.list_names())
    assert expired not in remaining
    assert {current, look_alike, plain} <= remaining

    clock.advance(timedelta(hours=1))  # exactly at the expiry: the window is over
    assert current in admin.reap(now=clock.now())
    assert {look_alike, plain} <= set(admin.list_names())


def test_sasl_connection_from_extra_and_wrong_password(kafka_cluster: LocalKafkaCluster) -> None:
    if kafka_cluster.sasl_bootstrap_servers is None:
        pytest.fail("the session cluster has no SASL listener")
    user = sorted(kafka_cluster.sasl_users)[0]
    extra = kafka_cluster.client_config(sasl_user=user)
    with ClientMetricsAdmin(to_kafka_python_kwargs(extra)) as sasl_admin:
        ok, message = sasl_admin.test_connection()
    assert ok, message

    wrong = {**extra, "sasl.password": "not-the-password"}
    began = time.monotonic()
    with (
        ClientMetricsAdmin(to_kafka_python_kwargs(wrong)) as bad_admin,
        pytest.raises(ClusterUnreachableError) as caught,
    ):
        bad_admin.list_names()
    message = str(caught.value)
    assert message.startswith(
        f"authentication to {kafka_cluster.sasl_bootstrap_servers} (SASL_PLAINTEXT) failed"
    )
    assert "Invalid username or password" in message and "not-the-password" not in message
    # named after one refused login, not after kafka-python's 15 s of retries (bootstrap_refusals.py); the
    # bound leaves room for a loaded 2-core machine (5.4 s seen with the suite's two streams beside it)
    assert time.monotonic() - began < DEFAULT_BOOTSTRAP_TIMEOUT_MS / 1000 * 2 / 3


def test_cli_window_add_describe_list_delete(
    kafka_cluster: LocalKafkaCluster, admin: ClientMetricsAdmin
) -> None:
    server = ["--bootstrap-server", kafka_cluster.bootstrap_servers]
    label = unique("cli")
    added = run_subscriptions_cli(
        "add", *server, "--window", "30m", "--label", label, "--metrics", "org.apache.kafka.producer.",
        "--interval", "1000", "--match", nobody(), "--json",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    payload = json.loads(added.stdout)
    name = payload["name"]
    try:
        window = parse_window_name(name)
        assert window.label == label
        assert timedelta(minutes=29) < window.expires_at - datetime.now(UTC) <= timedelta(minutes=30)
        assert payload["outcome"] == "created"

        listed = run_subscriptions_cli("list", *server, "--json")
        assert listed.returncode == 0 and name in json.loads(listed.stdout)
        described = run_subscriptions_cli("describe", *server, "--name", name)
        assert described.returncode == 0
        assert (
            "interval.ms=1000" in described.stdout
            and "metrics=org.apache.kafka.producer." in described.stdout
        )

        altered = run_subscriptions_cli(
            "alter", *server, "--name", name, "--add-metrics", "org.apache.kafka.consumer.", "--json"
        )
        assert altered.returncode == 0, altered.stderr
        assert set(json.loads(altered.stdout)["metrics"]) == {
            "org.apache.kafka.producer.",
            "org.apache.kafka.consumer.",
        }
    finally:
        deleted = run_subscriptions_cli("delete", *server, "--name", name)
    assert deleted.returncode == 0 and deleted.stdout.startswith("deleted")
    again = run_subscriptions_cli("delete", *server, "--name", name)
    assert again.returncode == 0 and "not found" in again.stdout
    assert name not in admin.list_names()


def test_cli_command_config_sasl(kafka_cluster: LocalKafkaCluster, tmp_path: Path) -> None:
    user = sorted(kafka_cluster.sasl_users)[0]
    properties = tmp_path / "admin.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{kafka_cluster.sasl_users[user]}";\n'
    )
    assert kafka_cluster.sasl_bootstrap_servers is not None
    listed = run_subscriptions_cli(
        "list",
        "--bootstrap-server",
        kafka_cluster.sasl_bootstrap_servers,
        "--command-config",
        str(properties),
    )
    assert listed.returncode == 0, listed.stderr


def test_cli_conn_id_reuses_an_airflow_connection(
    kafka_cluster: LocalKafkaCluster, admin: ClientMetricsAdmin, tmp_path: Path
) -> None:
    user = sorted(kafka_cluster.sasl_users)[0]
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")},
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW_CONN_KIP714_CLI_TEST": kafka_connection(kafka_cluster.client_config(sasl_user=user)),
        "PYTHONPATH": str(REPO_ROOT),
    }
    name = unique("conn-id")
    command = [*KIP714, "subscriptions"]
    added = subprocess.run(
        [*command, "add", "--conn-id", "kip714_cli_test", "--name", name, "--block", "--match", nobody()],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    try:
        assert added.returncode == 0, added.stderr
        assert added.stdout.strip() == f"created: {name}"
        assert name in admin.list_names()
        assert kafka_cluster.sasl_users[user] not in added.stdout + added.stderr
    finally:
        admin.delete(name)
    missing = subprocess.run(
        [*command, "list", "--conn-id", "no_such_connection"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert missing.returncode == 2
    assert missing.stderr.strip() == (
        "kip714: error: --conn-id: no such Airflow connection (AIRFLOW_CONN_* or the metadata DB) "
        "(got 'no_such_connection')"
    )


@pytest.mark.parametrize(
    "name",
    [
        "kip714-x-exp20200101T000000Z-abcd1234",
        "kip714-x-exp20261399T000000Z-abcd1234",
        "KIP714-x-exp{}-abcd1234",
    ],
)
def test_upsert_refuses_expired_and_lookalike_window_names(admin: ClientMetricsAdmin, name: str) -> None:
    name = name.format((datetime.now(UTC) + timedelta(hours=1)).strftime("%Y%m%dT%H%M%SZ"))
    with pytest.raises(SubscriptionValidationError, match="name: "):
        admin.upsert(Subscription.from_spec(name, block=True, match=nobody()))
    assert name not in admin.list_names()


def test_a_refused_tls_handshake_is_named_not_reported_as_an_unreachable_cluster(
    tls_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """kafka-python retries a refused handshake until its bootstrap timeout (15 s) and then says only
    "Unable to bootstrap"; the admin (and ``kip714 subscriptions``, which silences kafka-python's log)
    names it at once, from one handshake of its own (``refused_certificate``)."""
    config = tls_cluster.client_config(sasl_user=sorted(tls_cluster.sasl_users)[0])
    with ClientMetricsAdmin(to_kafka_python_kwargs(config)) as admin:  # the right CA: it connects
        assert isinstance(admin.list_names(), list)
    stranger = ca_location(make_keystore(tmp_path / "another-ca"))
    untrusting = {**config, "ssl.ca.location": str(stranger)}
    began = time.monotonic()
    with (
        pytest.raises(
            ClusterUnreachableError, match=r"^TLS handshake with 127\.0\.0\.1:\d+ \(SASL_SSL\) failed: "
        ),
        ClientMetricsAdmin(to_kafka_python_kwargs(untrusting)) as refused,
    ):
        refused.list_names()
    assert time.monotonic() - began < DEFAULT_BOOTSTRAP_TIMEOUT_MS / 1000 * 2 / 3  # as the SASL test's bound
    properties = tmp_path / "client.properties"
    properties.write_text(
        "".join(f"{key}={value}\n" for key, value in untrusting.items() if key != "bootstrap.servers")
    )
    listed = run_subscriptions_cli(
        "list", "--bootstrap-server", config["bootstrap.servers"], "--command-config", str(properties)
    )
    assert listed.returncode == 2 and "Traceback" not in listed.stderr
    assert (
        listed.stderr.startswith("kip714: error: TLS handshake with ")
        and "CERTIFICATE_VERIFY_FAILED" in listed.stderr
    )
    assert listed.stderr.count("\n") == 1 and "alice-secret" not in listed.stderr

    # the right CA and a wrong password, through the CLI: the login is named at once, no traceback
    properties.write_text(
        "".join(f"{key}={value}\n" for key, value in config.items() if key != "bootstrap.servers")
        + "sasl.password=not-the-password\n"
    )
    began = time.monotonic()
    listed = run_subscriptions_cli(
        "list", "--bootstrap-server", config["bootstrap.servers"], "--command-config", str(properties)
    )
    # a CLI that waited out kafka-python's bootstrap timeout would take it plus its own start-up; under
    # two test streams on 2 cores the start-up alone reached 10 s (half the timeout was the bound)
    assert time.monotonic() - began < DEFAULT_BOOTSTRAP_TIMEOUT_MS / 1000
    assert listed.returncode == 2 and listed.stderr.count("\n") == 1, listed.stderr
    assert (
        listed.stderr.startswith("kip714: error: authentication to ") and "(SASL_SSL) failed" in listed.stderr
    )
    assert "Invalid username or password" in listed.stderr and "not-the-password" not in listed.stderr
