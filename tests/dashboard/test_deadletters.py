"""The dead letters' page, offline, against a store that answers as dbo.DeadLetter_V,
dbo.DeadLetterCount_V and the replay and delete procedures do (tests/dashboard/fake_store.py):
the list, newest first and paged by key; replay and delete, with the CSRF token and the
grants they need; a second operator's refusal; an action the database's absence stopped; the
SQL the store sends; and the page in headless Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from relq import db
from relq.dashboard.app import Settings, create_app
from relq.dashboard.deadletters import PAGE
from relq.dashboard.store import LetterPage, SqlStore, dead_letters_sql
from relq.errors import RelqError
from tests.browser import screenshot
from tests.dashboard.fake_store import FakeStore, refused
from tests.dashboard.serving import serving
from tests.test_db import FakeConnection, FakeCursor

CSRF = "the-dashboards-csrf-token"
WAIT_S = 15  # how long a page may take in Chromium to show what it should (a bound, not a measurement)


def client(store: FakeStore, **settings) -> TestClient:
    return TestClient(create_app(store, Settings(csrf=CSRF, **settings)), follow_redirects=False)


def shown(html: str) -> list[int]:
    """The letters a page lists, in its order."""
    return [int(n) for n in re.findall(r'<tr data-letter="(\d+)">', html)]


def link(html: str, label: str) -> str | None:
    found = re.search(rf'href="([^"]+)">{label}</a>', html)
    return found[1].replace("&amp;", "&") if found else None


@pytest.fixture
def admin() -> FakeStore:
    return FakeStore.with_roles("QueueMonitor", "QueueAdmin").grant_letters("QueueMonitor", "QueueAdmin")


# -- the list --------------------------------------------------------------------------------


def test_the_letters_are_listed_newest_first_with_how_many_wait_per_queue(admin: FakeStore) -> None:
    admin.add_letters(2, "FifoQueue", error="HTTP 500 from the billing API")
    admin.add_letters(1, "TransportMessage", queue="Sales", deliveries=3)
    page = client(admin).get("/dead-letters")
    assert page.status_code == 200
    assert shown(page.text) == [3, 2, 1]
    assert "3 dead letters waiting: FifoQueue 2, TransportMessage Sales 1." in page.text
    assert "HTTP 500 from the billing API" in page.text and "TransportMessage <b>Sales</b>" in page.text
    # Read only: no action is offered, and no form.
    assert "<form" not in page.text and "<button" not in page.text


def test_no_letters_says_so(admin: FakeStore) -> None:
    page = client(admin).get("/dead-letters")
    assert "No dead letters: every message that failed is still in its queue" in page.text
    assert shown(page.text) == [] and link(page.text, "Next page") is None


def test_the_letters_are_paged_by_key_never_by_offset(admin: FakeStore) -> None:
    ids = admin.add_letters(PAGE + 5)
    app = client(admin)
    first = app.get("/dead-letters")
    assert shown(first.text) == list(reversed(ids))[:PAGE]
    assert link(first.text, "First page") is None and link(first.text, "Previous page") is None
    next_url = link(first.text, "Next page")
    assert next_url.endswith(f"/dead-letters?after={ids[5]}")
    second = app.get(next_url)
    assert shown(second.text) == list(reversed(ids[:5]))
    assert link(second.text, "Next page") is None and link(second.text, "Last page") is None
    assert link(second.text, "First page").endswith("/dead-letters")
    back = app.get(link(second.text, "Previous page"))
    assert shown(back.text) == list(reversed(ids))[:PAGE]
    last = app.get(link(first.text, "Last page"))
    assert shown(last.text) == list(reversed(ids[:PAGE]))  # the oldest 50, newest first
    assert link(last.text, "Next page") is None
    assert link(last.text, "Previous page").endswith(f"before={ids[PAGE - 1]}")


def test_a_page_before_the_first_shows_the_first(admin: FakeStore) -> None:
    ids = admin.add_letters(8)
    page = client(admin).get(f"/dead-letters?before={ids[5]}")  # two newer letters: fewer than a page
    assert shown(page.text) == list(reversed(ids))
    assert link(page.text, "Previous page") is None


def test_a_page_that_names_no_letter_is_refused_in_one_line(admin: FakeStore) -> None:
    page = client(admin).get("/dead-letters?after=yesterday")
    assert page.status_code == 400 and "a letter&#39;s number, not &#39;yesterday&#39;" in page.text
    both = client(admin).get("/dead-letters?after=3&before=9")
    assert both.status_code == 400 and "not several" in both.text


def test_a_long_error_is_collapsed_whole_and_escaped(admin: FakeStore) -> None:
    trace = "Traceback (most recent call last):\n" + '  File "consumer.py", line 9\n' * 800
    trace += "<script>x</script>"
    admin.add_letters(1, error=trace)
    admin.add_letters(1, error="short")
    page = client(admin).get("/dead-letters")
    details = re.search(r"<details><summary>(.*?)</summary><pre>(.*?)</pre></details>", page.text, re.S)
    assert details[1].startswith("Traceback (most recent call last):") and details[1].endswith("…")
    assert details[2].count("consumer.py") == 800 and details[2].endswith("&lt;script&gt;x&lt;/script&gt;")
    assert "<script>x" not in page.text
    assert page.text.count("<details>") == 1  # a short error is shown as it is


def test_without_queue_admin_the_page_names_the_missing_role() -> None:
    monitor = FakeStore.with_roles("QueueMonitor").grant_letters("QueueMonitor")
    page = client(monitor).get("/dead-letters")
    assert page.status_code == 403
    assert "the dead letters needs the role QueueAdmin" in page.text and "dbo.DeadLetter_V" in page.text


# -- replay and delete ------------------------------------------------------------------------


def post(app: TestClient, letter: int, action: str, csrf: str | None = CSRF):
    return app.post(f"/dead-letters/{letter}/{action}", data={} if csrf is None else {"csrf": csrf})


def test_with_actions_each_letter_offers_replay_and_delete_with_the_csrf_token(admin: FakeStore) -> None:
    admin.add_letters(2)
    page = client(admin, allow_actions=True).get("/dead-letters")
    forms = re.findall(r'<form method="post" action="([^"]+)">\s*'
                       r'<input type="hidden" name="csrf" value="([^"]+)">', page.text)
    assert [url.rsplit("/dead-letters/", 1)[1] for url, _ in forms] == ["2/replay", "2/delete", "1/replay",
                                                                          "1/delete"]
    assert {token for _, token in forms} == {CSRF}


def test_a_replay_sends_the_letter_back_and_says_where(admin: FakeStore) -> None:
    ids = admin.add_letters(2)
    app = client(admin, allow_actions=True)
    done = post(app, ids[0], "replay")
    assert done.status_code == 303
    location = done.headers["location"]
    assert location.endswith(f"/dead-letters?done=replay&letter={ids[0]}&kind=FifoQueue&key=5001")
    after = app.get(done.headers["location"])
    assert (f'<p class="message" role="status">Replayed dead letter {ids[0]}: dbo.FifoQueue holds it '
            f"again as message 5001, its failures counted afresh.</p>") in after.text
    assert shown(after.text) == [ids[1]] and admin.letter_acts == [("replay", ids[0])]


def test_a_replayed_transport_letter_names_its_queue(admin: FakeStore) -> None:
    (letter,) = admin.add_letters(1, "TransportMessage", queue="Sales")
    app = client(admin, allow_actions=True)
    after = app.get(post(app, letter, "replay").headers["location"])
    assert f"Replayed dead letter {letter}: transport queue Sales holds it again, its failures" in after.text


def test_a_delete_drops_the_letter(admin: FakeStore) -> None:
    ids = admin.add_letters(2)
    app = client(admin, allow_actions=True)
    after = app.get(post(app, ids[1], "delete").headers["location"])
    assert f"Deleted dead letter {ids[1]}." in after.text and shown(after.text) == [ids[0]]
    assert admin.letter_acts == [("delete", ids[1])]


def test_the_message_of_a_redirect_says_only_what_its_parameters_can_be(admin: FakeStore) -> None:
    app = client(admin)
    forged = app.get("/dead-letters?done=replay&letter=7&kind=<b>x</b>&key=1")
    assert "Replayed dead letter 7." in forged.text and "<b>x</b>" not in forged.text
    assert 'class="message"' not in app.get("/dead-letters?done=drop&letter=7").text
    assert 'class="message"' not in app.get("/dead-letters?done=delete&letter=7;x").text


def test_a_second_operator_is_refused_and_told_so_as_a_refusal(admin: FakeStore) -> None:
    ids = admin.add_letters(2)
    admin.letters_behind = {ids[0]}  # another operator replays it between the page and the click
    page = post(client(admin, allow_actions=True), ids[0], "delete")
    assert page.status_code == 409
    assert (f'<p class="problem refusal" role="alert">Delete of dead letter {ids[0]} refused: another '
            "operator replayed or deleted it first") in page.text
    assert 'class="message"' not in page.text and shown(page.text) == [ids[1]]


def test_a_replay_its_queue_refuses_keeps_the_letter_and_says_why(admin: FakeStore) -> None:
    (letter,) = admin.add_letters(1, "TransportMessage", queue="Gone")
    admin.replay_refusal = refused(735707, "dbo.Send_TransportMessage_utx: @Queue names no declared "
                                           "transport queue")
    page = post(client(admin, allow_actions=True), letter, "replay")
    assert page.status_code == 400
    assert ("its queue refused the message, so the letter stays (relq: dbo.Send_TransportMessage_utx: "
            "@Queue names no declared") in page.text
    assert shown(page.text) == [letter]


def test_an_action_needs_the_csrf_token_and_actions_allowed(admin: FakeStore) -> None:
    (letter,) = admin.add_letters(1)
    forged = post(client(admin, allow_actions=True), letter, "replay", csrf="guessed")
    assert forged.status_code == 403 and "did not come from this dashboard" in forged.text
    off = post(client(admin), letter, "replay")
    assert off.status_code == 403 and "actions are off" in off.text
    assert admin.letter_acts == [] and len(admin.letters) == 1


def test_an_unknown_action_is_not_found(admin: FakeStore) -> None:
    (letter,) = admin.add_letters(1)
    page = post(client(admin, allow_actions=True), letter, "purge")
    assert page.status_code == 404 and "no action &#39;purge&#39;" in page.text


def test_without_the_procedures_grants_no_action_is_offered_and_none_runs() -> None:
    reader = FakeStore.with_roles("QueueMonitor")
    reader.granted |= {("dbo.DeadLetter_V", "SELECT"), ("dbo.DeadLetterCount_V", "SELECT")}
    (letter,) = reader.add_letters(1)
    app = client(reader, allow_actions=True)
    page = app.get("/dead-letters")
    assert "replaying and deleting dead letters needs the role QueueAdmin" in page.text
    assert "<form" not in page.text
    refused_page = post(app, letter, "replay")
    assert refused_page.status_code == 403 and reader.letter_acts == []


class Broken(FakeStore):
    """A store whose replay loses its connection: before the call (a connect that fails) or
    after the procedure ran (its answer lost)."""

    failure: Exception | None = None

    def replay_dead_letter(self, dead_letter_id: int):
        if isinstance(self.failure, db.SqlError):  # the procedure ran; its answer is lost on the way
            super().replay_dead_letter(dead_letter_id)
        raise self.failure


def test_a_replay_whose_answer_was_lost_says_it_may_have_run_and_shows_the_letters_now() -> None:
    store = Broken.with_roles("QueueMonitor", "QueueAdmin").grant_letters("QueueAdmin")
    ids = store.add_letters(2)
    store.failure = db.SqlError([db.ServerMessage(0, "Communication link failure", "08S01")])
    page = post(client(store, allow_actions=True), ids[1], "replay")
    assert page.status_code == 503
    assert f"Replay of dead letter {ids[1]} may or may not have run" in page.text
    assert "if the letter is gone, it ran" in page.text and shown(page.text) == [ids[0]]


def test_a_replay_that_could_not_reach_the_database_says_it_did_not_run() -> None:
    store = Broken.with_roles("QueueMonitor", "QueueAdmin").grant_letters("QueueAdmin")
    (letter,) = store.add_letters(1)
    store.failure = RelqError("cannot connect to SERVER=db1 as relq")
    page = post(client(store, allow_actions=True), letter, "replay")
    assert page.status_code == 503
    assert f"Replay of dead letter {letter} did not run: the dashboard cannot reach the database" in page.text
    assert "db1" not in page.text and len(store.letters) == 1


# -- the store's SQL -------------------------------------------------------------------------


def test_a_page_of_letters_is_one_keyset_read_of_the_key_never_an_offset() -> None:
    first, none = dead_letters_sql(LetterPage(), 51)
    assert first.startswith("SELECT TOP (51) [DeadLetterId], [Kind], [Queue], [MessageKey]")
    assert first.endswith("FROM dbo.DeadLetter_V ORDER BY DeadLetterId DESC;") and none == []
    after, params = dead_letters_sql(LetterPage(after=40), 51)
    assert after.endswith("WHERE DeadLetterId < CAST(? AS BIGINT) ORDER BY DeadLetterId DESC;")
    assert params == [40]
    before, params = dead_letters_sql(LetterPage(before=40), 51)
    assert before.endswith("WHERE DeadLetterId > CAST(? AS BIGINT) ORDER BY DeadLetterId ASC;")
    assert params == [40]
    last, _ = dead_letters_sql(LetterPage(last=True), 51)
    assert last.endswith("FROM dbo.DeadLetter_V ORDER BY DeadLetterId ASC;")
    assert "[Payload]" not in first and "OFFSET" not in first + after + before + last


def test_the_sql_store_returns_a_page_read_backward_newest_first() -> None:
    cursor = FakeCursor([(["DeadLetterId"], [(41,), (42,), (43,)])])
    rows = SqlStore(lambda: FakeConnection(cursor)).dead_letters(LetterPage(before=40), 3)
    assert [r["DeadLetterId"] for r in rows] == [43, 42, 41]
    assert cursor.executed[1] == (40,)


def test_the_sql_store_replays_and_deletes_through_their_procedures() -> None:
    cursor = FakeCursor([(["Kind", "Queue", "MessageKey", "MessageId"], [("FifoQueue", None, 77, None)]),
                         (["return_code"], [(0,)])])
    replayed = SqlStore(lambda: FakeConnection(cursor)).replay_dead_letter(12)
    assert replayed == {"Kind": "FifoQueue", "Queue": None, "MessageKey": 77, "MessageId": None}
    assert "EXEC @rc = dbo.Replay_DeadLetter_trx @DeadLetterId = ?;" in cursor.executed[0]
    assert cursor.executed[1] == (12,)
    cursor = FakeCursor([(["return_code"], [(0,)])])
    SqlStore(lambda: FakeConnection(cursor)).delete_dead_letter(12)
    assert "EXEC @rc = dbo.Delete_DeadLetter_trx @DeadLetterId = ?;" in cursor.executed[0]
    counts = FakeCursor([(["Kind", "Queue", "DeadLetters", "LastDeadLetteredAt"],
                          [("FifoQueue", None, 3, None)])])
    assert SqlStore(lambda: FakeConnection(counts)).dead_letter_counts()[0]["DeadLetters"] == 3
    assert "FROM dbo.DeadLetterCount_V" in counts.executed[0]


def test_a_page_is_after_before_or_last_not_several() -> None:
    with pytest.raises(ValueError, match="not several"):
        LetterPage(after=1, last=True)


# -- in headless Chromium --------------------------------------------------------------------



@pytest.fixture
def served() -> Iterator[tuple[str, FakeStore]]:
    """A dashboard with actions allowed, over letters of three queues; one error is a long traceback."""
    store = FakeStore.with_roles("QueueMonitor", "QueueAdmin").grant_letters("QueueMonitor", "QueueAdmin")
    store.add_letters(2, "FifoQueue", error="KeyError: 'customer_id' in handle_order")
    store.add_letters(1, "StrictFifoQueue", error="Traceback (most recent call last):\n"
                      + "".join(f'  File "consumer.py", line {n}, in step_{n}\n    step_{n + 1}(payload)\n'
                                for n in range(1, 40))
                      + "ValueError: the order total is negative", deliveries=5)
    store.add_letters(1, "TransportMessage", queue="Sales", error="timeout after 30 s calling the CRM",
                      deliveries=3)
    app = create_app(store, Settings(allow_actions=True, refresh_s=1.0))
    with serving(app) as url:
        yield url, store


def test_dead_letters_expand_and_replay_in_chromium(chromium, served, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    base, store = served
    chromium.get(f"{base}/dead-letters")
    rows = chromium.find_elements(By.CSS_SELECTOR, "tr[data-letter]")
    assert [r.get_attribute("data-letter") for r in rows] == ["4", "3", "2", "1"]
    trace = chromium.find_element(By.CSS_SELECTOR, 'tr[data-letter="3"] details')
    assert not trace.find_element(By.TAG_NAME, "pre").is_displayed()  # collapsed at first
    trace.find_element(By.TAG_NAME, "summary").click()
    pre = trace.find_element(By.TAG_NAME, "pre")
    assert pre.is_displayed() and "ValueError: the order total is negative" in pre.text
    assert pre.size["height"] <= 300  # its own box scrolls: the row does not grow with the trace
    screenshot(chromium, tmp_path, "dead-letters")

    chromium.find_element(By.CSS_SELECTOR, 'tr[data-letter="4"] button.retry').click()
    status = WebDriverWait(chromium, WAIT_S).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "p.message[role=status]"))
    assert "Replayed dead letter 4: transport queue Sales holds it again" in status[0].text
    left = chromium.find_elements(By.CSS_SELECTOR, "tr[data-letter]")
    assert [r.get_attribute("data-letter") for r in left] == ["3", "2", "1"]
    assert store.letter_acts == [("replay", 4)]
    screenshot(chromium, tmp_path, "dead-letters-replayed")
