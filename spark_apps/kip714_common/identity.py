"""Who a client is, in the words the analytics tables use: one home for the provider and the Spark apps.

Pure Python (no pyspark): the anomalies app writes these encodings, the report and the UI page read them
back, and the provider imports this module as ``spark_apps.kip714_common.identity``.

- ``client_group`` of a **static rule** is ``*`` or ``selector~regex`` pairs joined by ``,``
  (``static_client_group`` / ``static_client_match``);
- ``client_group`` of an **own baseline** is the client's group-by values joined by ``|``
  (``baseline_client_group``; the Spark twin is ``baselines.client_group_column``);
- ``peer_group`` of a **peer baseline** is ``group_id=...``, ``client_id~...``, ``software=...`` or
  ``principal=...`` (``peer_group_of``; the Spark twin is ``baselines.peer_group_column``).

The identity columns themselves are ``landing_contract.CLIENT_IDENTITY_COLUMNS``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from .selectors import RULE_SELECTORS

DEFAULT_CLIENT_GROUP_BY: Final[tuple[str, ...]] = ("client_software_name", "client_id")
"""The columns an own baseline is learned per (the anomalies app's ``--group-by`` default)."""
GROUP_SEPARATOR: Final = "|"
"""Joins the group-by values of a baseline's ``client_group``."""
ALL_CLIENTS: Final = "*"
"""A static rule's ``client_group`` when its ``match`` is empty."""
CLIENT_ID_NUMBER: Final = r"[-_.]?[0-9]+$"
"""What ``client_id_pattern`` peers strip from a client id: ``orders-7`` and ``orders-12`` are peers."""

_STATIC_SPLIT: Final = re.compile(r",(?=(?:{})~)".format("|".join(RULE_SELECTORS)))
_CLIENT_ID_NUMBER: Final = re.compile(CLIENT_ID_NUMBER)


def static_client_group(match: Mapping[str, str]) -> str:
    """A static rule's ``match`` as its thresholds row's ``client_group`` (sorted, so stable)."""
    return ",".join(f"{selector}~{pattern}" for selector, pattern in sorted(match.items())) or ALL_CLIENTS


def static_client_match(client_group: str) -> dict[str, str]:
    """The ``{selector: regex}`` a static rule's ``client_group`` encodes (empty for every client).

    A regex may itself hold ``,``: parts are split only before a known ``selector~``.
    """
    if not client_group or client_group == ALL_CLIENTS:
        return {}
    match: dict[str, str] = {}
    for part in _STATIC_SPLIT.split(client_group):
        selector, _, pattern = part.partition("~")
        match[selector] = pattern
    return match


def baseline_client_group(identity: Mapping[str, object], group_by: Sequence[str]) -> str:
    """The ``client_group`` an own baseline of this client carries (missing values count as empty)."""
    return GROUP_SEPARATOR.join(
        "" if identity.get(column) is None else str(identity[column]) for column in group_by
    )


def peer_group_of(
    kind: str, identity: Mapping[str, object], resource_attributes: Mapping[str, str]
) -> str | None:
    """The peer group label a client belongs to for ``kind``, or None (as ``baselines.peer_group_column``)."""

    def labelled(label: str, value: object) -> str | None:
        return f"{label}{value}" if value not in (None, "") else None

    if kind == "group_id":
        return labelled("group_id=", resource_attributes.get("group_id"))
    if kind == "client_id_pattern":
        client_id = identity.get("client_id")
        return labelled("client_id~", _CLIENT_ID_NUMBER.sub("", str(client_id)) if client_id else None)
    if kind == "software":
        name = identity.get("client_software_name")
        version = identity.get("client_software_version")
        return labelled("software=", " ".join(str(v) for v in (name, version) if v) if name else None)
    if kind == "principal":
        return labelled("principal=", identity.get("principal"))
    return None


def peer_kind(peer_group: str) -> str | None:
    """Which ``peer_group_of`` kind a peer group label was made by."""
    for prefix, kind in (
        ("group_id=", "group_id"),
        ("client_id~", "client_id_pattern"),
        ("software=", "software"),
        ("principal=", "principal"),
    ):
        if peer_group.startswith(prefix):
            return kind
    return None
