"""A TLS handshake before kafka-python's bootstrap: a certificate that does not verify is named at once.

kafka-python retries a handshake whose certificate does not verify until its bootstrap timeout (15 s by
default) and then raises only "Unable to bootstrap", which reads like a broker that is down. A wrong CA
is a setting to fix, not an outage to wait out, so the admin (``admin._connect``) asks here first.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from typing import Any

try:  # kafka-python 3's TLS context builder; without it, no probe (the bootstrap timeout names a refusal)
    from kafka.net.transport import KafkaSSLTransport
except ImportError:  # pragma: no cover - another kafka-python 3.x layout
    KafkaSSLTransport = None

TLS_PROBE_TIMEOUT_S = 5.0
_TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})


def _server_address(server: str) -> tuple[str, int] | None:
    """``host:port`` (``[v6]:port`` too) as a socket address, or None when it is not one."""
    host, _, port = server.strip().rpartition(":")
    host = host.strip("[]")
    return (host, int(port)) if host and port.isdigit() else None


def refused_certificate(settings: Mapping[str, Any]) -> str | None:
    """Why no bootstrap server's certificate verifies, from one TLS handshake each; None otherwise.

    kafka-python retries a handshake whose certificate does not verify until its bootstrap timeout
    (15 s) and only then gives up; a wrong CA is a setting to fix, not an outage to wait out. The
    handshake uses kafka-python's own context for these settings (CA, hostname check, client
    certificate), so it verifies exactly what kafka-python will. Only a certificate that does not
    verify counts: a server that is down, slow or that verifies leaves the verdict to kafka-python.
    """
    protocol = str(settings.get("security_protocol", "PLAINTEXT")).upper()
    if protocol not in _TLS_PROTOCOLS or KafkaSSLTransport is None:
        return None
    servers = settings.get("bootstrap_servers") or []
    if isinstance(servers, str):
        servers = servers.split(",")
    try:
        context = KafkaSSLTransport._build_ssl_context(
            {key: settings.get(key, default) for key, default in KafkaSSLTransport.DEFAULT_CONFIG.items()}
        )
    except (ssl.SSLError, OSError, ValueError):
        return None  # kafka-python reports bad TLS files itself
    refusal: str | None = None
    for address in filter(None, map(_server_address, servers)):
        try:
            with (
                socket.create_connection(address, timeout=TLS_PROBE_TIMEOUT_S) as raw,
                context.wrap_socket(raw, server_hostname=address[0]),
            ):
                return None  # this one verifies: kafka-python can bootstrap from it
        except ssl.SSLCertVerificationError as err:
            refusal = refusal or f"Handshake failed: {err}"
        except (OSError, ValueError):
            continue
    return refusal
