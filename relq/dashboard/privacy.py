"""What a page never shows and what it shows masked.

Secrets (a one-time code, a password) are never read: the item page selects the worker
view's columns without them. Notification addresses and user names are personal data,
masked unless the dashboard runs with --show-personal-data. A column is told by its
type (relq's alias types, which a view's column keeps) or, for a queue whose columns are
plain types, by its name."""

from __future__ import annotations

import re

from relq.dashboard.store import Column

SECRET_TYPES = frozenset({"otpcode"})
SECRET_NAMES = re.compile(r"otp|password|passwd|secret", re.IGNORECASE)
PERSONAL_TYPES = frozenset({"email", "phonenumber", "dbusername"})
PERSONAL_NAMES = re.compile(r"^(?:.*emailto|email|emailaddress|.*phonenumber|phone|username)$", re.IGNORECASE)


def is_secret(column: Column) -> bool:
    return column.type.casefold() in SECRET_TYPES or bool(SECRET_NAMES.search(column.name))


def is_personal(column: Column) -> bool:
    return column.type.casefold() in PERSONAL_TYPES or bool(PERSONAL_NAMES.match(column.name))


def mask(value: object) -> str:
    """An address as a person on call may see it: enough to tell two apart, not to use one.
    ``ann.lee@example.com`` -> ``a***@example.com``; ``+358401234567`` -> ``***67``."""
    if value is None:
        return ""
    text = str(value)
    if "@" in text:
        local, _, domain = text.rpartition("@")
        return f"{local[:1]}***@{domain}"
    return f"***{text[-2:]}" if len(text) > 4 else "***"
