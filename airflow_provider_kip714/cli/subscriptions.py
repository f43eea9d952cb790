"""``kip714 subscriptions list|describe|add|alter|delete|reap``.

Options mirror Kafka's ``kafka-client-metrics.sh`` (``--bootstrap-server``, ``--command-config``,
``--name``/``--generate-name``, ``--metrics``, ``--interval``, ``--match``) and add ``--window``,
``--block``, ``--json`` and ``--conn-id`` (reuse an Airflow connection). Specs are validated before
any connection is made.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow_provider_kip714.cli.client_settings import command_config_extra
from airflow_provider_kip714.cli.output import result
from airflow_provider_kip714.clock import SystemClock
from airflow_provider_kip714.exceptions import ClientMetricsAdminError, SubscriptionValidationError
from airflow_provider_kip714.settings import CONN_ID_RULE, is_conn_id
from airflow_provider_kip714.subscriptions.admin import ClientMetricsAdmin
from airflow_provider_kip714.subscriptions.duration import parse_window_length
from airflow_provider_kip714.subscriptions.kafka_python_config import (
    to_kafka_python_kwargs,
)
from airflow_provider_kip714.subscriptions.limits import MAX_WINDOW, format_limit
from airflow_provider_kip714.subscriptions.model import (
    Subscription,
    SubscriptionChange,
    validate_name,
)
from airflow_provider_kip714.subscriptions.window_name import (
    creation_problem,
    format_window_name,
    random_suffix,
    slugify_label,
)
from airflow_provider_kip714.troubleshooting.guardrails import check_subscription

DEFAULT_LABEL = "cli"


def _connection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection (one of --bootstrap-server or --conn-id)")
    group.add_argument("--bootstrap-server", help="host:port[,host:port] of the Kafka cluster")
    group.add_argument("--command-config", type=Path, help="Java .properties file with client settings")
    group.add_argument("--conn-id", help="Airflow connection id with librdkafka-style extra")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def _spec_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics", help="comma list of metric-name prefixes ('*' = all)")
    parser.add_argument("--interval", help="push interval in ms (100..3600000)")
    parser.add_argument(
        "--match",
        action="append",
        help="selector=regex (repeatable or comma list); regex matches the whole value",
    )
    parser.add_argument("--block", action="store_true", help="matching clients push no metrics")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("subscriptions", help="manage KIP-714 client-metrics subscriptions")
    commands = parser.add_subparsers(dest="subscriptions_command", required=True, metavar="ACTION")

    listing = commands.add_parser("list", help="list subscription names")
    _connection_options(listing)
    listing.set_defaults(func=_run_list)

    describe = commands.add_parser("describe", help="show one subscription or all")
    _connection_options(describe)
    describe.add_argument("--name", help="subscription name (all when omitted)")
    describe.set_defaults(func=_run_describe)

    add = commands.add_parser("add", help="create a subscription (idempotent)")
    _connection_options(add)
    naming = add.add_mutually_exclusive_group(required=True)
    naming.add_argument("--name", help="subscription name")
    naming.add_argument("--generate-name", action="store_true", help="name it with a random UUID")
    naming.add_argument(
        "--window",
        help=f"time-boxed: expire after this long (30m, 1h30m, 20s; at most {format_limit(MAX_WINDOW)})",
    )
    add.add_argument("--label", default=DEFAULT_LABEL, help="label in a --window name (default: cli)")
    _spec_options(add)
    add.set_defaults(func=_run_add)

    alter = commands.add_parser("alter", help="change a subscription")
    _connection_options(alter)
    alter.add_argument("--name", required=True, help="subscription name")
    _spec_options(alter)
    alter.add_argument("--add-metrics", help="comma list of prefixes to append")
    alter.add_argument("--remove-metrics", help="comma list of prefixes to subtract")
    alter.set_defaults(func=_run_alter)

    delete = commands.add_parser("delete", help="delete a subscription (missing is fine)")
    _connection_options(delete)
    delete.add_argument("--name", required=True, help="subscription name")
    delete.set_defaults(func=_run_delete)

    reap = commands.add_parser("reap", help="delete expired kip714-...-exp<UTC>-... window subscriptions")
    _connection_options(reap)
    reap.add_argument("--dry-run", action="store_true", help="only print what would be deleted")
    reap.set_defaults(func=_run_reap)


def _open_admin(args: argparse.Namespace) -> ClientMetricsAdmin:
    """Build the admin from --bootstrap-server/--command-config or --conn-id; validated, not yet connected."""
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        logging.getLogger("kafka").setLevel(logging.CRITICAL)  # its retries are noise; errors reach us
        logging.getLogger("airflow_provider_kip714").setLevel(logging.WARNING)  # results are printed
    if args.conn_id and (args.bootstrap_server or args.command_config):
        raise SubscriptionValidationError(
            "--conn-id", "use either --conn-id or --bootstrap-server/--command-config"
        )
    if args.conn_id:
        if not is_conn_id(args.conn_id):
            raise SubscriptionValidationError(
                "--conn-id", f"must be an Airflow connection id ({CONN_ID_RULE})", args.conn_id
            )
        if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
            logging.getLogger("airflow").setLevel(logging.WARNING)  # config-loading chatter
        from airflow.sdk.exceptions import AirflowNotFoundException

        from airflow_provider_kip714.hooks.client_metrics import ClientMetricsHook

        try:
            return ClientMetricsHook(kafka_config_id=args.conn_id).admin
        except AirflowNotFoundException:
            raise SubscriptionValidationError(
                "--conn-id", "no such Airflow connection (AIRFLOW_CONN_* or the metadata DB)", args.conn_id
            ) from None
    if args.bootstrap_server is None:
        raise SubscriptionValidationError("--bootstrap-server", "is required (or give --conn-id)")
    extra: dict[str, Any] = {}
    if args.command_config:
        extra.update(command_config_extra(args.command_config))
    extra["bootstrap.servers"] = args.bootstrap_server
    return ClientMetricsAdmin(to_kafka_python_kwargs(extra))


def _emit(args: argparse.Namespace, payload: Any, text: Callable[[], str]) -> None:
    result(json.dumps(payload, indent=2, sort_keys=True) if args.json else text())


def _describe_text(subscription: Subscription) -> str:
    configs = subscription.to_configs()
    lines = [f"Client metrics configs for {subscription.name} are:"]
    lines += [f"  {key}={configs[key]}" for key in sorted(configs)]
    if subscription.expires_at:
        lines.append(f"  (window expires {subscription.expires_at.isoformat()})")
    return "\n".join(lines)


def _joined_match(args: argparse.Namespace) -> str | None:
    return None if args.match is None else ",".join(args.match)


def _run_list(args: argparse.Namespace) -> int:
    with _open_admin(args) as admin:
        names = admin.list_names()
    _emit(args, names, lambda: "\n".join(names))
    return 0


def _checked_name(args: argparse.Namespace) -> None:
    """Refuse a bad --name before connecting (a broker error would be less clear)."""
    if getattr(args, "name", None) is not None:
        try:
            validate_name(args.name)
        except SubscriptionValidationError as err:
            raise SubscriptionValidationError("--name", err.rule, args.name) from None


def _run_describe(args: argparse.Namespace) -> int:
    _checked_name(args)
    with _open_admin(args) as admin:
        if args.name:
            found = admin.describe(args.name)
            if found is None:
                raise ClientMetricsAdminError(f"no subscription named {args.name!r} on {admin.target}")
            subscriptions = [found]
        else:
            subscriptions = admin.describe_all()
    _emit(
        args,
        [subscription.to_json() for subscription in subscriptions],
        lambda: "\n".join(_describe_text(subscription) for subscription in subscriptions),
    )
    return 0


def _new_name(args: argparse.Namespace) -> str:
    if args.name is not None:
        return args.name
    if args.generate_name:
        return str(uuid.uuid4())
    window = parse_window_length(args.window, field="--window")
    return format_window_name(slugify_label(args.label), SystemClock().now() + window, random_suffix())


def _run_add(args: argparse.Namespace) -> int:
    if args.label != DEFAULT_LABEL and not args.window:
        raise SubscriptionValidationError("--label", "only applies with --window")
    subscription = Subscription.from_spec(
        name=_new_name(args),
        metrics=args.metrics,
        interval_ms=args.interval,
        match=_joined_match(args),
        block=args.block,
    )
    problem = creation_problem(subscription.name, SystemClock().now())
    if problem is not None:
        raise SubscriptionValidationError("--name", problem, subscription.name)
    with _open_admin(args) as admin:
        for warning in check_subscription(subscription, admin=admin):
            print(f"warning: {warning.message}", file=sys.stderr)  # stdout stays the result (JSON)
        result = admin.upsert(subscription)
    _emit(
        args,
        {**subscription.to_json(), "outcome": result.outcome.value},
        lambda: f"{result.outcome.value}: {subscription.name}",
    )
    return 0


def _run_alter(args: argparse.Namespace) -> int:
    if args.metrics is not None and (args.add_metrics or args.remove_metrics):
        raise SubscriptionValidationError(
            "--metrics", "replaces the list; do not combine with --add/--remove-metrics"
        )
    if args.block and (args.metrics or args.add_metrics):
        raise SubscriptionValidationError("--block", "a blocking subscription has no metrics")
    # Validate pieces before connecting.
    _checked_name(args)
    match = _joined_match(args)
    change = SubscriptionChange.of(
        args.name,
        add_metrics=args.add_metrics,
        remove_metrics=args.remove_metrics,
        interval_ms=args.interval,
        match=match,
    )
    if args.metrics is not None:
        Subscription.from_spec(name=args.name, metrics=args.metrics)
    with _open_admin(args) as admin:
        current = admin.describe(args.name)
        if current is None:
            raise ClientMetricsAdminError(f"no subscription named {args.name!r} on {admin.target}")
        if args.metrics is not None or args.block:
            wanted = Subscription.from_spec(
                name=args.name,
                metrics=None if args.block else args.metrics,
                interval_ms=args.interval if args.interval is not None else current.interval_ms,
                match=match if match is not None else [selector.render() for selector in current.match],
                block=args.block,
            )
            admin.upsert(wanted)
            result = wanted
        else:
            result = admin.alter(change)
    _emit(args, result.to_json(), lambda: _describe_text(result))
    return 0


def _run_delete(args: argparse.Namespace) -> int:
    _checked_name(args)
    with _open_admin(args) as admin:
        deleted = admin.delete(args.name)
    _emit(
        args,
        {"name": args.name, "deleted": deleted},
        lambda: f"deleted: {args.name}" if deleted else f"not found (nothing to delete): {args.name}",
    )
    return 0


def _run_reap(args: argparse.Namespace) -> int:
    with _open_admin(args) as admin:
        names = admin.reap(dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    _emit(
        args,
        {"dry_run": args.dry_run, "names": names},
        lambda: "\n".join(f"{verb}: {name}" for name in names) or "nothing expired",
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    from airflow_provider_kip714.cli.main import main

    sys.exit(main(["subscriptions", *sys.argv[1:]]))
