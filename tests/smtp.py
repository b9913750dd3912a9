"""A real SMTP server for tests: aiosmtpd on 127.0.0.1, with a handler that records
what arrives and refuses what it is told to. Shared by the handler's offline tests
and the live worker-process test."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

HOST = "127.0.0.1"


@dataclass
class Mailbox:
    """An aiosmtpd handler. It runs on the controller's thread: read it through
    :meth:`count` and :meth:`snapshot`, or once the server has stopped."""

    messages: list[EmailMessage] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    rcpt_reply: str | None = None  # e.g. "550 ...": refuse every recipient
    mail_reply: str | None = None  # e.g. "550 ...": refuse the sender
    port: int = 0  # where its controller listens
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    async def handle_MAIL(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if self.mail_reply:
            return self.mail_reply
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        if self.rcpt_reply:
            return self.rcpt_reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = message_from_bytes(envelope.content, policy=policy.default)
        with self.lock:
            self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
            self.messages.append(message)
        return "250 Message accepted for delivery"

    def count(self) -> int:
        with self.lock:
            return len(self.messages)

    def snapshot(self) -> list[tuple[str | None, list[str]]]:
        """Per message so far: its X-Relq-Item header and its recipients."""
        with self.lock:
            return [(m["X-Relq-Item"], rcpts) for m, (_, rcpts) in zip(self.messages, self.envelopes,
                                                                       strict=True)]


def free_port() -> int:
    """A port nothing listens on (aiosmtpd 1.4's Controller cannot bind port 0)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def serve(mailbox: Mailbox, **smtp_options: Any) -> Controller:
    """Start a server for ``mailbox``; the caller stops it."""
    controller = Controller(mailbox, hostname=HOST, port=free_port(), **smtp_options)
    controller.start()
    mailbox.port = controller.port
    return controller
