"""The password-reset notification's handler (queue Notification, type ResetPassword,
first step): one e-mail through SMTP with the one-time code, in the recipient's
preferred language.

The code (``OTP``) goes into the message only: never into the response, a log
line or an exception's message.
"""

from __future__ import annotations

import contextlib
import os
import smtplib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid, parseaddr

from relq.errors import RelqError
from relq.worker.handlers import Handler, Handlers, Item, Permanent

QUEUE = "Notification"
TYPE = "ResetPassword"

DEFAULT_LANGUAGE = "en"

# Per primary language subtag: (subject, body). The body is a str.format template
# with {username} and {otp}.
TEXTS: dict[str, tuple[str, str]] = {
    "en": (
        "Your password reset code",
        "Hello {username},\n\n"
        "Use this code to reset your password: {otp}\n\n"
        "If you did not ask to reset your password, you can ignore this e-mail.\n",
    ),
    "de": (
        "Ihr Code zum Zurücksetzen des Passworts",
        "Hallo {username},\n\n"
        "mit diesem Code können Sie Ihr Passwort zurücksetzen: {otp}\n\n"
        "Wenn Sie das Zurücksetzen nicht angefordert haben, können Sie diese E-Mail ignorieren.\n",
    ),
    "fr": (
        "Votre code de réinitialisation du mot de passe",
        "Bonjour {username},\n\n"
        "Voici votre code pour réinitialiser votre mot de passe\u00a0: {otp}\n\n"
        "Si vous n'avez pas demandé la réinitialisation de votre mot de passe, "
        "vous pouvez ignorer cet e-mail.\n",
    ),
    "es": (
        "Tu código para restablecer la contraseña",
        "Hola, {username}:\n\n"
        "Usa este código para restablecer tu contraseña: {otp}\n\n"
        "Si no has solicitado restablecer tu contraseña, puedes ignorar este correo.\n",
    ),
    "nl": (
        "Je code om je wachtwoord opnieuw in te stellen",
        "Hallo {username},\n\n"
        "Met deze code stel je je wachtwoord opnieuw in: {otp}\n\n"
        "Heb je niet gevraagd om je wachtwoord opnieuw in te stellen? Dan kun je deze e-mail negeren.\n",
    ),
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


@dataclass(frozen=True, kw_only=True)
class SmtpSettings:
    """Where and how to send: an SMTP relay, the From address, optional STARTTLS and login."""

    host: str
    port: int = 25
    sender: str
    starttls: bool = False
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = 30.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> SmtpSettings:
        """Read RELQ_SMTP_HOST, RELQ_SMTP_FROM (both required), RELQ_SMTP_PORT,
        RELQ_SMTP_STARTTLS, RELQ_SMTP_USER and RELQ_SMTP_PASSWORD."""

        def required(name: str) -> str:
            value = environ.get(name, "").strip()
            if not value:
                raise RelqError(f"{name} is not set: the notification worker needs it to send e-mail")
            return value

        host = required("RELQ_SMTP_HOST")
        sender = required("RELQ_SMTP_FROM")
        port_text = environ.get("RELQ_SMTP_PORT", "").strip() or "25"
        try:
            port = int(port_text)
        except ValueError:
            port = -1
        if not 0 < port < 65536:
            raise RelqError(f"RELQ_SMTP_PORT must be a port number (1-65535), not {port_text!r}")
        starttls_text = environ.get("RELQ_SMTP_STARTTLS", "").strip().lower()
        if starttls_text not in _TRUE | _FALSE:
            raise RelqError(f"RELQ_SMTP_STARTTLS must be 1/true or 0/false, not {starttls_text!r}")
        return cls(
            host=host,
            port=port,
            sender=sender,
            starttls=starttls_text in _TRUE,
            username=environ.get("RELQ_SMTP_USER") or None,
            password=environ.get("RELQ_SMTP_PASSWORD") or None,
        )


def language_of(tag: str | None) -> str:
    """The language whose texts a tag ("de", "fr-CA", "en_GB", None) gets: its primary
    subtag when :data:`TEXTS` has it, else English."""
    primary = (tag or "").strip().replace("_", "-").split("-")[0].lower()
    return primary if primary in TEXTS else DEFAULT_LANGUAGE


def build_message(item: Item, settings: SmtpSettings) -> EmailMessage:
    """The reset e-mail for ``item``, raising Permanent when it cannot be written. The
    address must be exactly one, with no line breaks: it never names itself in errors,
    which reach the log."""
    what = f"notification {item.key.isoformat()}"
    address = item.fields.get("EmailTo")
    if address is None:
        raise Permanent(f"{what} has no e-mail channel (relq does not send SMS yet)")
    found = getaddresses([address])
    if len(found) != 1 or not found[0][1] or any(c in address for c in "\r\n,;"):
        raise Permanent(f"{what}: EmailTo is not exactly one e-mail address")
    username, otp = item.fields.get("Username"), item.fields.get("OTP")
    if username is None or otp is None:
        raise Permanent(f"{what} has no ResetPassword details (Username and OTP)")
    language = language_of(item.fields.get("PreferredLanguage"))
    subject, body = TEXTS[language]
    message = EmailMessage()
    message["From"] = settings.sender
    message["To"] = found[0][1]
    message["Subject"] = subject
    message["Date"] = formatdate(localtime=False, usegmt=True)
    domain = parseaddr(settings.sender)[1].rpartition("@")[2] or "relq.invalid"
    message["Message-ID"] = make_msgid(domain=domain)
    message["X-Relq-Item"] = item.key.isoformat()
    message.set_content(body.format(username=username, otp=otp))
    message["Content-Language"] = language  # after set_content, which clears the Content- headers
    return message


def send(message: EmailMessage, settings: SmtpSettings, what: str) -> None:
    """Send one message to its one recipient. A recipient refused for good (5xx) is
    Permanent (its message starting with ``what``, without the address); anything
    else propagates for a retry: a refused sender is the relay's or the settings'
    fault, not the item's. A relay that accepted the message and then fails its
    QUIT does not undo the send."""
    smtp = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout)
    try:
        if settings.starttls:
            smtp.starttls(context=ssl.create_default_context())
        if settings.username is not None:
            smtp.login(settings.username, settings.password or "")
        try:
            smtp.send_message(message, to_addrs=[message["To"]])
        except smtplib.SMTPRecipientsRefused as exc:
            replies = list(exc.recipients.values())
            if replies and all(code >= 500 for code, _ in replies):
                detail = "; ".join(str(code) for code, _ in replies)
                raise Permanent(f"{what}: the recipient was refused ({detail})") from None
            raise RuntimeError(f"{what}: the recipient was refused for now "
                               f"({'; '.join(str(code) for code, _ in replies)})") from None
        with contextlib.suppress(smtplib.SMTPException, OSError):
            smtp.quit()  # the message was accepted: a failed goodbye changes nothing
    finally:
        smtp.close()


def reset_password_handler(settings: SmtpSettings) -> Handler:
    """The handler that e-mails a ResetPassword notification's code."""

    def send_reset_password(item: Item) -> str:
        message = build_message(item, settings)
        send(message, settings, f"notification {item.key.isoformat()}")
        return f"sent to {message['To']} (message id {message['Message-ID']})"

    return send_reset_password


def register(handlers: Handlers, settings: SmtpSettings) -> None:
    """Register the ResetPassword handler for the first step of Notification items."""
    handlers.register(QUEUE, TYPE, None)(reset_password_handler(settings))


def install(handlers: Handlers) -> None:
    """The worker's way in (``--handlers relq.worker.notification``): the SMTP relay from
    the RELQ_SMTP_* variables."""
    register(handlers, SmtpSettings.from_env())
