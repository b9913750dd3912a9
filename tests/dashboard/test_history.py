"""An item's full history, offline: every attempt's whole error and response on its page, escaped,
collapsed to a first line until opened, each reachable from the attempts' table; the item's own
long texts collapsed too; the copy buttons' script an external file (no inline script or style)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from html.parser import HTMLParser
from typing import Any

import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from relq.dashboard.app import Settings, create_app
from tests.dashboard.fake_store import T0, FakeStore


def traceback(size: int, last: str = "smtplib.SMTPRecipientsRefused: <script>alert('x')</script>") -> str:
    """A Python traceback of about ``size`` characters, one long token in it, ending in ``last``."""
    frames, n = [], 0
    while sum(map(len, frames)) < size - len(last) - 400:
        frames.append(f'  File "/srv/app/relq/worker/step_{n}.py", line {n + 10}, in handle\n'
                      f"    result = handler(item, attempt={n})  # & < > \" '\n")
        n += 1
    token = "x" * 300  # a token longer than any line: the box must break it, not scroll sideways
    return "Traceback (most recent call last):\n" + "".join(frames) + f"  payload={token}\n{last}"


def iso(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


def attempt(key: datetime, n: int, outcome: str | None, error: str = "",
            response: str = "") -> dict[str, Any]:
    return {"StartedAt": key + timedelta(minutes=n), "AttemptNum": n, "Step": None,
            "LockedBy": f"mail-1/{n}", "Outcome": outcome, "Duration": 400 + n, "Response": response,
            "Error": error}


class Page(HTMLParser):
    """What the tests look at in a page: each element with its attributes and text, by id; the
    details elements; every script and style attribute."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.by_id: dict[str, dict[str, Any]] = {}
        self.details: list[dict[str, Any]] = []
        self.scripts: list[dict[str, str | None]] = []
        self.styled: list[str] = []
        self.links: list[str] = []
        self.buttons: list[dict[str, str | None]] = []
        self._open: list[dict[str, Any]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = {"tag": tag, "attrs": dict(attrs), "text": []}
        if "id" in element["attrs"]:
            self.by_id[element["attrs"]["id"]] = element
        if tag == "details":
            self.details.append(element)
        if tag == "script":
            self.scripts.append(element["attrs"])
        if tag == "a" and (element["attrs"].get("href") or "").startswith("#"):
            self.links.append(element["attrs"]["href"][1:])
        if tag == "button":
            self.buttons.append(element["attrs"])
        if "style" in element["attrs"]:
            self.styled.append(tag)
        if tag not in ("meta", "link", "input", "br"):
            self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop()["tag"] == tag:
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element["text"].append(data)

    def text(self, element_id: str) -> str:
        return "".join(self.by_id[element_id]["text"])


@pytest.fixture
def admin() -> FakeStore:
    return FakeStore.with_roles("QueueMonitor", "QueueAdmin")


def failed_item(store: FakeStore, error: str, attempts: list[dict[str, Any]]) -> datetime:
    [key] = store.add("Notification", 1, "Failed", error=error)
    store.attempts_by_key[("Notification", key)] = attempts
    return key


def page_of(store: FakeStore, key: datetime) -> tuple[str, Page]:
    response = TestClient(create_app(store, Settings())).get(f"/queues/Notification/items/{iso(key)}")
    assert response.status_code == 200, response.text
    return response.text, Page(response.text)


def test_every_attempts_whole_error_and_response_is_on_the_page_escaped(admin) -> None:
    first, second = traceback(31_105), traceback(30_000, last="TimeoutError: the relay did not answer")
    reply = "250 2.0.0 queued as <4F2A> & more\n" + "250-" * 2_000
    key = failed_item(admin, second, [attempt(T0, 3, "Failed", second), attempt(T0, 2, "Error", "", reply),
                                      attempt(T0, 1, "Error", first, "421 <busy>")])
    html, page = page_of(admin, key)
    assert page.text("attempt-1-error-text") == second  # whole, character for character
    assert page.text("attempt-2-response-text") == reply
    assert page.text("attempt-3-error-text") == first  # the 31,105-character traceback of attempt 1
    assert page.text("attempt-3-response") == "421 <busy>"  # one short line: shown as it is
    assert page.text("column-Error-text") == second  # the item's own current error
    # escaped: the <script> of an error is text, never markup; the page's one script is texts.js
    assert str(escape(first)) in html and "<script>alert" not in html
    assert page.scripts == [{"src": "http://testserver/static/texts.js", "defer": None}]
    assert page.styled == []  # no style attribute: the CSP forbids them


def test_long_texts_are_collapsed_to_their_first_and_last_line_with_their_size(admin) -> None:
    error = traceback(30_000)
    key = failed_item(admin, error, [attempt(T0, 1, "Failed", error)])
    html, page = page_of(admin, key)
    assert len(page.details) == 2 and all("open" not in d["attrs"] for d in page.details)  # collapsed
    summary = re.search(r'id="attempt-1-error">\s*<summary>(.*?)</summary>', html, re.S)[1]
    shown = " ".join(re.sub(r"<[^>]+>", "", summary).split())
    lines = error.splitlines()
    assert shown == (f"Traceback (most recent call last): … {escape(lines[-1])} "
                     f"{len(error):,} characters, {len(lines):,} lines")
    # what is shown before opening is short: the page does not grow with the text
    before_text = re.sub(r"<pre[^>]*>.*?</pre>", "", html, flags=re.S)
    assert len(before_text) < 12_000 and len(html) > 60_000
    # each collapsed text has a copy button for its box (shown by texts.js, hidden without it)
    assert {b["data-copy"] for b in page.buttons} == {"attempt-1-error-text", "column-Error-text"}
    assert all("hidden" in b for b in page.buttons)


def test_the_attempts_table_links_each_text_in_full_and_keeps_a_row_per_attempt(admin) -> None:
    key = failed_item(admin, "SMTP 550", [attempt(T0, 3, "Failed", "SMTP 550 5.1.1 mailbox unavailable"),
                                          attempt(T0, 2, None),
                                          attempt(T0, 1, "Error", traceback(2_000), "ok")])
    html, page = page_of(admin, key)
    start = html.index('<table class="attempts">')
    table = html[start:html.index("</table>", start)]
    assert len(re.findall(r"<tr>", table.split("<tbody>")[1])) == 3
    # a cell shows a text's first line, and its last when it has several (a traceback's exception)
    cells = re.findall(r'<a href="#attempt-\d-(?:error|response)" class="to-text">(.*?)</a>', table)
    assert cells == ["SMTP 550 5.1.1 mailbox unavailable", "ok",
                     "Traceback (most recent call last): … smtplib.SMTPRecipientsRefused: &lt;script&gt;…"]
    assert page.links == ["attempt-1-error", "attempt-3-response", "attempt-3-error"]
    assert all(target in page.by_id for target in page.links)  # each link has its text
    assert "attempt-2" not in page.by_id  # the running attempt has no text yet: no section
    assert page.text("attempt-1-error") == "SMTP 550 5.1.1 mailbox unavailable"
    assert page.by_id["attempt-3-error"]["tag"] == "details"
    assert "Errors and responses in full" in html


def test_short_texts_stay_as_they_are_and_an_item_without_attempts_has_no_full_texts(admin) -> None:
    key = failed_item(admin, "SMTP 550 mailbox unavailable", [])
    html, page = page_of(admin, key)
    assert "<dt>Error</dt><dd>SMTP 550 mailbox unavailable</dd>" in html
    assert page.details == [] and page.buttons == []
    assert "No attempts yet." in html and "Errors and responses in full" not in html
    # one line of 161 characters is long: collapsed as well, as a text of two short lines is
    for error in ("e" * 161, "first\nsecond"):
        admin.items_by_queue["Notification"][0]["Error"] = error
        _, page = page_of(admin, key)
        assert [d["attrs"]["id"] for d in page.details] == ["column-Error"]
        assert page.text("column-Error-text") == error


def test_the_copy_script_is_served_as_a_file_of_its_own(admin) -> None:
    app = TestClient(create_app(admin, Settings()))
    script = app.get("/static/texts.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert "navigator.clipboard" in script.text and "execCommand('copy')" in script.text
