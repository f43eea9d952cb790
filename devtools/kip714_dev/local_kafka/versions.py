"""Which Apache Kafka versions the local cluster supports, and what differs between them.

Kafka 3.x logs through reload4j (log4j 1 config); 4.x through log4j2. KIP-1217's exporter API
(4.2+) decides which class of the broker plugin to load. A few releases miss an artifact on
Maven Central; those gaps are filled with the nearest published release of the same module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from kip714_dev.errors import LocalKafkaError

DEFAULT_KAFKA_VERSION: Final = "4.4.0"
MINIMUM_KAFKA_VERSION: Final = (3, 7, 0)

_VERSION_PATTERN: Final = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")

# kafka_2.13:4.4.0 depends on org.apache.kafka:kafka-tools-api:4.4.0, which Maven Central does not
# hold. The module only carries console-tool decoder interfaces, unchanged since 4.0; the broker
# never loads them while serving, so the previous release is a safe stand-in.
MISSING_ARTIFACT_SUBSTITUTES: Final[dict[str, dict[str, str]]] = {
    "4.4.0": {"org.apache.kafka:kafka-tools-api": "4.3.1"},
}

LOG4J2_VERSION: Final = "2.25.5"
RELOAD4J_VERSION: Final = "1.2.25"
SLF4J_1_VERSION: Final = "1.7.36"

PLUGIN_CLASS_EXPORTER: Final = "io.kip714.broker.ClientTelemetryTopicExporterReporter"
PLUGIN_CLASS_LEGACY: Final = "io.kip714.broker.ClientTelemetryTopicReporter"


class LoggingBackend(StrEnum):
    """The logging implementation a Kafka version is shipped with."""

    LOG4J2 = "log4j2"
    RELOAD4J = "reload4j"


@dataclass(frozen=True, order=True)
class KafkaVersion:
    """A parsed ``major.minor.patch`` Apache Kafka release."""

    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> KafkaVersion:
        """Parse and check a version given by a user; only KRaft releases with KIP-714 (3.7+) qualify."""
        match = _VERSION_PATTERN.match(text.strip())
        if match is None:
            raise LocalKafkaError(f"--kafka-version: must look like 4.4.0 (major.minor.patch), got {text!r}")
        version = cls(*(int(part) for part in match.groups()))
        if (version.major, version.minor, version.patch) < MINIMUM_KAFKA_VERSION:
            raise LocalKafkaError(f"--kafka-version: KIP-714 needs Apache Kafka 3.7.0 or newer, got {text!r}")
        return version

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def logging_backend(self) -> LoggingBackend:
        return LoggingBackend.LOG4J2 if self.major >= 4 else LoggingBackend.RELOAD4J

    @property
    def plugin_class(self) -> str:
        """The broker plugin class for this version: the KIP-1217 exporter from 4.2 on."""
        return PLUGIN_CLASS_EXPORTER if (self.major, self.minor) >= (4, 2) else PLUGIN_CLASS_LEGACY

    @property
    def artifact_substitutes(self) -> dict[str, str]:
        return dict(MISSING_ARTIFACT_SUBSTITUTES.get(str(self), {}))
