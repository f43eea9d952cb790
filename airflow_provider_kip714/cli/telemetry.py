"""``kip714 telemetry land|tail``: land the telemetry topic as Parquet, or watch the latest values live.

``land`` is the same exactly-once landing the Airflow operator runs; rerun it after any crash.
``tail`` prints, every few seconds, the latest value per client and metric seen since it started.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from airflow_provider_kip714.cli import output
from airflow_provider_kip714.cli.arguments import ascii_int
from airflow_provider_kip714.cli.client_settings import command_config_extra
from airflow_provider_kip714.contract.client_text import printable
from airflow_provider_kip714.contract.topic import DEFAULT_TELEMETRY_TOPIC
from airflow_provider_kip714.decoding.decoder import VALUE_FORMATS
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.storage.data_root import checked_location
from airflow_provider_kip714.subscriptions.model import prefix_matches
from airflow_provider_kip714.telemetry import topic_consumer
from airflow_provider_kip714.telemetry.landing import (
    DEFAULT_CHUNK_INTERVAL_S,
    DEFAULT_CHUNK_RECORDS,
    MAX_METADATA_TIMEOUT_S,
    check_count,
    land_topic,
)

_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}", re.ASCII)


def _connection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection (one of --bootstrap-server or --conn-id)")
    group.add_argument("--bootstrap-server", help="host:port[,host:port] of the Kafka cluster")
    group.add_argument("--command-config", type=Path, help="Java .properties file with client settings")
    group.add_argument("--conn-id", help="Airflow connection id whose extra is the librdkafka config")
    parser.add_argument(
        "--topic", type=_topic, default=DEFAULT_TELEMETRY_TOPIC, help="telemetry topic (default %(default)s)"
    )
    parser.add_argument(
        "--value-format",
        choices=VALUE_FORMATS,
        default="otlp_proto",
        help="record value encoding (default %(default)s; auto = JSON when it starts with '{')",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("telemetry", help="land or watch the KIP-714 telemetry topic")
    commands = parser.add_subparsers(dest="telemetry_command", required=True, metavar="ACTION")
    _register_land(commands)
    _register_tail(commands)


def _register_land(commands: argparse._SubParsersAction) -> None:
    land = commands.add_parser("land", help="land the topic into a Parquet landing zone, exactly once")
    _connection_options(land)
    land.add_argument(
        "--out",
        required=True,
        help="landing zone (one per topic): a directory or an object-store URL, s3://<conn_id>@bucket/prefix",
    )
    land.add_argument("--max-records", type=ascii_int, help="stop after landing this many records")
    land.add_argument("--timeout-s", type=float, help="stop after this many seconds")
    land.add_argument(
        "--follow", action="store_true", help="keep landing new records (needs --max-records or --timeout-s)"
    )
    land.add_argument(
        "--chunk-records", type=ascii_int, default=DEFAULT_CHUNK_RECORDS, help="records per chunk"
    )
    land.add_argument(
        "--chunk-interval-s",
        type=float,
        default=DEFAULT_CHUNK_INTERVAL_S,
        help="cut a chunk at least this often",
    )
    land.add_argument(
        "--workers",
        type=ascii_int,
        help="staging threads that decode and write Parquet (default: 2; 1 = none)",
    )
    land.add_argument(
        "--since",
        type=_utc_time,
        help="start partitions with nothing landed yet at the first record at or after this ISO-8601 "
        "time (e.g. 2026-11-22T10:00:00Z) instead of the earliest retained offset",
    )
    land.add_argument(
        "--until",
        type=_utc_time,
        help="end every partition just before its first record at or after this ISO-8601 time "
        "(waits for it if it is in the future)",
    )
    land.add_argument(
        "--metadata-timeout-s",
        type=float,
        default=topic_consumer.DEFAULT_METADATA_TIMEOUT_S,
        help="fail when no broker answers within this many seconds (default %(default)s)",
    )
    land.add_argument(
        "--accept-recreated-topic",
        action="store_true",
        help="the topic was deleted and recreated: keep the landed data under _generations/ and land the "
        "new topic from its start",
    )
    land.add_argument("--no-fsync", action="store_true", help="skip fsync (faster; unsafe on power loss)")
    land.add_argument("--json", action="store_true", help="print the result as JSON")
    land.set_defaults(func=_run_land)


def _register_tail(commands: argparse._SubParsersAction) -> None:
    tail = commands.add_parser("tail", help="live view of the latest value per client and metric")
    _connection_options(tail)
    tail.add_argument("--from-beginning", action="store_true", help="start at the earliest record")
    tail.add_argument("--metric", action="append", help="only metrics starting with this prefix (repeatable)")
    tail.add_argument("--client-id", help="only clients whose client_id matches this regex (whole value)")
    tail.add_argument("--refresh-s", type=float, default=5.0, help="seconds between screens")
    tail.add_argument("--duration-s", type=float, help="stop after this many seconds (default: until Ctrl-C)")
    tail.set_defaults(func=_run_tail)


def client_config_from_args(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str | None]:
    """Return (explicit librdkafka config, None) or (None, Airflow connection id)."""
    if args.conn_id and (args.bootstrap_server or args.command_config):
        raise Kip714Error("--conn-id: cannot be combined with --bootstrap-server or --command-config")
    if args.conn_id:
        return None, args.conn_id
    if not args.bootstrap_server:
        raise Kip714Error("--bootstrap-server: required unless --conn-id is given")
    config: dict[str, Any] = {"bootstrap.servers": args.bootstrap_server}
    if args.command_config:
        config.update(command_config_extra(args.command_config))
    return config, None


def _utc_time(text: str) -> datetime:
    """An ISO-8601 time for ``--since``; without an offset it is read as UTC."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO-8601 time: {text!r} (e.g. 2026-11-22T10:00:00Z)"
        ) from None
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    if moment.timestamp() < 0:  # Kafka's record timestamps start at the Unix epoch
        raise argparse.ArgumentTypeError(f"must be at or after 1970-01-01T00:00:00Z (got {text!r})")
    return moment


