"""What the dashboard sends with every answer, and what it believes of how a request came.

:class:`Headers`: every response (pages, the overview's live part, /metrics, static files, error
pages, an unhandled error's 500) says that no other page may frame it and how the browser is to
treat it:

- ``Content-Security-Policy``: scripts and stylesheets from the dashboard's own origin only, no
  inline script or style (the templates have none: the throughput chart's SVG is drawn with
  classes and presentation attributes such as ``text-anchor``, which are not style attributes,
  https://www.w3.org/TR/SVG2/styling.html#PresentationAttributes; MDN, "CSP: style-src": inline
  ``style`` attributes are blocked), fetches (refresh.js, bulk.js) and forms to its own origin,
  no ``<base>``, and ``frame-ancestors 'none'``: no page of another origin may frame it, so a
  click on a Cancel button is never a click meant for the page around it
  (https://developer.mozilla.org/docs/Web/HTTP/Headers/Content-Security-Policy/frame-ancestors);
- ``X-Frame-Options: DENY``, the same for browsers that predate ``frame-ancestors``;
- ``X-Content-Type-Options: nosniff``: /metrics' text and the static files are read as the type
  they are sent as, never as a script or a page;
- ``Referrer-Policy: same-origin``: a link to another site carries no URL of the dashboard (its
  lists' URLs hold search texts, keys and recipients), while a form's POST keeps its Origin
  header (``no-referrer`` sends ``Origin: null``);
- ``Cross-Origin-Opener-Policy`` and ``Cross-Origin-Resource-Policy``: ``same-origin``.

:class:`Proxies`: forwarded headers are believed only from a proxy the operator names
(``--trusted-proxy``). From one, uvicorn's own ProxyHeadersMiddleware takes the client's address
and scheme from ``X-Forwarded-For`` and ``X-Forwarded-Proto`` (the first address from the right
that is not a trusted proxy); from anyone else, loopback included, they are ignored. uvicorn's
server does the same by default for 127.0.0.1 and ::1 (``proxy_headers=True``,
``forwarded_allow_ips`` from ``$FORWARDED_ALLOW_IPS``, else those two: https://www.uvicorn.org/settings/),
so serve.py turns that off and the application does it here, from its own settings, whatever the
server or the environment says. IP networks need uvicorn 0.31 or later.

The user header (``--user-header X-Forwarded-User``, for a dashboard behind an authenticating
proxy) is read only from a trusted proxy. A request that carries it from anywhere else is
refused (400), not served with the header ignored: the header comes either from a proxy that is
missing from ``--trusted-proxy`` (every audit line would then name nobody, silently) or from
someone who reaches the port past the proxy and names a user of their choice; either way the
operator should hear of it at once. :class:`Arrival` keeps what was learnt (the socket's
address, the proxy's, the user), for :func:`relq.dashboard.web.client`, the one place that says
who acted."""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

log = logging.getLogger("relq.dashboard")

POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
          "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = (
    ("content-security-policy", POLICY),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "same-origin"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
)
ARRIVAL = "relq.arrival"  # the scope's key for the request's Arrival
HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
# Headers a proxy sets for other purposes, or the browser itself: never a user's name.
NOT_A_USER_HEADER = {"host", "cookie", "authorization", "x-forwarded-for", "x-forwarded-proto",
                     "x-forwarded-host", "forwarded", "origin", "referer", "user-agent", "content-type"}


class Refused(ValueError):
    """An option that cannot be used, in one line."""


def trusted_proxies(values: Iterable[str]) -> tuple[str, ...]:
    """The proxies named by ``--trusted-proxy`` (each an IP address or network, given repeatedly or
    comma-separated), as networks: ``10.0.0.7`` is ``10.0.0.7/32``, ``10.0.0.9/24`` is ``10.0.0.0/24``.
    Refuses anything else, "*" included: trusting every peer would make X-Forwarded-For anyone's to
    write."""
    found: list[str] = []
    for value in values:
        for entry in (part.strip() for part in str(value).split(",")):
            if not entry:
                continue
            try:
                network = ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise Refused(f"--trusted-proxy {entry!r} is not an IP address or network (such as 10.0.0.7 "
                              "or 10.0.0.0/24); a host name or '*' is not taken") from None
            if str(network) not in found:
                found.append(str(network))
    return tuple(found)


