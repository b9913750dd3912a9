"""guard.py and who acted: the security headers on every kind of answer, forwarded headers and
the user header believed only from the proxies the operator names (through Starlette's test
client, and through uvicorn itself as serve.py starts it), the audit line's content, the login
read once through the store, and refusals drawn as refusals."""

from __future__ import annotations

import http.client
import logging
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import uvicorn
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from relq.dashboard import guard, serve
from relq.dashboard.app import Settings, create_app
from relq.dashboard.store import SqlStore
from relq.dashboard.web import HERE, client
from tests.dashboard.fake_store import FakeStore
from tests.test_db import FakeConnection, FakeCursor

CSRF = "the-dashboards-csrf-token"
LOGGER = "relq.dashboard"
PROXY = ("10.0.0.2", 41000)  # a proxy's socket address
STRANGER = ("10.0.0.3", 41000)  # someone else on the network


def app(store: FakeStore, peer: tuple[str, int] = ("127.0.0.1", 50000), **settings: Any) -> TestClient:
    return TestClient(create_app(store, Settings(csrf=CSRF, allow_actions=True, **settings)),
                      follow_redirects=False, client=peer, raise_server_exceptions=False)


def iso(key: datetime) -> str:
    return key.isoformat(timespec="microseconds")


def retry(client_: TestClient, key: datetime, **headers: str) -> tuple[Any, list[str]]:
    """Open the item's page and click Retry with the given headers; the answer and the log's lines."""
    page = client_.get(f"/queues/Notification/items/{iso(key)}", headers=headers)
    assert page.status_code == 200, page.text
    tok = re.search(r'name="token" value="([^"]+)"', page.text)[1]
    logger, handler = logging.getLogger(LOGGER), _Lines()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        done = client_.post(f"/queues/Notification/items/{iso(key)}/Retry", data={"csrf": CSRF, "token": tok},
                            headers=headers)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return done, handler.lines


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def admin() -> FakeStore:
    store = FakeStore.with_roles("QueueMonitor", "QueueAdmin")
    store.login_name = "relq_ops"
    return store


def assert_guarded(response: Any) -> None:
    for name, value in guard.HEADERS:
        assert response.headers.get(name) == value, (name, response.status_code, response.text[:200])


# -- the headers -----------------------------------------------------------------------------


def test_the_policy_forbids_framing_and_inline_script_and_style() -> None:
    directives = dict(d.strip().split(" ", 1) for d in guard.POLICY.split(";"))
    assert directives["frame-ancestors"] == "'none'"
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == directives["style-src"] == "'self'"
    assert directives["form-action"] == directives["connect-src"] == "'self'"
    assert "unsafe" not in guard.POLICY and "*" not in guard.POLICY and "data:" not in guard.POLICY
    assert dict(guard.HEADERS)["x-frame-options"] == "DENY"


