"""A real SMTP server (aiosmtpd) on 127.0.0.1 that keeps every message it accepts: the alert tests' and the
demo's mail server.

    with SmtpSink.start() as sink:
        ...  # point an Airflow SMTP connection at sink.port
        mails = sink.wait_for(2, timeout_s=30)

Each accepted message is kept with its envelope (``mail_from``, ``rcpt_tos``) and parsed with the
standard library's ``email`` parser, so a test reads headers as a mail client would.
"""

from __future__ import annotations

import email
import email.policy
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from kip714_dev.local_kafka.ports import free_port_in

PORT_RANGE_ENV = "KIP714_TEST_SMTP_PORTS"
"""``low-high``: the ports a shared machine gives this user (any free port when unset)."""


@dataclass(frozen=True)
class ReceivedMail:
    mail_from: str
    rcpt_tos: tuple[str, ...]
    raw: bytes
    message: EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    def html(self) -> str:
        part = self.message.get_body(preferencelist=("html", "plain"))
        assert part is not None, "the mail has no body"
        return str(part.get_content())


@dataclass
class _Handler:
    mails: list[ReceivedMail] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        raw = bytes(envelope.original_content or envelope.content)
        message = email.message_from_bytes(raw, policy=email.policy.default)
        with self.lock:
            self.mails.append(
                ReceivedMail(str(envelope.mail_from), tuple(envelope.rcpt_tos), raw, message)  # type: ignore[arg-type]
            )
        return "250 Message accepted for delivery"


@dataclass
class SmtpSink:
    port: int
    _handler: _Handler
    _controller: Controller

    @classmethod
    @contextmanager
    def start(cls) -> Iterator[SmtpSink]:
        handler = _Handler()
        controller = Controller(handler, hostname="127.0.0.1", port=free_port())
        controller.start()
        try:
            yield cls(controller.port, handler, controller)
        finally:
            controller.stop()

    @property
    def mails(self) -> list[ReceivedMail]:
        with self._handler.lock:
            return list(self._handler.mails)

    def wait_for(self, count: int, timeout_s: float = 30.0) -> list[ReceivedMail]:
        """At least ``count`` mails (all received so far), or AssertionError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while len(self.mails) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.mails)} mail(s) after {timeout_s} s, expected {count}")
            time.sleep(0.1)
        return self.mails

    def connection(self, from_email: str = "kip714@localhost") -> dict[str, Any]:
        """An Airflow SMTP connection (plain SMTP, no TLS) to this server, as AIRFLOW_CONN_* JSON."""
        return {
            "conn_type": "smtp",
            "host": "127.0.0.1",
            "port": self.port,
            "extra": {"disable_tls": True, "disable_ssl": True, "from_email": from_email, "timeout": 10},
        }


def free_port() -> int:
    """A free port on 127.0.0.1, from ``KIP714_TEST_SMTP_PORTS`` when set."""
    return free_port_in(PORT_RANGE_ENV)
