"""Every message a tSQLt test expects of relq can be the text relq registers: an
ExpectException with one of relq's numbers and an @ExpectedMessage or
@ExpectedMessagePattern that no text of that message can match fails on every server,
whatever the procedure does (as the Purge tests' patterns did when the texts gained
their `relq: ` mark). Read offline from tests_tsqlt and database/messages.

SQL Server formats a registered message by its placeholders (%s, %d, ...: any text
here) and ExpectException compares with LIKE (% any text, _ any one character),
ignoring case under the usual collations: both are patterns, and the check is that some
text matches both."""

from __future__ import annotations

import re
from functools import cache

import pytest

from relq.compiler import build
from relq.compiler.messages import message_files
from tests.conftest import REPO

EXPECT = re.compile(r"EXEC\s+tSQLt\.ExpectException\b(?P<args>(?:[^;']|'(?:[^']|'')*')*);", re.IGNORECASE)
ARGUMENT = re.compile(r"@(?P<name>\w+)\s*=\s*(?:N?'(?P<text>(?:[^']|'')*)'|(?P<number>\d+))")
PLACEHOLDER = re.compile(r"%[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:h|l|I64)?[disuoxXc]")
ANY, ONE = "\x00", "\x01"  # a pattern's "any text" and "any one character"


@cache
def registered() -> dict[int, str]:
    result = build(REPO, write=False)
    return {int(d.name): d.text or "" for d in message_files(result.facts).values()}


def expectations() -> list[tuple[str, int, str, str]]:
    """(file:line, number, argument, text) of each ExpectException with one of relq's numbers
    (database/messages/<number>.<Name>.sql) and a text."""
    relqs = {int(path.name.split(".")[0]) for path in (REPO / "database" / "messages").glob("*.sql")}
    found = []
    for path in sorted((REPO / "tests_tsqlt").glob("*.sql")):
        source = path.read_text(encoding="utf-8")
        for call in EXPECT.finditer(source):
            args = {m["name"]: m["text"] if m["text"] is not None else m["number"]
                    for m in ARGUMENT.finditer(call["args"])}
            number = args.get("ExpectedErrorNumber")
            for name in ("ExpectedMessage", "ExpectedMessagePattern"):
                if number is not None and int(number) in relqs and args.get(name) is not None:
                    line = source.count("\n", 0, call.start()) + 1
                    found.append((f"{path.name}:{line}", int(number), name, args[name].replace("''", "'")))
    return found


def from_message(text: str) -> str:
    """A registered text as a pattern: each placeholder any text, %% a percent sign."""
    parts = PLACEHOLDER.split(text.replace("%%", "\x02"))
    return ANY.join(parts).replace("\x02", "%")


def from_like(pattern: str) -> str:
    return pattern.replace("%", ANY).replace("_", ONE)


def meet(p: str, q: str) -> bool:
    """Whether some text matches both patterns (ANY: any text, ONE: any one character)."""
    p, q = p.casefold(), q.casefold()

    @cache
    def go(i: int, j: int) -> bool:
        if i == len(p) and j == len(q):
            return True
        if i < len(p) and p[i] == ANY and go(i + 1, j):
            return True
        if j < len(q) and q[j] == ANY and go(i, j + 1):
            return True
        if i == len(p) or j == len(q) or (p[i] == ANY and q[j] == ANY):
            return False
        a, b = p[i], q[j]
        if a in (ANY, ONE) or b in (ANY, ONE) or a == b:  # one character, taken by both
            return go(i if a == ANY else i + 1, j if b == ANY else j + 1)
        return False

    return go(0, 0)


def test_the_reading_finds_the_expectations_and_the_meeting_tells_patterns_apart() -> None:
    assert len(expectations()) >= 20
    owns = from_message("relq: %s owns its transaction: call it outside any transaction")
    assert meet(owns, from_like("relq: dbo.Purge_X_trx owns its transaction%"))
    assert meet(owns, from_like("%owns its%"))
    assert not meet(owns, from_like("dbo.Purge_X_trx owns its transaction%"))  # the mark is missing
    assert not meet(from_message("relq: %d items"), from_like("relq: 5 item"))


@pytest.mark.parametrize(("where", "number", "argument", "text"), expectations())
def test_an_expected_message_can_be_the_registered_text(where: str, number: int, argument: str,
                                                        text: str) -> None:
    pattern = from_like(text) if argument == "ExpectedMessagePattern" else text
    assert meet(from_message(registered()[number]), pattern), (
        f"{where}: @{argument} {text!r} can never be message {number}, {registered()[number]!r}")
