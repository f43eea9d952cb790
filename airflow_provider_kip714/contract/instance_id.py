"""Client instance ids: Kafka's ``Uuid.toString()`` form (22-char URL-safe base64) and the 36-char hex form.

The broker, the topic key and the ``client_instance_id`` match selector all use the base64 form;
people and the KIP's examples use hex. Accept either, emit base64 for anything sent to Kafka.
"""

from __future__ import annotations

import base64
import re
import uuid

_BASE64_FORM = re.compile(r"^[A-Za-z0-9_-]{22}$")


def to_kafka_form(instance_id: str) -> str:
    """Return the broker's base64 text for a hex or base64 instance id."""
    text = instance_id.strip()
    if _BASE64_FORM.match(text):
        return text
    try:
        raw = uuid.UUID(text).bytes
    except ValueError as err:
        raise ValueError(
            f"client instance id {instance_id!r} is neither 22-char URL-safe base64 nor a UUID"
        ) from err
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def to_hex_form(instance_id: str) -> str:
    """Return the 36-char hex form for a hex or base64 instance id."""
    text = instance_id.strip()
    if _BASE64_FORM.match(text):
        return str(uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")))
    return str(uuid.UUID(text))
