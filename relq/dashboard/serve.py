"""Serve the dashboard with uvicorn over relq's connection (relq.db), on 127.0.0.1 unless
told otherwise: the page has no login of its own, so whoever reaches the port sees what
the database login may see (and, with --allow-actions, may do)."""

from __future__ import annotations

import ipaddress
import logging
import sys
from dataclasses import replace
from typing import Any

import uvicorn

from relq import db
from relq.dashboard import access
from relq.dashboard.app import Settings, create_app
from relq.dashboard.store import SqlStore

log = logging.getLogger("relq.dashboard")
QUERY_TIMEOUT_S = 30


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_names(host: str) -> list[str] | None:
    """The Host header names a dashboard on ``host`` answers to: on the loopback address its
    own names only (see Settings.allowed_hosts); elsewhere any."""
    if not is_loopback(host):
        return None
    own = f"[{host}]" if ":" in host else host
    return sorted({"127.0.0.1", "localhost", "[::1]", own})


def exposure_warning(host: str, allow_actions: bool) -> str | None:
    """The warning for a dashboard others can reach; None on the loopback address."""
    if is_loopback(host):
        return None
    reach = "anyone who reaches it" if host in ("0.0.0.0", "::") else f"anyone who reaches {host}"
    can = "look at the queues and control their items" if allow_actions else "look at the queues"
    return (f"dashboard: warning: bound to {host}, not 127.0.0.1: {reach} can {can} without a login; "
            "put it behind an authenticating proxy")


def connect(conn_str: str) -> Any:
    """The dashboard's connection: a query that waits longer than QUERY_TIMEOUT_S (blocked
    behind someone's open transaction, say) is stopped, and the store opens a new connection,
    instead of holding every page and /metrics behind it."""
    conn = db.connect(conn_str)
    conn.timeout = QUERY_TIMEOUT_S
    return conn


def server_options(host: str, port: int) -> dict[str, Any]:
    """uvicorn's settings for the dashboard. ``proxy_headers=False``: uvicorn would otherwise
    believe X-Forwarded-For and X-Forwarded-Proto from 127.0.0.1 and ::1 (or from
    $FORWARDED_ALLOW_IPS: https://www.uvicorn.org/settings/), so that anyone on the machine
    could name any address; the application believes them from Settings.trusted_proxies alone
    (guard.py)."""
    return {"host": host, "port": port, "log_level": "warning", "proxy_headers": False}


def run(target: db.Target, host: str = "127.0.0.1", port: int = 8350,
        settings: Settings | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    settings = replace(settings or Settings(), allowed_hosts=host_names(host))
    store = SqlStore(lambda: connect(target.conn_str))
    missing = access.missing(store, access.look())  # connects: an unreachable server ends here, in one line
    if missing:
        log.warning("dashboard: %s", missing)
    warning = exposure_warning(host, settings.allow_actions)
    if warning:
        log.warning(warning)
    log.info("dashboard: http://%s:%d/ over %s%s", host if ":" not in host else f"[{host}]", port,
             db.describe(target.conn_str), ", actions allowed" if settings.allow_actions else ", read only")
    if settings.trusted_proxies:
        log.info("dashboard: forwarded headers believed from %s only%s", ", ".join(settings.trusted_proxies),
                 f"; the acting user from their {settings.user_header}" if settings.user_header else "")
    try:
        uvicorn.run(create_app(store, settings), **server_options(host, port))
    finally:
        store.close()
