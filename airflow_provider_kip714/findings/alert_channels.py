"""Where alert mails go: any Airflow notifier (``NotifierChannel``), or e-mail through the SMTP provider's
``SmtpNotifier`` (``SmtpChannel``). A notifier's templated fields refer to the mail under ``kip714_alert``
(``"{{ kip714_alert.subject }}"``): Jinja inserts a value without evaluating it again, so a client id
such as ``{{ conf }}`` stays text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from airflow_provider_kip714.findings.alert_mail import AlertMail
from airflow_provider_kip714.findings.alert_settings import ALERTS_VARIABLE, AlertConfigError, AlertSettings

if TYPE_CHECKING:
    from airflow.sdk.bases.notifier import BaseNotifier

CONTEXT_KEY: Final = "kip714_alert"
"""The context key under which a notifier's templates find the ``AlertMail``."""


class AlertChannel(Protocol):
    """Where mails go: ``check`` refuses an unusable configuration before anything is sent."""

    name: str

    def check(self) -> None: ...

    def notifier(self, mail: AlertMail) -> BaseNotifier: ...


@dataclass(frozen=True)
class NotifierChannel:
    """Any Airflow notifier: ``factory`` builds a fresh one per mail (rendering mutates a notifier)."""

    name: str
    factory: Callable[[AlertMail], BaseNotifier]

    def check(self) -> None:
        return None

    def notifier(self, mail: AlertMail) -> BaseNotifier:
        return self.factory(mail)


@dataclass(frozen=True)
class SmtpChannel:
    """E-mail through the SMTP provider's ``SmtpNotifier`` on the settings' Airflow connection."""

    settings: AlertSettings
    name: str = "smtp"

    def check(self) -> None:
        """Recipients set, the connection exists: one line naming what to fix otherwise."""
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        if not self.settings.to:
            raise AlertConfigError(f"{ALERTS_VARIABLE}.to: no recipient configured")
        try:
            connection = BaseHook.get_connection(self.settings.smtp_conn_id)
        except AirflowNotFoundException:
            raise AlertConfigError(
                f"SMTP connection {self.settings.smtp_conn_id!r} does not exist "
                f"(create it, or name another in {ALERTS_VARIABLE}.smtp_conn_id)"
            ) from None
        if not connection.host:
            raise AlertConfigError(f"SMTP connection {self.settings.smtp_conn_id!r} has no host")

    def notifier(self, mail: AlertMail) -> BaseNotifier:
        from airflow.providers.smtp.notifications.smtp import SmtpNotifier

        return SmtpNotifier(
            to=list(self.settings.to),
            from_email=self.settings.from_email,
            smtp_conn_id=self.settings.smtp_conn_id,
            subject="{{ " + CONTEXT_KEY + ".subject }}",
            html_content="{{ " + CONTEXT_KEY + ".html }}",
            custom_headers={"Message-ID": mail.message_id},
        )
