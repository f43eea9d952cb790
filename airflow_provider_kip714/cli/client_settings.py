"""``--command-config``: a Java .properties file of client settings, read alike by every command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_provider_kip714.exceptions import SubscriptionValidationError
from airflow_provider_kip714.subscriptions.kafka_python_config import (
    java_client_properties_to_extra,
    read_java_properties,
)


def command_config_extra(path: Path) -> dict[str, Any]:
    """The file's settings as librdkafka-style connection extra; one line naming the flag if unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SubscriptionValidationError(
            "--command-config", "must be a UTF-8 Java .properties file", str(path)
        ) from None
    except OSError as err:
        raise SubscriptionValidationError(
            "--command-config", f"cannot read the file: {err.strerror}", str(path)
        ) from None
    return java_client_properties_to_extra(read_java_properties(text))
