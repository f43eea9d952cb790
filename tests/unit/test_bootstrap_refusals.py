"""``BootstrapRefusals``: a refused login ends kafka-python's bootstrap where it looks for one.

The end-to-end case (a wrong password against the real SASL listeners, named in under 5 s instead of
15 s) is in ``tests/integration/test_client_metrics_admin.py``; here, the parts that must not break
with another kafka-python: a client without the failure record, a log line that is not the loop's.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

import kafka.errors as kafka_errors

from airflow_provider_kip714.subscriptions.bootstrap_refusals import BootstrapRefusals


def bootstrap_line(*args: object) -> logging.LogRecord:
    return logging.LogRecord(
        "kafka.net.manager", logging.WARNING, __file__, 1,
        "Bootstrap connection to %s failed: %s (backoff %.2f secs)", args, None,
    )  # fmt: skip


def test_a_refused_login_is_recorded_for_the_next_attempt_and_named() -> None:
    refusals = BootstrapRefusals()
    failures: dict[object, Exception] = {}
    refusals._clients.append(SimpleNamespace(_manager=SimpleNamespace(_auth_failures=failures)))
    error = kafka_errors.SaslAuthenticationFailedError("Authentication failed: Invalid username or password")
    refusals.emit(bootstrap_line("bootstrap-0", error, 0.05))
    assert failures == {"bootstrap-0": error}
    assert refusals.login == "Authentication failed: Invalid username or password"


def test_without_the_failure_record_the_login_is_still_named() -> None:
    refusals = BootstrapRefusals()
    refusals._clients.append(SimpleNamespace())  # a kafka-python whose client has no such record
    refusals.emit(bootstrap_line("bootstrap-0", kafka_errors.SaslAuthenticationFailedError("x"), 0.05))
    assert refusals.login is not None


def test_other_lines_record_nothing() -> None:
    refusals = BootstrapRefusals()
    failures: dict[object, Exception] = {}
    refusals._clients.append(SimpleNamespace(_manager=SimpleNamespace(_auth_failures=failures)))
    refusals.emit(bootstrap_line("bootstrap-0", kafka_errors.KafkaConnectionError("refused"), 0.05))
    line = logging.LogRecord(
        "kafka", logging.ERROR, __file__, 1, "Connection failed: %s", ("Authentication failed",), None
    )
    refusals.emit(line)  # the login is named, but no node to record it for
    assert failures == {} and refusals.login == "Authentication failed"
