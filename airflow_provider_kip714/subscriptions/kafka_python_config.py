"""Translate a librdkafka-style connection extra (the apache-kafka provider's format) for kafka-python.

The same ``kafka`` connection serves confluent-kafka producers/consumers and our kafka-python admin.
Keys that only matter to producers/consumers are ignored; security keys kafka-python cannot honour
are refused, because silently dropping them would connect with weaker or different security.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_kip714.exceptions import SubscriptionValidationError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI")
SECRET_KEYS = frozenset(
    {"sasl.password", "ssl.key.password", "ssl.keystore.password", "sasl.oauthbearer.client.secret"}
)
REDACTED = "***"

# Keys of the kind "if you set it you mean it" that kafka-python's admin cannot honour.
_REFUSED_PREFIXES = ("ssl.", "sasl.", "security.", "oauth")
_REFUSED_EXACT = frozenset({"oauth_cb", "ssl_engine_location", "ssl.engine.location"})


def _field(key: str) -> str:
    return f"connection extra {key!r}"


MAX_INT_SETTING = 2**31 - 1  # Kafka's and librdkafka's int settings; more overflows socket timeouts
_ASCII_INT = re.compile(r"[0-9]{1,10}", re.ASCII)
_SERVER = re.compile(r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})", re.ASCII)


def _as_int(key: str) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        text = str(value).strip()
        if isinstance(value, bool) or not _ASCII_INT.fullmatch(text):
            raise SubscriptionValidationError(
                _field(key), f"must be an integer of 1..{MAX_INT_SETTING}", value
            )
        number = int(text)
        if not 0 < number <= MAX_INT_SETTING:
            raise SubscriptionValidationError(
                _field(key), f"must be an integer of 1..{MAX_INT_SETTING}", value
            )
        return number

    return convert


def _bootstrap(value: Any) -> list[str]:
    """``host:port[,host:port]``: each a host name, IPv4 or ``[IPv6]`` and a port of 1..65535."""
    servers = [part.strip() for part in str(value).split(",") if part.strip()]
    if not servers:
        raise SubscriptionValidationError(
            _field("bootstrap.servers"), "must list at least one host:port", value
        )
    for server in servers:
        found = _SERVER.fullmatch(server)
        if found is None or not 0 < int(found.group("port")) <= 65535 or len(server) > 260:
            raise SubscriptionValidationError(
                _field("bootstrap.servers"), "each entry must be host:port with a port of 1..65535", server
            )
    return servers


def _one_of(key: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` stripped and upper-cased, when it is one of ``choices``."""
    chosen = str(value).strip().upper()
    if chosen not in choices:
        raise SubscriptionValidationError(_field(key), f"must be one of {choices}", value)
    return chosen


def _protocol(value: Any) -> str:
    return _one_of("security.protocol", value, SECURITY_PROTOCOLS)


def _mechanism(value: Any) -> str:
    if str(value).strip().upper() == "OAUTHBEARER":
        raise SubscriptionValidationError(
            _field("sasl.mechanism"),
            "OAUTHBEARER needs a token callback, which the kafka-python admin cannot take from an extra",
            value,
        )
    return _one_of("sasl.mechanism", value, SASL_MECHANISMS)


def _hostname_check(value: Any) -> bool:
    algorithm = str(value).strip().lower()
    if algorithm in ("https",):
        return True
    if algorithm in ("none", ""):
        return False
    raise SubscriptionValidationError(
        _field("ssl.endpoint.identification.algorithm"), "must be https or none", value
    )


def _text(value: Any) -> str:
    return str(value)


# librdkafka key -> (kafka-python kwarg, converter)
SUPPORTED_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "bootstrap.servers": ("bootstrap_servers", _bootstrap),
    "metadata.broker.list": ("bootstrap_servers", _bootstrap),
    "security.protocol": ("security_protocol", _protocol),
    "sasl.mechanism": ("sasl_mechanism", _mechanism),
    "sasl.mechanisms": ("sasl_mechanism", _mechanism),
    "sasl.username": ("sasl_plain_username", _text),
    "sasl.password": ("sasl_plain_password", _text),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", _text),
    "ssl.ca.location": ("ssl_cafile", _text),
    "ssl.certificate.location": ("ssl_certfile", _text),
    "ssl.key.location": ("ssl_keyfile", _text),
    "ssl.key.password": ("ssl_password", _text),
    "ssl.crl.location": ("ssl_crlfile", _text),
    "ssl.endpoint.identification.algorithm": ("ssl_check_hostname", _hostname_check),
    "client.id": ("client_id", _text),
    "request.timeout.ms": ("request_timeout_ms", _as_int("request.timeout.ms")),
    "socket.timeout.ms": ("request_timeout_ms", _as_int("socket.timeout.ms")),
    "socket.connection.setup.timeout.ms": (
        "bootstrap_timeout_ms",
        _as_int("socket.connection.setup.timeout.ms"),
    ),
    "metadata.max.age.ms": ("metadata_max_age_ms", _as_int("metadata.max.age.ms")),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", _as_int("reconnect.backoff.ms")),
    "reconnect.backoff.max.ms": ("reconnect_backoff_max_ms", _as_int("reconnect.backoff.max.ms")),
    "retry.backoff.ms": ("retry_backoff_ms", _as_int("retry.backoff.ms")),
    "connections.max.idle.ms": ("connections_max_idle_ms", _as_int("connections.max.idle.ms")),
}

