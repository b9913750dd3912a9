"""`invoke register-messages` against a stand-in server that records what it is sent and keeps
its sys.messages: it registers what is missing or differs, in master, and nothing else; a second
run registers nothing; another application's text or a login without the right stops it before
any change. What SQL Server makes of the batches is the live tier's job (tests/live)."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from relq import db
from relq.compiler.messages import message_files, register_sql
from relq.deploy.preflight import PreflightFailed, project_messages
from relq.deploy.register import register_messages
from relq.errors import RelqError
from tests.conftest import Project
from tests.deploy.test_apply import Connection, FakeServerError, sql_log

TARGET = db.Target("DRIVER={FreeTDS};SERVER=node2;DATABASE=relq_db;UID=dba;PWD=p", "--conn")
REGISTRATION = re.compile(r"@msgnum = (\d+), @severity = (\d+), @msgtext = N'((?:[^']|'')*)'")


class Server(Connection):
    """A server's master: its sys.messages rows of the project's numbers, and the login's roles.
    Each registration batch it is sent writes its message, as sp_addmessage would."""

    def __init__(self, messages: list[tuple] | None = None, *, serveradmin: int = 1) -> None:
        super().__init__()
        self.messages = list(messages or [])
        self.serveradmin = serveradmin

    def answer(self, sql: str, params: tuple = ()) -> list[tuple] | None:
        if "sp_addmessage" in sql:
            number, severity, text = REGISTRATION.search(" ".join(sql.split())).groups()
            self.messages = [m for m in self.messages if m[0] != int(number)]
            self.messages.append((int(number), int(severity), text.replace("''", "'")))
            return None
        if "SERVERPROPERTY('ServerName')" in sql:
            return [(3, "16.0.4135.4", "SQLNODE2", 0, self.serveradmin, "dba")]
        return super().answer(sql, params)


@pytest.fixture
def server(monkeypatch):
    """``server["conn"]``: the connection every connect returns; ``server["asked"]``: the
    connection strings asked for."""
    holder: dict = {"asked": []}

    def connect(conn_str: str, **_) -> Connection:
        holder["asked"].append(conn_str)
        return holder["conn"]

    monkeypatch.setattr(db, "connect", connect)
    monkeypatch.setattr(db, "_is_pyodbc_error", lambda exc, kind="Error": isinstance(exc, FakeServerError))
    return holder


def ours(project: Project) -> list[tuple]:
    """The project's messages as sys.messages rows: (number, severity, text)."""
    return [(n, m.severity, m.text) for n, m in project_messages(project.build().facts).items()]


def test_it_registers_what_is_missing_or_differs_in_master_and_touches_no_database(
    project: Project, server
) -> None:
    registered = ours(project)  # 59001, 59002, 59003
    older = (59002, 16, "relq: %s: an older relq's text")
    conn = server["conn"] = Server([registered[0], older])
    console = Console(record=True, width=300)
    done = register_messages(project.root, TARGET, console=console)
    assert (done.server, done.added, done.updated, done.unchanged) == ("SQLNODE2", [59003], [59002], 1)
    assert done.summary() == ("register-messages done on SQLNODE2: 1 registered, 1 updated, 1 already as the "
                              "project has them")
    assert sorted(conn.messages) == sorted(registered)
    assert server["asked"] == ["DRIVER=FreeTDS;SERVER=node2;DATABASE=master;UID=dba;PWD=p"]
    sent = sql_log(conn)
    assert [int(REGISTRATION.search(s)[1]) for s in sent if "sp_addmessage" in s] == [59002, 59003]
    deployed = message_files(project.build().facts)["database/messages/59003.RowCount.sql"]
    assert " ".join(register_sql(deployed).split()) in sent  # the very batch deploy runs
    for batch in sent:  # what the server is asked, and the two registrations: no journal, lock or object
        assert not re.search(r"DeployJournal|sp_getapplock|CREATE|INSERT|UPDATE|USE ", batch), batch
    assert ("commit",) not in conn.log and conn.log[-1] == ("close",)  # autocommit: sp_addmessage's own
    text = console.export_text()
    assert "target: DRIVER=FreeTDS;SERVER=node2;DATABASE=relq_db;UID=dba;PWD=*** (from --conn)" in text
    assert "  server SQLNODE2: SQL Server 16.0.4135.4\n" in text
    assert "  messages: 1 of 3 registered as the project has them, 2 to register\n" in text
    assert "updated 59002: relq: %s must be called inside a transaction\n" in text
    assert f"registered 59003: {registered[2][2]}\n" in text


def test_a_second_run_registers_nothing(project: Project, server) -> None:
    conn = server["conn"] = Server()
    first = register_messages(project.root, TARGET, console=Console(record=True))
    assert len(first.added) == 3
    before = len([s for s in sql_log(conn) if "sp_addmessage" in s])
    second = register_messages(project.root, TARGET, console=Console(record=True))
    assert (second.added, second.updated, second.unchanged) == ([], [], 3)
    assert len([s for s in sql_log(conn) if "sp_addmessage" in s]) == before


def test_another_applications_text_stops_it_before_any_change(project: Project, server) -> None:
    conn = server["conn"] = Server([(59002, 16, "Order %d is locked")])
    console = Console(record=True, width=300)
    with pytest.raises(PreflightFailed, match="nothing registered: the preflight found 1 problem"):
        register_messages(project.root, TARGET, console=console)
    assert ("problem: message 59002 holds another application's text, which relq never overwrites: "
            "'Order %d is locked'") in console.export_text()
    assert not any("sp_addmessage" in s for s in sql_log(conn))
    assert conn.messages == [(59002, 16, "Order %d is locked")]


def test_a_login_without_serveradmin_is_stopped_only_when_a_message_is_to_be_written(
    project: Project, server
) -> None:
    conn = server["conn"] = Server(serveradmin=0)
    console = Console(record=True, width=300)
    with pytest.raises(PreflightFailed):
        register_messages(project.root, TARGET, console=console)
    assert "problem: login dba may not register messages" in console.export_text()
    assert not any("sp_addmessage" in s for s in sql_log(conn))
    server["conn"] = Server(ours(project), serveradmin=0)
    assert register_messages(project.root, TARGET, console=Console(record=True)).unchanged == 3


def test_a_connection_string_without_a_database_lands_in_master_too(project: Project, server) -> None:
    server["conn"] = Server()
    register_messages(project.root, db.Target("DRIVER={FreeTDS};SERVER=node2;UID=dba;PWD=p", "RELQ_MSSQL"),
                      console=Console(record=True))
    assert server["asked"] == ["DRIVER=FreeTDS;SERVER=node2;UID=dba;PWD=p;DATABASE=master"]


def test_a_message_file_the_build_would_refuse_stops_it_before_it_connects(project: Project, server) -> None:
    path = "database/messages/59002.OutsideTransaction.sql"
    project.edit(path, "N'relq: %s must", "N'%s must")
    with pytest.raises(RelqError) as refused:
        register_messages(project.root, TARGET, console=Console(record=True))
    assert str(refused.value).startswith(f"{path}:4: begin the text with 'relq: '")
    assert str(refused.value).endswith("run `invoke build` and fix the project's messages first")
    assert server["asked"] == []