def user_header(name: str | None, proxies: tuple[str, ...]) -> str | None:
    """``--user-header``'s name, checked: a header name, not one a proxy or browser sets for another
    purpose, and only with a trusted proxy to read it from."""
    if name is None or not name.strip():
        return None
    name = name.strip()
    if not HEADER_NAME.fullmatch(name) or name.lower() in NOT_A_USER_HEADER:
        raise Refused(f"--user-header {name!r} is not a header that can name a user "
                      "(such as X-Forwarded-User)")
    if not proxies:
        raise Refused("--user-header needs --trusted-proxy: the header is read only from a proxy the "
                      "dashboard trusts, and from no one else")
    return name


@dataclass(frozen=True)
class Arrival:
    """How a request came: ``peer``, the socket's address; ``proxy``, the same when it is a trusted
    proxy (then the request's client is the address the proxy gave); ``user``, the user header's
    value, read only from a trusted proxy; ``login``, the database login (read when asked)."""

    peer: str | None
    proxy: str | None
    user: str | None
    login: Callable[[], str | None]


class Proxies:
    """ASGI middleware: believe forwarded headers, and the user header, from ``proxies`` only."""

    def __init__(self, app: ASGIApp, proxies: tuple[str, ...], header: str | None,
                 login: Callable[[], str | None]) -> None:
        self.app = app
        self.networks = [ipaddress.ip_network(p) for p in proxies]
        self.header = header.lower().encode("latin-1") if header else None
        self.header_name = header
        self.login = login
        # uvicorn's middleware, given the same networks; absent when none is trusted
        self.forwarded = ProxyHeadersMiddleware(app, trusted_hosts=list(proxies)) if proxies else None

    def trusts(self, host: str | None) -> bool:
        try:
            address = ipaddress.ip_address(host or "")
        except ValueError:
            return False
        return any(address in network for network in self.networks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        peer = scope["client"][0] if scope.get("client") else None
        via = self.trusts(peer)
        user = None
        if self.header is not None:
            given = [v for k, v in scope["headers"] if k == self.header]
            if given and not via:
                log.warning("dashboard: refused a request from %s: it carries %s, which only a trusted proxy "
                            "may send (--trusted-proxy)", peer, self.header_name)
                refusal = PlainTextResponse(
                    f"{self.header_name} came from {peer}, which is not a proxy this dashboard trusts: "
                    "refused. Reach the dashboard through its proxy, or name the proxy with "
                    "--trusted-proxy.\n",
                    status_code=400)
                await refusal(scope, receive, send)
                return
            if given:
                user = given[-1].decode("latin-1").strip() or None
        scope[ARRIVAL] = Arrival(peer, peer if via else None, user, self.login)
        await (self.forwarded or self.app)(scope, receive, send)


class Headers:
    """ASGI middleware: :data:`HEADERS` on every response, in place of any the application set."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.names = {name.encode() for name, _ in HEADERS}
        self.values = [(name.encode(), value.encode()) for name, value in HEADERS]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in self.names]
                message = {**message, "headers": kept + self.values}
            await send(message)

        await self.app(scope, receive, guarded)


class Guarded(Starlette):
    """Starlette with :class:`Headers` and :class:`Proxies` outside everything else, the server's
    error middleware included, so that an unhandled error's 500 carries the headers too (a
    middleware given to Starlette sits inside that one)."""

    def __init__(self, *args: Any, proxies: tuple[str, ...] = (), header: str | None = None,
                 login: Callable[[], str | None] = lambda: None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.proxies, self.header, self.login = proxies, header, login

    def build_middleware_stack(self) -> ASGIApp:
        return Headers(Proxies(super().build_middleware_stack(), self.proxies, self.header, self.login))
