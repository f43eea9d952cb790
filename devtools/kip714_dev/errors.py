"""The development tooling's own error, a product error like any other (one line, exit 2)."""

from __future__ import annotations

from airflow_provider_kip714.exceptions import Kip714Error


class LocalKafkaError(Kip714Error):
    """A local stand-in (Kafka, S3, Spark) could not be set up, started or stopped."""