# Security keys that are harmless to ignore for an admin client (no effect on who we are or whom we trust).
_IGNORED_SECURITY_KEYS = frozenset({"ssl.providers", "sasl.kerberos.min.time.before.relogin"})


def to_kafka_python_kwargs(extra: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``KafkaAdminClient`` keyword arguments for a librdkafka-style config dict."""
    if not isinstance(extra, Mapping):
        raise SubscriptionValidationError(
            "connection extra", "must be a JSON object of librdkafka settings", extra
        )
    kwargs: dict[str, Any] = {}
    for key, value in extra.items():
        if key in SUPPORTED_KEYS:
            kwarg, convert = SUPPORTED_KEYS[key]
            kwargs[kwarg] = convert(value)
        elif key in _REFUSED_EXACT or (
            key.startswith(_REFUSED_PREFIXES) and key not in _IGNORED_SECURITY_KEYS
        ):
            raise SubscriptionValidationError(
                _field(key),
                "is not supported by the kafka-python admin client; ignoring it would change how we "
                f"connect (supported: {', '.join(sorted(SUPPORTED_KEYS))})",
            )
        # Everything else is producer/consumer tuning the admin client does not need.
    if "bootstrap_servers" not in kwargs:
        raise SubscriptionValidationError(_field("bootstrap.servers"), "is required")
    protocol = kwargs.get("security_protocol", "PLAINTEXT")
    if protocol.startswith("SASL_"):
        mechanism = kwargs.setdefault("sasl_mechanism", "PLAIN")
        if mechanism != "GSSAPI" and not (
            kwargs.get("sasl_plain_username") and kwargs.get("sasl_plain_password")
        ):
            raise SubscriptionValidationError(
                _field("sasl.username/sasl.password"), f"are required for {protocol} with {mechanism}"
            )
    elif "sasl_mechanism" in kwargs or "sasl_plain_username" in kwargs:
        raise SubscriptionValidationError(
            _field("security.protocol"),
            "must be SASL_PLAINTEXT or SASL_SSL when sasl.* settings are given",
            protocol,
        )
    return kwargs


def redact(extra: Mapping[str, Any]) -> dict[str, Any]:
    """A copy safe to log: secret values replaced."""
    return {
        key: (REDACTED if key in SECRET_KEYS or "password" in key or "secret" in key else value)
        for key, value in extra.items()
    }


def secret_values(extra: Mapping[str, Any]) -> list[str]:
    """The secret values of an extra, to register with Airflow's masker."""
    return [
        str(value)
        for key, value in extra.items()
        if (key in SECRET_KEYS or "password" in key or "secret" in key) and value
    ]


def read_java_properties(text: str) -> dict[str, str]:
    """Parse a Java ``.properties`` file, as ``--command-config`` takes.

    Supports ``k=v``, ``k: v``, ``#``/``!`` comments and backslash line continuations.
    """
    result: dict[str, str] = {}
    logical: list[str] = []
    for raw_line in text.splitlines():
        line = raw_line.strip() if not logical else raw_line.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry = "".join(logical)
        logical = []
        separators = [index for index in (entry.find("="), entry.find(":")) if index >= 0]
        if separators:
            cut = min(separators)
            key, value = entry[:cut].strip(), entry[cut + 1 :].strip()
        else:
            key, _, value = entry.partition(" ")
            key, value = key.strip(), value.strip()
        result[key] = value
    return result


def java_client_properties_to_extra(properties: Mapping[str, str]) -> dict[str, str]:
    """Map Java client properties (``--command-config``) onto librdkafka names.

    The names are shared except ``sasl.jaas.config``, whose PLAIN/SCRAM credentials become
    ``sasl.username``/``sasl.password``. Java-only keys such as ``ssl.truststore.location`` pass
    through and are refused by ``to_kafka_python_kwargs`` with a clear message (PEM files only).
    """
    extra: dict[str, str] = {}
    for key, value in properties.items():
        if key == "sasl.jaas.config":
            username = _JAAS_USERNAME.search(value)
            password = _JAAS_PASSWORD.search(value)
            if username is None or password is None:
                raise SubscriptionValidationError(
                    "command-config sasl.jaas.config", 'needs username="..." and password="..." (PLAIN/SCRAM)'
                )
            extra["sasl.username"] = username.group(1)
            extra["sasl.password"] = password.group(1)
            continue
        extra[key] = value
    return extra


_JAAS_USERNAME = re.compile(r'username\s*=\s*"([^"]*)"')
_JAAS_PASSWORD = re.compile(r'password\s*=\s*"([^"]*)"')
