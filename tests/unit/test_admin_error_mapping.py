"""``ClientMetricsAdmin._call``: kafka-python's errors become one-line product errors, by kind.

The errors are kafka-python's own classes, raised as its admin client raises them. Regression: the
``except`` tuple named ``kafka.errors.NoBrokersAvailable``, which kafka-python 3 does not have, so any
error reaching it (a broker's refusal, a timeout) ended in ``AttributeError`` and a traceback.
"""

from __future__ import annotations

import kafka.errors as kafka_errors
import pytest

from airflow_provider_kip714.exceptions import ClientMetricsAdminError, ClusterUnreachableError
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin


def raising(error: BaseException):
    def call() -> None:
        raise error

    return call


@pytest.fixture
def admin() -> ClientMetricsAdmin:
    return ClientMetricsAdmin({"bootstrap_servers": ["127.0.0.1:9"]})


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (kafka_errors.KafkaTimeoutError("Unable to bootstrap"), ClusterUnreachableError),
        (kafka_errors.KafkaConnectionError("socket disconnected"), ClusterUnreachableError),
        (kafka_errors.PolicyViolationError("refused by policy"), ClientMetricsAdminError),
        (kafka_errors.InvalidConfigurationError("bad regex"), ClientMetricsAdminError),
    ],
)
def test_kafka_errors_become_one_line_errors_naming_the_action(
    admin: ClientMetricsAdmin, error: Exception, expected: type[Exception]
) -> None:
    with pytest.raises(expected) as raised:
        admin._call("altering kip714-x", raising(error))
    message = str(raised.value)
    assert message.startswith("altering kip714-x on 127.0.0.1:9 (PLAINTEXT): ") and "\n" not in message
    assert type(error).__name__ in message


def test_other_errors_pass_through_unchanged(admin: ClientMetricsAdmin) -> None:
    with pytest.raises(UnicodeEncodeError):
        admin._call("altering kip714-x", raising(UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates")))


def test_the_guardrail_reports_an_unreachable_cluster_instead_of_hiding_it() -> None:
    """``subscriptions add`` ran the guardrail, which swallowed the timeout, then waited it out again
    in the upsert (31 s for a 15 s bootstrap timeout); the window cannot open anyway: say so once."""
    from airflow_provider_kip714.subscriptions.model import Subscription
    from airflow_provider_kip714.troubleshooting.guardrails import check_subscription

    unreachable = ClientMetricsAdmin({"bootstrap_servers": ["127.0.0.1:1"], "bootstrap_timeout_ms": 500})
    subscription = Subscription.from_spec(name="x", metrics=["org.apache.kafka."])
    expected = r"^cannot reach Kafka at 127\.0\.0\.1:1 .* within 500 ms"
    with pytest.raises(ClusterUnreachableError, match=expected):
        check_subscription(subscription, admin=unreachable)