def _topic(text: str) -> str:
    """Kafka's topic-name rule (1..249 of letters, digits, '.', '_', '-'; not '.' or '..')."""
    if not _TOPIC.fullmatch(text) or text in (".", ".."):
        raise argparse.ArgumentTypeError(
            f"must be a Kafka topic name: 1 to 249 letters, digits, '.', '_' or '-' (got {text!r})"
        )
    return text


def _hook(args: argparse.Namespace):  # -> TelemetryTopicHook (imported lazily: Airflow is slow to import)
    from airflow_provider_kip714.hooks.telemetry_topic import TelemetryTopicHook

    config, conn_id = client_config_from_args(args)
    if conn_id is not None:
        return TelemetryTopicHook(kafka_config_id=conn_id, topic=args.topic, value_format=args.value_format)
    return TelemetryTopicHook(config=config, topic=args.topic, value_format=args.value_format)


def _quiet_client_logs(args: argparse.Namespace) -> None:
    """librdkafka's own log lines (a reconnect every few ms) and Airflow's start-up chatter only with
    -v: errors come as one line."""
    if not getattr(args, "verbose", False):
        topic_consumer.LIBRDKAFKA_LOG.setLevel(logging.CRITICAL)
        logging.getLogger("airflow").setLevel(logging.WARNING)


def _check_seconds(args: argparse.Namespace, *flags: str) -> None:
    for flag in flags:
        topic_consumer.check_duration(flag, getattr(args, flag.lstrip("-").replace("-", "_")))


def _run_land(args: argparse.Namespace) -> int:
    _check_seconds(args, "--timeout-s", "--chunk-interval-s")
    topic_consumer.check_duration(
        "--metadata-timeout-s", args.metadata_timeout_s, maximum=MAX_METADATA_TIMEOUT_S
    )
    for flag in ("--max-records", "--chunk-records", "--workers"):
        option = flag.lstrip("-").replace("-", "_")
        check_count(flag, option, getattr(args, option))
    _quiet_client_logs(args)
    # before any connection: a bad place loses nothing
    out = checked_location(args.out, "--out", writing=True)
    if args.since is not None and args.until is not None and args.since >= args.until:
        raise Kip714Error(
            f"--since: must be before --until ({args.since.isoformat()} >= {args.until.isoformat()})"
        )
    config, conn_id = client_config_from_args(args)
    if conn_id is not None:
        config = _hook(args).client_config()
    assert config is not None
    result = land_topic(
        config,
        args.topic,
        out,
        max_records=args.max_records,
        timeout_s=args.timeout_s,
        follow=args.follow,
        value_format=args.value_format,
        chunk_records=args.chunk_records,
        chunk_interval_s=args.chunk_interval_s,
        workers=args.workers,
        fsync=not args.no_fsync,
        since=args.since,
        until=args.until,
        metadata_timeout_s=args.metadata_timeout_s,
        accept_new_topic_id=args.accept_recreated_topic,
    )
    if args.json:
        output.result(json.dumps(result.as_dict(), indent=2))
    else:
        output.result(
            f"landed {result.records} records ({result.points} datapoints, {result.quarantined} quarantined) "
            f"from {args.topic} into {args.out} in {result.elapsed_s:.1f}s: {result.stop_reason}"
        )
    return 0


