"""What the demo prints: which clients pushed, and the anomalies found, with who and where."""

from __future__ import annotations

import uuid
from datetime import datetime

from confluent_kafka import Consumer, TopicPartition

from airflow_provider_kip714.analytics.tables import read_table
from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC, Header, RecordType
from airflow_provider_kip714.storage.data_root import RunArea


def telemetry_seen(bootstrap: str, since: datetime, topic: str = DEFAULT_TELEMETRY_TOPIC) -> set[str]:
    """Client ids with at least one push on the topic since ``since`` (headers only, no decoding)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kip714-demo-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.metrics.push": False,
        }
    )
    seen: set[str] = set()
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return seen
        starts = consumer.offsets_for_times(
            [TopicPartition(topic, p, int(since.timestamp() * 1000)) for p in metadata.partitions], timeout=10
        )
        wanted = [tp for tp in starts if tp.offset >= 0]
        if not wanted:
            return seen
        ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in wanted}
        consumer.assign(wanted)
        remaining = {tp.partition for tp in wanted if tp.offset < ends[tp.partition]}
        while remaining:
            messages = consumer.consume(500, timeout=2)
            if not messages:
                break
            for message in messages:
                if message.error():
                    continue
                headers = {k: (v or b"").decode() for k, v in message.headers() or []}
                if headers.get(Header.TYPE) == RecordType.CLIENT:
                    seen.add(headers.get(Header.CLIENT_ID, ""))
                if message.offset() + 1 >= ends[message.partition()]:
                    remaining.discard(message.partition())
    finally:
        consumer.close()
    return seen


def anomaly_lines(area: RunArea) -> list[str]:
    """One readable line per anomaly, most severe and longest first."""
    rows = sorted(
        read_table(area, "anomalies").to_dict("records"),
        key=lambda r: (r["severity"] != "critical", -_seconds(r["duration_seconds"])),
    )
    return [_anomaly_line(row) for row in rows]


def _seconds(value: object) -> float:
    """A duration from a pandas record: null (None or NaN) counts as 0."""
    return float(value) if isinstance(value, int | float) and value == value else 0.0


def _text(value: object) -> str:
    """A label from a pandas record (client-controlled: shown ``printable``); null and empty read as '?'."""
    return "?" if value is None or value != value or value == "" else printable(value)


def _anomaly_line(row: dict[str, object]) -> str:
    software = f"{_text(row['client_software_name'])} {_text(row['client_software_version'])}"
    where = f"{software}, {_text(row['client_source_address'])}, {_text(row['principal'])}"
    return f"{row['severity']:<8} {_text(row['client_id'])} ({where}): {row['description']}"


def silent_lines(area: RunArea) -> list[str]:
    """One line per silent client (or broker with unseen instances), with when it went silent and why."""
    from airflow_provider_kip714.report.fleet_health import delivery_rows

    silent, _ = delivery_rows(read_table(area, "delivery"))
    lines = []
    for row in silent.to_dict("records"):
        since = row["silent_since"]
        when = since.strftime("%H:%M:%S") if hasattr(since, "strftime") else "?"
        if _text(row.get("client_instance_id")) != "?":
            who = f"{_text(row['client_id'])} ({_text(row['client_software_name'])})"
        else:
            who = f"{int(row['unseen_instances'] or 0)} instance(s) on broker {_text(row['broker_node_id'])}"
        lines.append(f"silent since {when} UTC: {who}: {_text(row['reason'])}")
    return lines


def convergence_lines(area: RunArea) -> list[str]:
    """One line per followed window: matched and converged clients, 50/90/100 % times."""
    from airflow_provider_kip714.report.fleet_health import convergence_rows

    windows, _ = convergence_rows(read_table(area, "convergence"))

    def seconds(value: object) -> str:
        return "not yet" if value is None or value != value else f"{float(value):.1f} s"  # type: ignore[arg-type]

    return [
        f"{row['subscription_name']}: {row['converged_clients']}/{row['matched_clients']} clients; "
        f"50 % {seconds(row['p50_seconds'])}, 90 % {seconds(row['p90_seconds'])}, "
        f"100 % {seconds(row['p100_seconds'])}"
        for row in windows.to_dict("records")
    ]


def print_findings(zone_name: str, area: RunArea) -> None:
    """A zone's anomalies, and its silent clients and convergence where those steps ran."""
    lines = anomaly_lines(area)
    print(f"  Anomalies in the {zone_name} ({len(lines)}):")
    for line in lines[:12] or ["(none)"]:
        print(f"    {line}")
    for title, found in (("Silent clients", silent_lines(area)), ("Convergence", convergence_lines(area))):
        if found:  # delivery.py / convergence.py ran for this zone
            print(f"  {title} in the {zone_name} ({len(found)}):")
            for line in found[:12]:
                print(f"    {line}")
