"""The ResetPassword handler against a real SMTP server (aiosmtpd) on 127.0.0.1."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from datetime import datetime
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.smtp import AuthResult, LoginPassword

from relq.errors import RelqError
from relq.worker.handlers import Handlers, Item, Permanent
from relq.worker.notification import SmtpSettings, register, reset_password_handler
from tests.smtp import HOST, Mailbox, free_port, serve

SENDER = "relq@example.com"
OTP = "493817"
KEY = datetime(2024, 5, 1, 12, 30, 45, 123456)


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    box = Mailbox()
    controller = serve(box)
    try:
        yield box
    finally:
        controller.stop()


def settings_for(port: int, **overrides: Any) -> SmtpSettings:
    return SmtpSettings(host=HOST, port=port, sender=SENDER, timeout=5.0, **overrides)


def item(**fields: Any) -> Item:
    values: dict[str, Any] = {
        "EmailTo": "alice@example.org",
        "PreferredLanguage": "en",
        "Username": "alice",
        "OTP": OTP,
        "PhoneNumber": None,
    }
    values.update(fields)
    return Item(queue="Notification", key=KEY, type="ResetPassword", step=None, attempt=1, fields=values)


def send(mailbox: Mailbox, **fields: Any) -> tuple[str, EmailMessage]:
    handler = reset_password_handler(settings_for(mailbox.port))
    response = handler(item(**fields))
    assert isinstance(response, str)
    assert len(mailbox.messages) == 1
    return response, mailbox.messages[0]


def test_sends_one_english_message(mailbox: Mailbox) -> None:
    response, message = send(mailbox)
    assert mailbox.envelopes == [(SENDER, ["alice@example.org"])]
    assert message["From"] == SENDER
    assert message["To"] == "alice@example.org"
    assert message["Subject"] == "Your password reset code"
    assert message["X-Relq-Item"] == KEY.isoformat()
    assert message["Content-Language"] == "en"
    body = message.get_content()
    assert OTP in body
    assert "Hello alice," in body
    assert response == f"sent to alice@example.org (message id {message['Message-ID']})"
    assert message["Message-ID"].startswith("<") and message["Message-ID"].endswith("@example.com>")
    assert OTP not in response


@pytest.mark.parametrize(
    ("tag", "language", "subject", "greeting"),
    [
        (None, "en", "Your password reset code", "Hello alice,"),
        ("en-GB", "en", "Your password reset code", "Hello alice,"),
        ("de", "de", "Ihr Code zum Zurücksetzen des Passworts", "Hallo alice,"),
        ("fr-CA", "fr", "Votre code de réinitialisation du mot de passe", "Bonjour alice,"),
        ("ES", "es", "Tu código para restablecer la contraseña", "Hola, alice:"),
        ("nl_BE", "nl", "Je code om je wachtwoord opnieuw in te stellen", "Hallo alice,"),
        ("tlh", "en", "Your password reset code", "Hello alice,"),
    ],
)
def test_language(mailbox: Mailbox, tag: str | None, language: str, subject: str, greeting: str) -> None:
    _, message = send(mailbox, PreferredLanguage=tag)
    assert message["Subject"] == subject
    assert message["Content-Language"] == language
    body = message.get_content()
    assert body.startswith(greeting)
    assert OTP in body


def test_items_are_told_apart(mailbox: Mailbox) -> None:
    handler = reset_password_handler(settings_for(mailbox.port))
    other = datetime(2024, 5, 1, 12, 30, 45, 123457)
    first = handler(item())
    second = handler(Item("Notification", other, "ResetPassword", None, 1, item().fields))
    assert [m["X-Relq-Item"] for m in mailbox.messages] == [KEY.isoformat(), other.isoformat()]
    assert first != second


def test_no_email_channel_is_permanent(mailbox: Mailbox) -> None:
    handler = reset_password_handler(settings_for(mailbox.port))
    with pytest.raises(Permanent, match="has no e-mail channel") as caught:
        handler(item(EmailTo=None, PreferredLanguage=None, PhoneNumber="+15551234567"))
    assert KEY.isoformat() in str(caught.value)
    assert mailbox.messages == []


def test_recipient_refused_permanently(mailbox: Mailbox) -> None:
    mailbox.rcpt_reply = "550 5.1.1 No such user"
    handler = reset_password_handler(settings_for(mailbox.port))
    with pytest.raises(Permanent, match=r"the recipient was refused \(550\)") as caught:
        handler(item())
    assert OTP not in str(caught.value)
    assert "alice@example.org" not in str(caught.value)  # errors reach the log: no addresses
    assert mailbox.messages == []


def test_a_refused_sender_is_retried_since_the_settings_not_the_item_are_wrong(mailbox: Mailbox) -> None:
    mailbox.mail_reply = "553 5.7.1 Sender not allowed"
    handler = reset_password_handler(settings_for(mailbox.port))
    with pytest.raises(smtplib.SMTPSenderRefused) as caught:
        handler(item())
    assert not isinstance(caught.value, Permanent)


@pytest.mark.parametrize("address", [
    "a@example.org, b@example.org", "a@example.org\r\nBcc: b@example.org", "",
])
def test_an_address_that_is_not_exactly_one_fails_the_item(mailbox: Mailbox, address: str) -> None:
    handler = reset_password_handler(settings_for(mailbox.port))
    with pytest.raises(Permanent, match="EmailTo is not exactly one e-mail address") as caught:
        handler(item(EmailTo=address))
    assert "b@example.org" not in str(caught.value)
    assert mailbox.messages == []


def test_recipient_refused_temporarily_is_retried(mailbox: Mailbox) -> None:
    mailbox.rcpt_reply = "451 4.3.0 Try again later"
    handler = reset_password_handler(settings_for(mailbox.port))
    with pytest.raises(RuntimeError, match=r"refused for now \(451\)") as caught:
        handler(item())
    assert not isinstance(caught.value, Permanent)
    assert OTP not in str(caught.value)
    assert "alice@example.org" not in str(caught.value)


def test_connection_refused_is_retried() -> None:
    handler = reset_password_handler(settings_for(free_port()))
    with pytest.raises(ConnectionRefusedError) as caught:
        handler(item())
    assert not isinstance(caught.value, Permanent)


def test_logs_in_with_username_and_password() -> None:
    logins: list[LoginPassword] = []

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        logins.append(data)
        return AuthResult(success=data == LoginPassword(b"relq", b"s3cret"))

    box = Mailbox()
    controller = serve(box, authenticator=authenticator, auth_require_tls=False)
    try:
        handler = reset_password_handler(settings_for(controller.port, username="relq", password="s3cret"))
        handler(item())
    finally:
        controller.stop()
    assert logins == [LoginPassword(b"relq", b"s3cret")]
    assert len(box.messages) == 1


def test_register() -> None:
    handlers = Handlers()
    register(handlers, settings_for(25))
    assert handlers.find("Notification", "ResetPassword", None) is not None
    assert handlers.queues() == {"Notification"}


ENV = {"RELQ_SMTP_HOST": "smtp.example.com", "RELQ_SMTP_FROM": SENDER}


def test_from_env_defaults() -> None:
    settings = SmtpSettings.from_env(ENV)
    assert settings == SmtpSettings(host="smtp.example.com", sender=SENDER)
    assert (settings.port, settings.starttls, settings.username, settings.password) == (25, False, None, None)


def test_from_env_everything() -> None:
    settings = SmtpSettings.from_env(
        {
            **ENV,
            "RELQ_SMTP_PORT": "587",
            "RELQ_SMTP_STARTTLS": "true",
            "RELQ_SMTP_USER": "relq",
            "RELQ_SMTP_PASSWORD": "hunter2-secret",
        }
    )
    assert (settings.port, settings.starttls, settings.username, settings.password) == (
        587,
        True,
        "relq",
        "hunter2-secret",
    )
    assert "hunter2-secret" not in repr(settings)
    assert "hunter2-secret" not in str(settings)
    assert "username='relq'" in repr(settings)
    assert SmtpSettings.from_env({**ENV, "RELQ_SMTP_STARTTLS": "1"}).starttls


@pytest.mark.parametrize("missing", ["RELQ_SMTP_HOST", "RELQ_SMTP_FROM"])
def test_from_env_missing(missing: str) -> None:
    environ = {name: value for name, value in ENV.items() if name != missing}
    with pytest.raises(RelqError, match=missing) as caught:
        SmtpSettings.from_env(environ)
    assert "\n" not in str(caught.value)
    with pytest.raises(RelqError, match=missing):
        SmtpSettings.from_env({**environ, missing: "  "})


@pytest.mark.parametrize(
    ("name", "value"),
    [("RELQ_SMTP_PORT", "smtp"), ("RELQ_SMTP_PORT", "0"), ("RELQ_SMTP_STARTTLS", "maybe")],
)
def test_from_env_bad_values(name: str, value: str) -> None:
    with pytest.raises(RelqError, match=name):
        SmtpSettings.from_env({**ENV, name: value})