def _format_value(row: dict[str, Any]) -> str:
    if row.get("value_int") is not None:
        return str(row["value_int"])
    value = row.get("value")
    if value is None:
        return "-"
    text = f"{value:.6g}"
    if row.get("count") is not None:
        text += f" (mean of {row['count']})"
    return text


def render_latest(latest: dict[tuple[str, str], dict[str, Any]], now: datetime) -> str:
    """A readable table of the latest value per (client, metric + attributes); client-controlled text
    is shown ``printable`` (a client id holding an escape sequence must not drive the terminal)."""
    lines = [f"kip714 telemetry tail - {now:%Y-%m-%d %H:%M:%S} UTC - {len(latest)} series"]
    by_client: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for (client, series), row in latest.items():
        by_client.setdefault(client, []).append((series, row))
    for client in sorted(by_client):
        first = by_client[client][0][1]
        software = f"{first.get('client_software_name') or '?'} {first.get('client_software_version') or ''}"
        instance = first.get("client_instance_id") or "-"
        shown = f"{printable(client)}  [{printable(software.strip())}]  instance {printable(instance)}"
        lines.append(f"\n{shown}")
        for series, row in sorted(by_client[client]):
            kind = row["metric_type"] + (f"/{row['temporality']}" if row.get("temporality") else "")
            lines.append(f"  {printable(series):<70} {_format_value(row):>20}  {printable(kind)}")
    return "\n".join(lines)


def _series_name(row: dict[str, Any]) -> str:
    attributes = row.get("attributes") or []
    labels = ",".join(f"{k}={v}" for k, v in sorted(attributes))
    return row["metric_name"] + (f"{{{labels}}}" if labels else "")


def _wanted(row: dict[str, Any], prefixes: Iterable[str] | None, client_pattern: Any) -> bool:
    if prefixes and not prefix_matches(row["metric_name"], prefixes):
        return False
    return client_pattern is None or client_pattern.fullmatch(row.get("client_id") or "") is not None


def _client_pattern(text: str | None) -> Any:
    """``--client-id`` compiled by a linear-time engine (client ids are client-controlled)."""
    if not text:
        return None
    from airflow_provider_kip714.contract.linear_regex import compile_linear

    try:
        return compile_linear(text)
    except ValueError as err:
        raise Kip714Error(f"--client-id: not a valid regex for RE2 ({err})") from None


def _run_tail(args: argparse.Namespace) -> int:
    _check_seconds(args, "--refresh-s", "--duration-s")
    client_pattern = _client_pattern(args.client_id)
    _quiet_client_logs(args)
    hook = _hook(args)
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    started = time.monotonic()
    next_screen = started + args.refresh_s
    records = hook.iter_records(
        "earliest" if args.from_beginning else "latest", timeout_s=args.duration_s, stop_at_end=False
    )
    try:
        for decoded in records:
            for row in decoded.rows:
                if not _wanted(row, args.metric, client_pattern):
                    continue
                client = row.get("client_id") or (
                    f"broker-{row['node_id']}" if row["record_type"] == "broker" else "?"
                )
                latest[(client, _series_name(row))] = row
            if time.monotonic() >= next_screen:
                output.result(render_latest(latest, datetime.now(tz=UTC)), flush=True)
                next_screen = time.monotonic() + args.refresh_s
    except KeyboardInterrupt:
        pass
    finally:
        records.close()
    output.result(render_latest(latest, datetime.now(tz=UTC)), flush=True)
    return 0
