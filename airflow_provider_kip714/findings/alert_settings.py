"""The ``kip714_alerts`` Variable: where alert mails go, and how many per finding kind and hour."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from airflow_provider_kip714.contract.client_text import safe_link
from airflow_provider_kip714.exceptions import Kip714Error
from airflow_provider_kip714.settings import CONN_ID_RULE, is_conn_id, variable_settings

ALERTS_VARIABLE: Final = "kip714_alerts"
"""The Airflow Variable (JSON) holding ``AlertSettings``."""


class AlertConfigError(Kip714Error, ValueError):
    """The alert settings or channel are unusable; the message is one line naming what to fix."""


@dataclass(frozen=True)
class AlertSettings:
    """The ``kip714_alerts`` Variable: where mails go and how many per kind and hour."""

    to: tuple[str, ...] = ()
    smtp_conn_id: str = "smtp_default"
    from_email: str | None = None
    max_mails_per_kind_per_hour: int = 5
    notify_resolved: bool = True
    ui_url: str | None = None
    """The findings page, linked from a mail when the finding carries no link of its own."""

    @classmethod
    def from_json(cls, body: object) -> AlertSettings:
        """Parse the Variable's value (a JSON object or its text); ``AlertConfigError`` names the field."""
        body = variable_settings(body, ALERTS_VARIABLE, cls.__dataclass_fields__, AlertConfigError)
        if body is None:
            return cls()
        to = body.get("to", [])
        if isinstance(to, str):
            to = [part.strip() for part in to.replace(";", ",").split(",") if part.strip()]
        if not isinstance(to, list) or not all(isinstance(a, str) and _address_ok(a) for a in to):
            raise AlertConfigError(f"{ALERTS_VARIABLE}.to: must be a list of e-mail addresses")
        limit = body.get("max_mails_per_kind_per_hour", 5)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= 1000:
            raise AlertConfigError(
                f"{ALERTS_VARIABLE}.max_mails_per_kind_per_hour: must be a whole number 0..1000"
            )
        conn_id = body.get("smtp_conn_id", "smtp_default")
        if not isinstance(conn_id, str) or not is_conn_id(conn_id.strip()):
            raise AlertConfigError(
                f"{ALERTS_VARIABLE}.smtp_conn_id: must name an Airflow connection ({CONN_ID_RULE})"
            )
        from_email = body.get("from_email")
        if from_email is not None and not (isinstance(from_email, str) and _address_ok(from_email)):
            raise AlertConfigError(f"{ALERTS_VARIABLE}.from_email: must be an e-mail address")
        resolved = body.get("notify_resolved", True)
        if not isinstance(resolved, bool):
            raise AlertConfigError(f"{ALERTS_VARIABLE}.notify_resolved: must be true or false")
        ui_url = body.get("ui_url")
        if ui_url is not None and safe_link(ui_url) is None:
            raise AlertConfigError(f"{ALERTS_VARIABLE}.ui_url: must be an http(s) URL")
        return cls(tuple(to), conn_id.strip(), from_email, limit, resolved, ui_url)


def _address_ok(address: str) -> bool:
    """One plain address: an ``@``, no spaces, no control characters (it goes into a header)."""
    return "@" in address and address.isprintable() and not any(c in address for c in ' ,;<>"')
