"""invoke register-messages against a real SQL Server (RELQ_MSSQL): a server whose master lacks
one of relq's messages raises it as 18054, which relq.db reads as relq's number; the command puts
the message back, in master, with relq's text, and a second run registers nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rich.console import Console

from relq import db
from relq.compiler import message_facts
from relq.compiler.messages import message_files, register_sql
from relq.deploy.preflight import project_messages
from relq.deploy.register import register_messages
from relq.errors import Msg
from tests.conftest import REPO

pytestmark = pytest.mark.mssql

DROPPED = Msg.DuplicateKey  # the message this test takes away for a moment, as a failover would


def in_master(target: db.Target, sql: str) -> list[tuple]:
    """The rows of ``sql``'s first result set, run in master ([] when it has none)."""
    conn = db.connect(db.with_database(target.conn_str, "master"))
    try:
        return db.query(conn.cursor(), sql)
    finally:
        conn.close()


def found(target: db.Target, numbers: list[int]) -> dict[int, tuple[int, str]]:
    listed = ", ".join(map(str, numbers))
    return {n: (severity, text) for n, severity, text in in_master(
        target, f"SELECT message_id, severity, [text] FROM sys.messages WHERE language_id = 1033 "
                f"AND message_id IN ({listed});")}


def raised(target: db.Target, number: int) -> db.SqlError:
    with pytest.raises(db.SqlError) as info:
        in_master(target, f"RAISERROR ({number}, 16, 1);")
    return info.value


@pytest.fixture
def without_one_message(mssql: db.Target) -> Iterator[int]:
    """The server with relq's message DROPPED gone from its master; registered again afterwards
    whatever the test did, so that the rest of the live tier finds it."""
    definitions = {int(d.name): d for d in message_files(message_facts(REPO)).values()}
    held = found(mssql, [DROPPED]).get(DROPPED)
    if held is not None and not held[1].startswith("relq: "):
        pytest.skip(f"message {DROPPED} holds another application's text on this server")
    if held is not None:
        in_master(mssql, f"EXEC sys.sp_dropmessage @msgnum = {int(DROPPED)}, @lang = 'all';")
    try:
        yield DROPPED
    finally:
        in_master(mssql, register_sql(definitions[DROPPED]))


def test_register_messages_puts_a_missing_message_back_and_its_number_with_it(
    mssql: db.Target, without_one_message: int
) -> None:
    number = without_one_message
    missing = raised(mssql, number)
    assert (missing.number, missing.raised_as) == (number, 18054)  # the 18054 text names it
    assert missing.text.startswith(f"Error {number}, severity 16, state 1 was raised, but no message")

    done = register_messages(REPO, mssql, console=Console(record=True, width=300))
    assert number in done.added
    expected = project_messages(message_facts(REPO))
    assert found(mssql, sorted(expected)) == {n: (m.severity, m.text) for n, m in expected.items()}

    registered = raised(mssql, number)
    assert (registered.number, registered.raised_as) == (number, None)
    assert registered.text.startswith("relq: ")

    again = register_messages(REPO, mssql, console=Console(record=True, width=300))
    assert (again.added, again.updated, again.unchanged) == ([], [], len(expected))


def test_an_unregistered_number_of_relqs_range_arrives_as_18054_and_is_read_as_itself(
    mssql: db.Target,
) -> None:
    """A number of relq's range the project does not use (yet): no server has it, so SQL Server
    sends 18054, and relq.db hands its callers the number raised."""
    spare = 735799
    if found(mssql, [spare]):
        pytest.skip(f"message {spare} is registered on this server")
    error = raised(mssql, spare)
    assert (error.number, error.raised_as) == (spare, 18054)
