"""The message queues' dead letters, ``/dead-letters``: the messages consumers failed on too
often (dbo.DeadLetter_V; docs/message-queues.md, Dead letters), newest first, 50 a page,
paged by their key (DeadLetterId), never with OFFSET: the next page reads on from the last
letter shown, the previous one reads the other way from the first one shown, the last one
reads from the oldest. With actions allowed, ``POST /dead-letters/<id>/replay`` sends a
letter back to its queue (dbo.Replay_DeadLetter_trx) and ``.../delete`` deletes it
(dbo.Delete_DeadLetter_trx), each once: a letter's key is never reused, so when two operators
act on the same letter the second is refused (735716) and told so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from relq import db
from relq.dashboard import access
from relq.dashboard.store import DeadLetterStore, LetterPage
from relq.dashboard.web import Dashboard, Problem, client, log
from relq.errors import Msg, RelqError

PAGE = 50  # letters per page
ACTIONS = {"replay": "Replay", "delete": "Delete"}  # the URL's action: what the page calls it
KINDS = ("FifoQueue", "StrictFifoQueue", "LifoStack", "PendingQueue", "TransportMessage")  # dbo.MessageKind
# What a refusal means to the person who clicked (docs/errors.md).
REFUSALS = {
    Msg.DeadLetterGone: "another operator replayed or deleted it first; the list shows the letters as they "
                        "are now",
    Msg.InvalidParameter: "its queue refused the message, so the letter stays",
    229: "this login may not do that: replaying and deleting dead letters need the role QueueAdmin",
}


def look() -> access.Need:
    return access.Need("QueueAdmin", "the dead letters",
                       (("dbo.DeadLetter_V", "SELECT"), ("dbo.DeadLetterCount_V", "SELECT")))


def act() -> access.Need:
    return access.Need("QueueAdmin", "replaying and deleting dead letters",
                       (("dbo.Replay_DeadLetter_trx", "EXECUTE"), ("dbo.Delete_DeadLetter_trx", "EXECUTE")))


@dataclass(frozen=True)
class Letters:
    """The letters a page shows, newest first; ``page``: where they were read (a page before
    the first one shows the first one instead); ``earlier``, ``later``: whether there are
    newer letters than the first one shown, and older ones than the last."""

    rows: list[dict[str, Any]]
    page: LetterPage
    earlier: bool
    later: bool


def read_page(store: DeadLetterStore, page: LetterPage) -> Letters:
    """The page ``page`` asks for: each read takes one letter more than a page, which says
    whether there are more past it."""
    rows = store.dead_letters(page, PAGE + 1)
    more = len(rows) > PAGE
    if page.before is not None:  # newer letters, read the other way: the one too many is the newest
        if not more:  # fewer than a page: the first page
            return read_page(store, LetterPage())
        return Letters(rows[1:], page, True, True)
    if page.last:
        return Letters(rows[1:] if more else rows, page, more, False)
    return Letters(rows[:PAGE], page, page.after is not None, more)


def page_of(request: Request) -> LetterPage:
    """The page the URL asks for; a Problem (400) for a value that is no letter's key."""
    q = request.query_params
    keys = {}
    for name in ("after", "before"):
        value = q.get(name) or ""
        if value and not (value.isascii() and value.isdigit()):
            raise Problem(400, f"a page of dead letters is after or before a letter's number, "
                               f"not {value[:20]!r}")
        keys[name] = int(value) if value else None
    try:
        return LetterPage(keys["after"], keys["before"], q.get("last") == "1")
    except ValueError as exc:
        raise Problem(400, str(exc)) from None


def done_message(request: Request) -> str | None:
    """What the redirect after an action says was done: from its own parameters, each checked."""
    q = request.query_params
    action, letter = q.get("done"), q.get("letter", "")
    if action not in ACTIONS or not letter.isdigit():
        return None
    if action == "delete":
        return f"Deleted dead letter {letter}."
    kind, key = q.get("kind"), q.get("key", "")
    if kind not in KINDS:
        return f"Replayed dead letter {letter}."
    where = f"transport queue {q.get('queue', '')[:255]}" if kind == "TransportMessage" else f"dbo.{kind}"
    as_message = f" as message {key}" if key.isdigit() else ""
    return f"Replayed dead letter {letter}: {where} holds it again{as_message}, its failures counted afresh."


