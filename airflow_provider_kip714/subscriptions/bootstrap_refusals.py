"""Why kafka-python's bootstrap failed, and a refused login named at once instead of after its timeout.

kafka-python (3.x) retries a refused TLS handshake or SASL login until ``bootstrap_timeout_ms`` (15 s
here) and then raises only ``KafkaTimeoutError: Unable to bootstrap``, which reads like a broker that
is down. Each retry is logged with its cause: ``BootstrapRefusals`` listens to that log while an admin
connects and keeps the cause, which is what the user must fix.

A refused login also ends the bootstrap at once. kafka-python has the mechanism itself: a connection
manager remembers an authentication failure per node and raises it at the next attempt
(``maybe_raise_auth_failure``), but its bootstrap loop never records one, so it retries a wrong password
for the whole timeout. The admin hands kafka-python a client factory (its documented ``kafka_client``
setting) that keeps the client it made, and the handler records the failure there when the log reports
it: the next attempt raises it, after one round trip instead of 15 s. Should a later kafka-python lack
that record, nothing breaks: the login is then named after the timeout, as before.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import kafka.errors as kafka_errors
from kafka.admin import KafkaAdminClient

_DEFAULT_CLIENT = KafkaAdminClient.DEFAULT_CONFIG["kafka_client"]


class BootstrapRefusals(logging.Handler):
    """The ``kafka`` logger's handler while ``KafkaAdminClient(kafka_client=client_factory)`` runs."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.tls: str | None = None
        self.login: str | None = None
        self._clients: list[Any] = []

    def client_factory(self, **config: Any) -> Any:
        """kafka-python's own network client, kept so a refused login can end the bootstrap."""
        client = _DEFAULT_CLIENT(**config)
        self._clients.append(client)
        return client

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if "CERTIFICATE_VERIFY_FAILED" in text or ("Handshake failed" in text and "SSL" in text):
            self.tls = cause(text, "Handshake failed")
        elif "SaslAuthenticationFailed" in text or "Authentication failed" in text:
            self.login = cause(text, "Authentication failed")
            self._end_bootstrap(record)

    def _end_bootstrap(self, record: logging.LogRecord) -> None:
        """Record the failure where the bootstrap's next attempt looks for one (see the module doc).

        Runs on kafka-python's IO thread, the thread its bootstrap loop runs on.
        """
        args = record.args if isinstance(record.args, tuple) else ()
        failure = next((arg for arg in args if isinstance(arg, kafka_errors.KafkaError)), None)
        if failure is None or not args or not isinstance(args[0], str | int):
            return  # not the bootstrap loop's "connection to <node> failed: <error>" line
        for client in self._clients:
            failures = getattr(getattr(client, "_manager", None), "_auth_failures", None)
            if isinstance(failures, dict):
                failures[args[0]] = failure


def tls_refusal(target: str, reason: str) -> str:
    return (
        f"TLS handshake with {target} failed: {reason}; check ssl.ca.location (ssl_cafile): "
        "the CA that signed the brokers' certificates"
    )


def cause(text: str, start: str) -> str:
    """``start`` and what follows it, without kafka-python's ``(backoff N secs)``."""
    found = text[text.find(start) :] if start in text else text
    return re.sub(r"\s*\(backoff [0-9.]+ secs\)$", "", found)
