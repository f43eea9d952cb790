"""Every error this provider raises on purpose, in one place.

Callers catch ``Kip714Error`` to tell "the product refused / the cluster said no" from bugs.
"""

from __future__ import annotations


class Kip714Error(Exception):
    """Base class of the provider's own errors."""


MAX_SHOWN_VALUE = 200
"""Characters of a refused value quoted in an error (a 1 MB value is named, not echoed)."""


def _bounded_repr(value: object) -> str:
    shown = repr(value)
    if len(shown) <= MAX_SHOWN_VALUE:
        return shown
    return f"{shown[: MAX_SHOWN_VALUE - 1]}… ({len(shown)} characters)"


class SubscriptionValidationError(Kip714Error, ValueError):
    """A subscription spec breaks one of Kafka's rules; raised before the cluster is touched."""

    def __init__(self, field: str, rule: str, value: object = None) -> None:
        self.field = field
        self.rule = rule
        self.value = value
        shown = "" if value is None else f" (got {_bounded_repr(value)})"
        super().__init__(f"{field}: {rule}{shown}")


class InvalidWindowNameError(Kip714Error, ValueError):
    """A name does not follow ``kip714-<label>-exp<YYYYMMDDTHHMMSSZ>-<8 hex>``."""


class ClusterUnreachableError(Kip714Error):
    """The bootstrap servers could not be reached or refused the credentials."""


class ClientMetricsAdminError(Kip714Error):
    """The broker rejected a CLIENT_METRICS admin request."""


class TelemetryDecodeError(Kip714Error):
    """A telemetry record could not be decoded; its ``reason`` goes to quarantine."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class LandingError(Kip714Error):
    """The Parquet landing zone is inconsistent or could not be written."""
