"""A throwaway TLS identity for the local broker's SASL listener (SASL_SSL), made with the JDK's keytool.

One self-signed certificate for 127.0.0.1 (and ``localhost``) in a PKCS12 keystore the brokers load,
and the same certificate as PEM for clients to trust (``ssl.ca.location``): hostname verification
stays on, as in production. Loopback only, valid for a week, with a fixed password: it protects
nothing and exists so that tests run the TLS code paths of the clients and of landing's native reader.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Final

from kip714_dev.errors import LocalKafkaError
from kip714_dev.local_kafka.java_runtime import find_java

KEYSTORE_PASSWORD: Final = "kip714-local-only"
KEYSTORE_NAME: Final = "broker.p12"
CA_NAME: Final = "ca.pem"
_ALIAS: Final = "kip714-local-broker"


def ca_location(keystore: Path) -> Path:
    """The PEM certificate clients trust for ``keystore``."""
    return keystore.parent / CA_NAME


def make_keystore(directory: Path) -> Path:
    """Create (or reuse) ``directory/broker.p12`` and its ``ca.pem``; returns the keystore path."""
    keystore = directory / KEYSTORE_NAME
    if keystore.is_file() and ca_location(keystore).is_file():
        return keystore
    directory.mkdir(parents=True, exist_ok=True)
    keystore.unlink(missing_ok=True)
    keytool = find_java().parent / "keytool"
    store = ["-keystore", str(keystore), "-storetype", "PKCS12", "-storepass", KEYSTORE_PASSWORD]
    identity = ["-dname", "CN=127.0.0.1, O=kip714 local Kafka", "-ext", "SAN=IP:127.0.0.1,DNS:localhost"]
    key = ["-keyalg", "RSA", "-keysize", "2048", "-validity", "7", "-keypass", KEYSTORE_PASSWORD]
    _run([str(keytool), "-genkeypair", "-alias", _ALIAS, *identity, *key, *store])
    _run([str(keytool), "-exportcert", "-rfc", "-alias", _ALIAS, "-file", str(ca_location(keystore)), *store])
    return keystore


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise LocalKafkaError(f"keytool {command[1]} failed: {detail[-1] if detail else done.returncode}")