def test_every_kind_of_answer_carries_the_headers(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    local = app(admin)
    answers = {
        "page": local.get("/"),
        "fragment": local.get("/overview"),
        "list": local.get("/queues/Notification?status=Failed"),
        "item": local.get(f"/queues/Notification/items/{iso(key)}"),
        "metrics": local.get("/metrics"),
        "static": local.get("/static/dashboard.css"),
        "no such queue (a Problem)": local.get("/queues/Nope"),
        "no such route (an HTTPException)": local.get("/nowhere"),
        "no such static file": local.get("/static/nothing.css"),
        "a form without the CSRF token": local.post(f"/queues/Notification/items/{iso(key)}/Retry", data={}),
        "a redirect after an action": retry(local, key)[0],
    }
    expected = {"page": 200, "fragment": 200, "list": 200, "item": 200, "metrics": 200, "static": 200,
                "no such queue (a Problem)": 404, "no such route (an HTTPException)": 404,
                "no such static file": 404, "a form without the CSRF token": 403,
                "a redirect after an action": 303}
    assert {what: r.status_code for what, r in answers.items()} == expected
    for response in answers.values():
        assert_guarded(response)
    monitor = app(FakeStore.with_roles())  # /metrics refused: a 403 in plain text
    refused = monitor.get("/metrics")
    assert refused.status_code == 403
    assert_guarded(refused)


def test_an_unhandled_error_and_a_refused_host_carry_the_headers_too() -> None:
    class Broken(FakeStore):
        def health(self) -> Any:
            raise RuntimeError("a bug")

    crashed = app(Broken.with_roles("QueueMonitor")).get("/")
    assert crashed.status_code == 500 and "a bug" not in crashed.text
    assert_guarded(crashed)
    rebound = TestClient(create_app(FakeStore.with_roles("QueueMonitor"),
                                    Settings(allowed_hosts=serve.host_names("127.0.0.1"))),
                         base_url="http://attacker.example:8350").get("/")
    assert rebound.status_code == 400
    assert_guarded(rebound)


def test_the_headers_replace_any_the_application_set() -> None:
    def framed(request: Request) -> PlainTextResponse:
        return PlainTextResponse("x", headers={"X-Frame-Options": "SAMEORIGIN",
                                               "Content-Security-Policy": "frame-ancestors *"})

    response = TestClient(guard.Guarded(routes=[Route("/", framed)])).get("/")
    assert response.headers.get_list("x-frame-options") == ["DENY"]
    assert response.headers.get_list("content-security-policy") == [guard.POLICY]


def test_no_template_has_inline_script_or_style() -> None:
    for template in sorted((HERE / "templates").glob("*.html")):
        text = template.read_text()
        assert not re.search(r"\sstyle\s*=", text, re.I), template.name
        assert "<style" not in text.lower(), template.name
        assert not re.search(r"\son[a-z]+\s*=", text, re.I), template.name  # onclick= and the like
        assert not re.search(r"javascript:", text, re.I), template.name
        for script in re.findall(r"<script[^>]*>", text, re.I):
            assert " src=" in script, (template.name, script)  # from the dashboard's own origin


def test_the_pages_as_drawn_have_no_inline_style_the_chart_included(admin: FakeStore) -> None:
    admin.add("Notification", 2, "Failed")
    local = app(admin)
    local.get("/")
    time.sleep(0.01)
    pages = [local.get("/").text, local.get("/queues/Notification?status=Failed").text]
    assert "<svg" in pages[0]  # the chart: classes and presentation attributes, no style attribute
    for text in pages:
        assert not re.search(r"\sstyle\s*=", text, re.I) and "<style" not in text
        assert all(" src=" in s for s in re.findall(r"<script[^>]*>", text))


# -- forwarded headers -------------------------------------------------------------------------


FORWARDED = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}


