"""Which clients: the KIP-714 selectors, their headers and columns, parsing and whole-value matching.

The one home of this concept. A ``match`` is a tuple of ``MatchSelector`` (``selector=regex``; all
must match, each regex the whole value). The names are declared in
``spark_apps/kip714_common/selectors.py`` so the Spark apps (which cannot import the provider) read
the same lists. Everywhere in the provider the parameter that carries selectors is called ``match``.

Regex validity is the broker's (Java regex): the local check only refuses what both Kafka and this
product refuse (empty, commas, edge whitespace); ``ClientMetricsHook.validate`` asks the broker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from airflow_provider_kip714.contract.instance_id import to_kafka_form
from airflow_provider_kip714.contract.linear_regex import compile_linear
from airflow_provider_kip714.contract.topic import Header
from airflow_provider_kip714.exceptions import SubscriptionValidationError
from spark_apps.kip714_common.selectors import RULE_SELECTORS, SELECTORS, regex_problem, whole_value_pattern

__all__ = [
    "RULE_SELECTORS",
    "SELECTORS",
    "SELECTOR_HEADERS",
    "MatchInput",
    "MatchSelector",
    "compile_pattern",
    "header_identity",
    "match_map",
    "matcher",
    "parse_match",
    "regex_problem",
    "whole_value_pattern",
]

SELECTOR_HEADERS: Final[Mapping[str, Header]] = {
    "client_instance_id": Header.CLIENT_INSTANCE_ID,
    "client_id": Header.CLIENT_ID,
    "client_software_name": Header.CLIENT_SOFTWARE_NAME,
    "client_software_version": Header.CLIENT_SOFTWARE_VERSION,
    "client_source_address": Header.CLIENT_SOURCE_ADDRESS,
    "client_source_port": Header.CLIENT_SOURCE_PORT,
    "principal": Header.PRINCIPAL,
}
"""Selector (or rule selector) -> the ``kip714.*`` header the broker plugin writes its value into."""

_UUID_HEX = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")

MatchInput = str | Iterable[str] | Mapping[str, str] | None
"""What callers may pass as ``match``: ``"a=x,b=y"``, ``["a=x", "b=y"]`` or ``{"a": "x"}``."""


@dataclass(frozen=True)
class MatchSelector:
    """One ``selector=regex`` entry; the regex must match the client's whole value."""

    selector: str
    pattern: str

    def __post_init__(self) -> None:
        if self.selector not in SELECTORS:
            raise SubscriptionValidationError(
                "match", f"unknown selector; use one of {', '.join(SELECTORS)}", self.selector
            )
        if not self.pattern:
            raise SubscriptionValidationError(
                "match", f"{self.selector} needs a non-empty regex", self.pattern
            )
        if "," in self.pattern:
            raise SubscriptionValidationError(
                "match", "a regex cannot contain ',' (Kafka splits the match list on commas)", self.pattern
            )
        if (problem := control_characters_problem(self.pattern)) is not None:
            raise SubscriptionValidationError("match", f"a {self.selector} regex {problem}", self.pattern)
        if self.pattern != self.pattern.strip():
            raise SubscriptionValidationError(
                "match",
                "a regex cannot start or end with whitespace (Kafka trims list entries)",
                self.pattern,
            )
        problem = regex_problem(self.pattern)
        if problem is not None:
            raise SubscriptionValidationError("match", f"{self.selector} regex {problem}", self.pattern)

    @classmethod
    def parse(cls, entry: str) -> MatchSelector:
        """Parse ``selector=regex`` (split on the first ``=``); hex instance ids become Kafka's base64."""
        if not isinstance(entry, str):
            raise SubscriptionValidationError("match", "each entry must be a selector=regex string", entry)
        selector, sep, pattern = entry.strip().partition("=")
        if not sep:
            raise SubscriptionValidationError("match", "each entry must be selector=regex", entry)
        selector = selector.strip()
        pattern = pattern.strip()
        if selector == "client_instance_id" and _UUID_HEX.match(pattern):
            pattern = to_kafka_form(pattern)
        return cls(selector=selector, pattern=pattern)

    def render(self) -> str:
        return f"{self.selector}={self.pattern}"


def control_characters_problem(pattern: str) -> str | None:
    """Why a regex cannot go to the broker as typed (a newline, NUL, escape or non-UTF-8 character is
    invisible in every listing and a surrogate cannot be encoded), or None."""
    if all(ch.isprintable() or ch == " " for ch in pattern):
        return None
    return "cannot contain control characters (write \\n or \\t as regex escapes)"


def _entries(value: str | Iterable[str]) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")] if value.strip() else []
    return [part if not isinstance(part, str) else part.strip() for part in value]


def parse_match(match: MatchInput) -> tuple[MatchSelector, ...]:
    """Selectors from any ``MatchInput``; each selector at most once (all must match)."""
    if match is None:
        return ()
    if isinstance(match, Mapping):
        parsed = tuple(MatchSelector.parse(f"{key}={pattern}") for key, pattern in match.items())
    else:
        parsed = tuple(MatchSelector.parse(entry) for entry in _entries(match))
    seen: set[str] = set()
    for selector in parsed:
        if selector.selector in seen:
            raise SubscriptionValidationError(
                "match", "each selector may appear once (all selectors must match)", selector.selector
            )
        seen.add(selector.selector)
    return parsed


def match_map(match: MatchInput | Iterable[MatchSelector]) -> dict[str, str]:
    """``match`` as ``{selector: regex}`` (what the report and the rules filter clients by)."""
    if match is None:
        return {}
    if not isinstance(match, str | Mapping):
        match = [m.render() if isinstance(m, MatchSelector) else m for m in match]
    return {s.selector: s.pattern for s in parse_match(match)}


def compile_pattern(pattern: str) -> Any:
    """The local engine for whole-value matching of client-controlled values: RE2, linear in the
    input (``linear_regex``); raises ``ValueError`` for a pattern RE2 refuses."""
    return compile_linear(pattern)


def _linear_pattern(selector: str, pattern: str) -> Any:
    """``compile_pattern``, refused in one line naming the selector (still a ``ValueError``)."""
    try:
        return compile_pattern(pattern)
    except ValueError as err:
        raise SubscriptionValidationError(
            "match",
            f"{selector} regex {pattern!r} uses a construct the linear-time matcher does not support "
            f"(backreference, lookaround, possessive quantifier): {err}",
        ) from None


def matcher(match: Mapping[str, str]) -> Callable[[Mapping[str, object]], bool]:
    """A predicate over ``{selector: value}`` identities: every regex fully matches its value.

    The one home of client matching (the report's tables; the arrival trigger's headers through
    ``header_identity``). A missing or null value is matched as the empty string, as the broker does
    for unset labels. A regex RE2 refuses raises ``SubscriptionValidationError`` (a ``ValueError``).
    """
    compiled = [(selector, _linear_pattern(selector, pattern)) for selector, pattern in match.items()]

    def matches(identity: Mapping[str, object]) -> bool:
        for selector, pattern in compiled:
            value = identity.get(selector)
            if pattern.fullmatch("" if value is None else str(value)) is None:
                return False
        return True

    return matches


def header_identity(headers: Mapping[str, str | None]) -> dict[str, str | None]:
    """A record's ``kip714.*`` headers (as text) as ``{selector: value}``, what ``matcher`` reads."""
    return {selector: headers.get(header) for selector, header in SELECTOR_HEADERS.items()}