def summary(counts: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """How many letters wait, and per queue: 'FifoQueue 3', 'TransportMessage Sales 9'."""
    total = sum(int(c["DeadLetters"]) for c in counts)
    return total, [" ".join(str(p) for p in (c["Kind"], c["Queue"], c["DeadLetters"]) if p is not None)
                   for c in counts]


def routes(dash: Dashboard) -> list[Route]:
    def store() -> DeadLetterStore:
        return cast(DeadLetterStore, dash.store)

    def letters(request: Request, refusal: str | None = None, alert: str | None = None,
                status_code: int = 200) -> Response:
        dash.require(look())
        shown = read_page(store(), page_of(request))
        total, per_queue = summary(store().dead_letter_counts())
        cannot_act = access.missing(dash.store, act()) if dash.settings.allow_actions else None
        return dash.page(request, "deadletters.html", status_code=status_code, letters=shown, total=total,
                         per_queue=per_queue, message=None if refusal or alert else done_message(request),
                         refusal=refusal, alert=alert, act_problem=cannot_act,
                         allowed=dash.settings.allow_actions and not cannot_act, **pager(request, shown))

    async def action(request: Request) -> Response:
        form = await request.form()
        dash.check_form(form)
        return await run_in_threadpool(_action, request)

    def _action(request: Request) -> Response:
        name, letter = request.path_params["action"], int(request.path_params["letter"])
        if name not in ACTIONS:
            raise Problem(404, f"no action {name!r} on a dead letter (actions: {', '.join(ACTIONS)})")
        what = f"{ACTIONS[name]} of dead letter {letter}"
        try:
            dash.require(act())
        except db.SqlError as exc:
            if not exc.broken:
                raise
            return not_run(request, what, exc)
        except RelqError as exc:  # no connection could be opened: nothing was sent
            return not_run(request, what, exc)
        try:
            if name == "replay":
                replayed = store().replay_dead_letter(letter)
            else:
                store().delete_dead_letter(letter)
                replayed = {}
        except db.SqlError as exc:
            if exc.broken:
                return lost(request, what, exc)
            log.info("dashboard: %s by %s: refused, %s", what, client(request), exc)
            reason = REFUSALS.get(exc.number or 0, str(exc))
            if exc.number == Msg.InvalidParameter:
                reason = f"{reason} ({exc.text})"
            return letters(request, refusal=f"{what} refused: {reason}.",
                           status_code=409 if exc.number == Msg.DeadLetterGone else 400)
        except RelqError as exc:  # no connection could be opened: nothing was sent
            return not_run(request, what, exc)
        back = " ".join(str(v) for v in (replayed.get("Kind"), replayed.get("Queue")) if v)
        log.info("dashboard: %s by %s: done%s", what, client(request), f", back in {back}" if back else "")
        params: dict[str, Any] = {"done": name, "letter": letter}
        if replayed:
            params |= {k: v for k, v in (("kind", replayed.get("Kind")), ("queue", replayed.get("Queue")),
                                         ("key", replayed.get("MessageKey"))) if v is not None}
        url = request.url_for("dead_letters").include_query_params(**params)
        return RedirectResponse(str(url), status_code=303)

    # -- an action the database's absence stopped: whether it ran, said plainly -----------------

    def not_run(request: Request, what: str, exc: RelqError) -> Response:
        log.warning("dashboard: %s by %s: did not run, the database is away (%s)", what, client(request), exc)
        return dash.page(request, "problem.html", status_code=503,
                         line=f"{what} did not run: the dashboard cannot reach the database, so nothing was "
                              "sent. Try again once it answers.")

    def lost(request: Request, what: str, exc: db.SqlError) -> Response:
        log.warning("dashboard: %s by %s: may or may not have run, %s", what, client(request), exc)
        said = (f"{what} may or may not have run: the connection to the database broke before its answer "
                "came, and the procedure commits before it answers.")
        try:  # read on a new connection: the list as it is now says what happened
            return letters(request, status_code=503, alert=f"{said} Here are the letters as they are now: if "
                                                           "the letter is gone, it ran.")
        except RelqError:
            return dash.page(request, "problem.html", status_code=503,
                             line=f"{said} The letters cannot be read now either: look at them once the "
                                  "database answers, before you act again.")

    return [
        Route("/dead-letters", letters, name="dead_letters"),
        Route("/dead-letters/{letter:int}/{action}", action, methods=["POST"], name="dead_letter_action"),
    ]


def pager(request: Request, shown: Letters) -> dict[str, str | None]:
    """The links to the first, previous, next and last pages (None where there is none)."""
    base = request.url_for("dead_letters")
    rows = shown.rows
    first, last = (rows[0]["DeadLetterId"], rows[-1]["DeadLetterId"]) if rows else (None, None)
    return {
        "first_url": str(base) if shown.earlier else None,
        "previous_url": str(base.include_query_params(before=first)) if shown.earlier and first else None,
        "next_url": str(base.include_query_params(after=last)) if shown.later and last else None,
        "last_url": str(base.include_query_params(last=1)) if shown.later else None,
    }
