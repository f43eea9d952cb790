"""``LandClientTelemetryOperator``: land the telemetry topic into Parquet and announce it as an Asset.

Each run lands what arrived since the previous run (bounded by the end offsets read at its start),
exactly once, so it can be scheduled, retried or rerun after a crash freely. Downstream DAGs
(rollups, anomalies) schedule on the Asset of the landed datapoints.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import Asset, BaseOperator

from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from airflow_provider_kip714.decoding.decoder import ValueFormat
from airflow_provider_kip714.hooks.base import DEFAULT_CONN_ID
from airflow_provider_kip714.telemetry import topic_consumer
from airflow_provider_kip714.telemetry.landing import DEFAULT_CHUNK_INTERVAL_S, DEFAULT_CHUNK_RECORDS
from airflow_provider_kip714.telemetry.landing_zone import datapoints_uri


def datapoints_asset(out_dir: str | Path, topic: str = DEFAULT_TELEMETRY_TOPIC) -> Asset:
    """The Asset of a landing zone's ``datapoints/`` (schedule rollups on this)."""
    return Asset(name=f"kip714_datapoints__{topic}", uri=datapoints_uri(out_dir), group="kip714")


class LandClientTelemetryOperator(BaseOperator):
    """Land the telemetry topic into ``out_dir`` (raw/, datapoints/, quarantine/) and emit its Asset.

    :param out_dir: landing zone directory, one per topic (not templated: the Asset is known at parse time).
    :param kafka_config_id: Airflow ``kafka`` connection (librdkafka extra).
    :param topic: the telemetry topic.
    :param max_records: land at most this many records this run.
    :param timeout_s: stop after this many seconds (the landed part stays landed).
    :param value_format: ``otlp_proto`` (default), ``otlp_json`` or ``auto``.
    :param chunk_records: records per chunk (per partition).
    :param workers: staging threads that decode and write Parquet beside the consumer
        (default: up to 2 cores; 1 = everything on the task's thread).
    :param fsync: fsync files before committing them (default on).
    :param accept_new_topic_id: the topic was deleted and recreated: keep the landed generation under
        ``_generations/`` and land the new topic from its start (otherwise the run fails, naming both
        topic ids).
    :param lease_wait_s: wait this long for another landing run on the zone (live mode's) to end.
    """

    template_fields: Sequence[str] = ("kafka_config_id", "topic")
    ui_color = "#e8f4fd"

    def __init__(
        self,
        *,
        out_dir: str | Path,
        kafka_config_id: str = DEFAULT_CONN_ID,
        topic: str = DEFAULT_TELEMETRY_TOPIC,
        max_records: int | None = None,
        timeout_s: float | None = None,
        value_format: ValueFormat = "otlp_proto",
        chunk_records: int = DEFAULT_CHUNK_RECORDS,
        chunk_interval_s: float = DEFAULT_CHUNK_INTERVAL_S,
        workers: int | None = None,
        fsync: bool = True,
        accept_new_topic_id: bool = False,
        lease_wait_s: float = 0.0,
        **kwargs: Any,
    ) -> None:
        topic_consumer.check_duration("timeout_s", timeout_s)
        topic_consumer.check_duration("chunk_interval_s", chunk_interval_s, allow_none=False)
        self.asset = datapoints_asset(out_dir, topic)
        outlets = list(kwargs.pop("outlets", None) or [])
        super().__init__(outlets=[*outlets, self.asset], **kwargs)
        self.out_dir = str(out_dir)
        self.kafka_config_id = kafka_config_id
        self.topic = topic
        self.max_records = max_records
        self.timeout_s = timeout_s
        self.value_format = value_format
        self.chunk_records = chunk_records
        self.chunk_interval_s = chunk_interval_s
        self.workers = workers
        self.fsync = fsync
        self.accept_new_topic_id = accept_new_topic_id
        self.lease_wait_s = lease_wait_s

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook

        hook = TelemetryTopicHook(
            kafka_config_id=self.kafka_config_id, topic=self.topic, value_format=self.value_format
        )
        result = hook.land(
            self.out_dir,
            max_records=self.max_records,
            timeout_s=self.timeout_s,
            chunk_records=self.chunk_records,
            chunk_interval_s=self.chunk_interval_s,
            workers=self.workers,
            fsync=self.fsync,
            accept_new_topic_id=self.accept_new_topic_id,
            lease_wait_s=self.lease_wait_s,
        )
        summary = result.as_dict()
        outlet_events = context.get("outlet_events") if hasattr(context, "get") else None
        if outlet_events is not None:
            outlet_events[self.asset].extra = {
                "records": result.records,
                "points": result.points,
                "quarantined": result.quarantined,
                "partitions": summary["partitions"],
            }
        self.log.info(
            "Landed %d records (%d datapoints, %d quarantined) into %s: %s",
            result.records,
            result.points,
            result.quarantined,
            self.out_dir,
            result.stop_reason,
        )
        return summary