def test_without_a_trusted_proxy_forwarded_headers_are_ignored_even_from_loopback(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    done, lines = retry(app(admin, ("127.0.0.1", 50000)), key, **FORWARDED)
    assert done.status_code == 303 and done.headers["location"].startswith("http://testserver/")
    assert lines == [f"dashboard: Retry Notification {iso(key)} by login relq_ops at 127.0.0.1: done, "
                     "now Pending"]


def test_a_trusted_proxys_forwarded_headers_are_believed(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    proxied = app(admin, PROXY, trusted_proxies=guard.trusted_proxies(["10.0.0.0/30"]))
    done, lines = retry(proxied, key, **FORWARDED)
    assert done.headers["location"].startswith("https://testserver/")  # the scheme the browser used
    assert lines == [f"dashboard: Retry Notification {iso(key)} by login relq_ops at 203.0.113.9 "
                     "via 10.0.0.2: done, now Pending"]


def test_the_address_is_the_first_one_the_trusted_proxies_did_not_write(admin: FakeStore) -> None:
    # The client writes what it likes on the left; the proxy appends the address it saw.
    [key] = admin.add("Notification", 1, "Failed")
    proxied = app(admin, PROXY, trusted_proxies=("10.0.0.2/32",))
    _, lines = retry(proxied, key, **{"X-Forwarded-For": "198.51.100.66, 203.0.113.9"})
    assert "by login relq_ops at 203.0.113.9 via 10.0.0.2:" in lines[0] and "198.51.100.66" not in lines[0]


def test_forwarded_headers_from_someone_else_than_the_trusted_proxy_are_ignored(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    done, lines = retry(app(admin, STRANGER, trusted_proxies=("10.0.0.2/32",)), key, **FORWARDED)
    assert done.headers["location"].startswith("http://")
    assert lines == [f"dashboard: Retry Notification {iso(key)} by login relq_ops at 10.0.0.3: done, "
                     "now Pending"]


@pytest.fixture
def served(admin: FakeStore) -> Iterator[tuple[int, FakeStore]]:
    """The dashboard under uvicorn with serve.py's own server options, on a free port."""
    probe = uvicorn.Config(create_app(admin, Settings(csrf=CSRF, allow_actions=True)),
                           **serve.server_options("127.0.0.1", 0))
    server = uvicorn.Server(probe)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield port, admin
    finally:
        server.should_exit = True
        thread.join(15)


def test_under_uvicorn_as_served_loopbacks_forwarded_headers_are_ignored(served, caplog) -> None:
    # uvicorn's own default would believe X-Forwarded-For from 127.0.0.1: serve.py turns it off.
    assert serve.server_options("127.0.0.1", 8350)["proxy_headers"] is False
    port, store = served
    [key] = store.add("Notification", 1, "Failed")
    page = _http(port, "GET", f"/queues/Notification/items/{iso(key)}")
    tok = re.search(r'name="token" value="([^"]+)"', page[2])[1]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        status, headers, _ = _http(port, "POST", f"/queues/Notification/items/{iso(key)}/Retry",
                                   f"csrf={CSRF}&token={tok.replace('+', '%2B')}", **FORWARDED)
    assert status == 303 and headers["location"].startswith("http://127.0.0.1")
    assert headers["x-frame-options"] == "DENY"
    line = next(r.getMessage() for r in caplog.records if "Retry" in r.getMessage())
    assert "by login relq_ops at 127.0.0.1: done" in line and "203.0.113.9" not in line


def _http(port: int, method: str, path: str, body: str | None = None,
          **headers: str) -> tuple[int, dict, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        conn.close()


# -- the user header ----------------------------------------------------------------------------


def behind_proxy(store: FakeStore, peer: tuple[str, int] = PROXY) -> TestClient:
    return app(store, peer, trusted_proxies=("10.0.0.2/32",), user_header="X-Forwarded-User")


def test_the_user_a_trusted_proxy_names_is_the_one_who_acted(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    _, lines = retry(behind_proxy(admin), key, **{"X-Forwarded-User": "alice@corp", **FORWARDED})
    assert lines == [f"dashboard: Retry Notification {iso(key)} by user alice@corp at 203.0.113.9 "
                     "via 10.0.0.2: done, now Pending"]


def test_through_the_proxy_without_the_header_the_line_names_the_login(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    _, lines = retry(behind_proxy(admin), key, **FORWARDED)
    assert "by login relq_ops at 203.0.113.9 via 10.0.0.2: done" in lines[0]


def test_the_user_header_from_anyone_but_a_trusted_proxy_is_refused(admin: FakeStore, caplog) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    stranger = behind_proxy(admin, STRANGER)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        forged = stranger.post(f"/queues/Notification/items/{iso(key)}/Retry",
                               data={"csrf": CSRF, "token": iso(key)}, headers={"X-Forwarded-User": "ceo"})
        page = stranger.get("/", headers={"x-forwarded-user": "ceo"})
    assert forged.status_code == page.status_code == 400
    assert "X-Forwarded-User came from 10.0.0.3, which is not a proxy this dashboard trusts" in forged.text
    assert_guarded(forged)
    assert admin.acted == []
    assert any("refused a request from 10.0.0.3" in r.getMessage() for r in caplog.records)
    # without the header, the same person is served, and an action names the login, not a user
    _, lines = retry(stranger, key)
    assert "by login relq_ops at 10.0.0.3: done" in lines[0]


def test_a_user_name_that_could_forge_a_line_is_quoted(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    _, lines = retry(behind_proxy(admin), key, **{"X-Forwarded-User": "bob: done, now Pending. x by"})
    assert 'by user "bob: done, now Pending. x by" at 10.0.0.2: done, now Pending' in lines[0]


def test_a_user_header_without_the_dashboard_asking_for_one_is_nobody(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    proxied = app(admin, PROXY, trusted_proxies=("10.0.0.2/32",))
    _, lines = retry(proxied, key, **{"X-Forwarded-User": "alice"})
    assert "by login relq_ops at 10.0.0.2: done" in lines[0]


# -- who acted: the one place that says it ------------------------------------------------------


def test_the_line_names_the_address_alone_when_the_login_cannot_be_read() -> None:
    def request(arrival: guard.Arrival | None, host: str = "127.0.0.1") -> Request:
        scope = {"type": "http", "client": (host, 1), "headers": []}
        if arrival is not None:
            scope[guard.ARRIVAL] = arrival
        return Request(scope)

    def nobody() -> None:
        return None

    def corp() -> str:
        return "CORP\\ops"

    assert client(request(guard.Arrival("127.0.0.1", None, None, nobody))) == "127.0.0.1"
    assert client(request(guard.Arrival("127.0.0.1", None, None, corp))) == "login CORP\\ops at 127.0.0.1"
    proxy_alone = guard.Arrival("10.0.0.2", "10.0.0.2", None, corp)  # no X-Forwarded-For: no "via"
    assert client(request(proxy_alone, "10.0.0.2")) == "login CORP\\ops at 10.0.0.2"
    assert client(request(guard.Arrival("10.0.0.2", "10.0.0.2", "eve", nobody), "192.0.2.1")) == (
        "user eve at 192.0.2.1 via 10.0.0.2")
    assert client(request(None)) == "127.0.0.1"  # an application without guard.Proxies


def test_the_login_is_original_login_read_once_through_the_store() -> None:
    cursor = FakeCursor([(["Login"], [("CORP\\relq-ops",)])])
    store = SqlStore(lambda: FakeConnection(cursor))
    assert store.login() == "CORP\\relq-ops"
    assert cursor.executed == ("SELECT ORIGINAL_LOGIN() AS Login;", ())
    cursor.executed = None
    assert store.login() == "CORP\\relq-ops" and cursor.executed is None  # not read again


# -- options ------------------------------------------------------------------------------------


def test_trusted_proxies_are_addresses_or_networks_and_never_everyone() -> None:
    assert guard.trusted_proxies(["10.0.0.7", "10.0.1.9/24, ::1", " ", "10.0.0.7"]) == (
        "10.0.0.7/32", "10.0.1.0/24", "::1/128")
    for bad in ("*", "proxy.example", "10.0.0.0/33", "10.0.0.1-10.0.0.9"):
        with pytest.raises(guard.Refused, match="is not an IP address or network"):
            guard.trusted_proxies([bad])


def test_the_user_header_needs_a_trusted_proxy_and_a_name_of_its_own() -> None:
    assert guard.user_header(" X-Forwarded-User ", ("10.0.0.2/32",)) == "X-Forwarded-User"
    assert guard.user_header(None, ()) is None
    with pytest.raises(guard.Refused, match="needs --trusted-proxy"):
        guard.user_header("X-Forwarded-User", ())
    for bad in ("X-Forwarded-For", "Host", "Cookie", "X User", "X-User:"):
        with pytest.raises(guard.Refused, match="is not a header that can name a user"):
            guard.user_header(bad, ("10.0.0.2/32",))


# -- refusals look like refusals ------------------------------------------------------------------


def top_boxes(html: str) -> list[tuple[str, str, str]]:
    """The boxes above the item's controls: (class, role, text)."""
    return [(c, r, re.sub(r"<[^>]+>", "", t)) for c, r, t in
            re.findall(r'<p class="(message|problem[^"]*)" role="(status|alert)">(.*?)</p>', html, re.S)]


def test_a_stale_token_is_a_refusal_not_a_success(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Pending")
    local = app(admin)
    page = local.get(f"/queues/Notification/items/{iso(key)}")
    admin.changed_behind.add(key)
    tok = re.search(r'name="token" value="([^"]+)"', page.text)[1]
    refused = local.post(f"/queues/Notification/items/{iso(key)}/Pause", data={"csrf": CSRF, "token": tok})
    assert refused.status_code == 409
    said = ("Not done. Pause refused: the item changed since you looked: here it is as it is now; try again "
            "if it still applies.")
    assert top_boxes(refused.text) == [("problem refusal", "alert", said)]
    assert 'class="message"' not in refused.text


@pytest.mark.parametrize("status, action, form, code, said", [
    ("Pending", "Retry", {}, 400,
     "Retry refused: its lifecycle does not allow that from its present status."),
    ("Error", "Reschedule", {"scheduled_for": ""}, 400, "Reschedule: give the new due time (UTC)."),
])
def test_every_refused_action_is_drawn_as_a_refusal(admin: FakeStore, status, action, form, code,
                                                    said) -> None:
    [key] = admin.add("Notification", 1, status)
    local = app(admin)
    page = local.get(f"/queues/Notification/items/{iso(key)}")
    tok = re.search(r'name="token" value="([^"]+)"', page.text)[1]
    refused = local.post(f"/queues/Notification/items/{iso(key)}/{action}",
                         data={"csrf": CSRF, "token": tok, **form})
    assert refused.status_code == code
    assert top_boxes(refused.text) == [("problem refusal", "alert", f"Not done. {said}")]


def test_a_done_action_is_the_green_box_alone(admin: FakeStore) -> None:
    [key] = admin.add("Notification", 1, "Failed")
    local = app(admin)
    done, _ = retry(local, key)
    assert top_boxes(local.get(done.headers["location"]).text) == [("message", "status", "Retry: done.")]


def test_the_refusal_box_has_a_look_of_its_own() -> None:
    css = (HERE / "static" / "dashboard.css").read_text()
    assert re.search(r"\.refusal \{[^}]*border-left: 6px solid var\(--red\)", css)
    assert re.search(r"\.message \{[^}]*#e3f5e8", css)  # the green box is the success's alone
