"""deploy --create-db: the database it creates gets an owner no person logs in as, unless
the deploying login may not give it away. Offline: a fake server answers the questions."""

from __future__ import annotations

import pytest

from relq import db
from relq.deploy.apply import ensure_database
from relq.errors import RelqError


class Server:
    """Answers ensure_database's questions and keeps the batches it runs."""

    def __init__(self, *, login: str = "deployer", sysadmin: bool = True, exists: bool = False,
                 logins: tuple[str, ...] = ("sa", "deployer", "CORP\\dba.team")) -> None:
        self.login, self.sysadmin, self.exists, self.logins = login, sysadmin, exists, logins
        self.batches: list[str] = []
        self._rows: list[tuple] = []
        self.description = None

    def cursor(self) -> Server:
        return self

    def execute(self, sql: str, *params) -> Server:
        if "SUSER_SNAME(0x01)" in sql:
            self._rows = [(params[0] or "sa", self.login, int(self.sysadmin), 5 if self.exists else None)]
        elif "SUSER_ID(?)" in sql:
            self._rows = [(1 if params[0] in self.logins else None,)]
        else:
            self.batches.append(sql)
            self._rows = []
        self.description = [("c",)] if self._rows else None
        return self

    def fetchall(self) -> list[tuple]:
        return self._rows

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        pass


@pytest.fixture
def server(monkeypatch) -> Server:
    holder = Server()
    monkeypatch.setattr(db, "connect", lambda conn_str, **_: holder)
    return holder


def test_a_created_database_is_given_to_sa_by_default(server: Server) -> None:
    ensure_database("SERVER=x", "relq_prod")
    assert server.batches == ["CREATE DATABASE [relq_prod];",
                              "ALTER AUTHORIZATION ON DATABASE::[relq_prod] TO [sa];"]


def test_the_owner_is_the_one_named_and_its_name_is_quoted_whole(server: Server) -> None:
    ensure_database("SERVER=x", "relq_prod", "CORP\\dba.team")
    assert server.batches[-1] == "ALTER AUTHORIZATION ON DATABASE::[relq_prod] TO [CORP\\dba.team];"


def test_the_deploying_login_as_owner_needs_no_change(server: Server) -> None:
    ensure_database("SERVER=x", "relq_prod", "deployer")
    assert server.batches == ["CREATE DATABASE [relq_prod];"]


def test_an_existing_database_is_left_as_it_is(monkeypatch) -> None:
    existing = Server(exists=True)
    monkeypatch.setattr(db, "connect", lambda conn_str, **_: existing)
    ensure_database("SERVER=x", "relq_prod", "nobody")
    assert existing.batches == []


@pytest.mark.parametrize("owner, kwargs, message", [
    ("nobody", {}, "--db-owner 'nobody': no such login on this server"),
    (None, {"sysadmin": False}, "--create-db: deployer is not sysadmin and would lose the database it "
                                "creates to sa: pass --db-owner deployer, or deploy as a sysadmin"),
])
def test_an_owner_that_cannot_be_is_refused_before_anything_is_created(monkeypatch, owner, kwargs,
                                                                          message) -> None:
    refusing = Server(**kwargs)
    monkeypatch.setattr(db, "connect", lambda conn_str, **_: refusing)
    with pytest.raises(RelqError) as refused:
        ensure_database("SERVER=x", "relq_prod", owner)
    assert str(refused.value) == message
    assert refusing.batches == []
