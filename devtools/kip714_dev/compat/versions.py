"""What the matrix covers: one broker per Kafka line, one client per library minor version."""

from __future__ import annotations

from typing import Final

BROKERS: Final = ("3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")
"""The newest patch release of each Apache Kafka line with KIP-714, oldest first."""

CONFLUENT_KAFKA: Final = (
    "2.5.3",
    "2.6.1",
    "2.7.0",
    "2.8.2",
    "2.9.0",
    "2.10.1",
    "2.11.1",
    "2.12.2",
    "2.13.2",
    "2.14.2",
    "2.15.1",
    "2.16.1",
)
"""confluent-kafka releases, one per librdkafka minor version 2.5 to 2.16: each wheel bundles the
librdkafka of its own minor version (the runner reports the exact one, ``confluent_kafka.libversion()``)."""

JAVA_CLIENTS: Final = BROKERS
"""org.apache.kafka:kafka-clients releases: the same lines as the brokers."""

QUICK_BROKERS: Final = (BROKERS[0], BROKERS[-1])
QUICK_CONFLUENT_KAFKA: Final = ("2.5.3",)
QUICK_JAVA_CLIENTS: Final = ()
"""The CI subset: the oldest and newest broker, the oldest librdkafka with KIP-714."""

TOO_LARGE_FROM: Final = (4, 3, 1)
"""Kafka caps the decompressed push size from this release (earlier ones check the compressed size only)."""
