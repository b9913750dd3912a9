"""deploy --create-db: the database it creates gets an owner no person logs in as when a
sysadmin creates it, and any owner SQL Server would refuse is refused before anything is
created. Offline: a fake server answers the questions."""

from __future__ import annotations

import pytest

from relq import db
from relq.deploy.apply import ensure_database
from relq.errors import RelqError

# name: (type, is the deploying login, has a user in model)
PRINCIPALS = {"sa": ("S", False, False), "deployer": ("S", True, False),
              "CORP\\ada.lovelace": ("U", False, False), "CORP\\dba.team": ("G", False, False),
              "auditor": ("S", False, True)}


class Server:
    """Answers ensure_database's questions and keeps the batches it runs."""

    def __init__(self, *, sysadmin: bool = True, exists: bool = False, refuse_alter: bool = False) -> None:
        self.sysadmin, self.exists, self.refuse_alter = sysadmin, exists, refuse_alter
        self.batches: list[str] = []
        self._rows: list[tuple] = []
        self.description = None

    def cursor(self) -> Server:
        return self

    def execute(self, sql: str, *params) -> Server:
        if "SUSER_SNAME(0x01)" in sql:
            self._rows = [("sa", int(self.sysadmin), 5 if self.exists else None)]
        elif "sys.server_principals" in sql:
            found = PRINCIPALS.get(params[0])
            self._rows = [(found[0], int(found[1]), int(found[2]))] if found else []
        else:
            self.batches.append(sql)
            self._rows = []
            if self.refuse_alter and sql.startswith("ALTER AUTHORIZATION"):
                refused = "The proposed new database owner is already a user or aliased in the database."
                raise db.SqlError([db.ServerMessage(15110, refused, "42000")])
        self.description = [("c",)] if self._rows else None
        return self

    def fetchall(self) -> list[tuple]:
        return self._rows

    def nextset(self) -> bool:
        return False

    def close(self) -> None:
        pass


def serve(monkeypatch, **kwargs) -> Server:
    server = Server(**kwargs)
    monkeypatch.setattr(db, "connect", lambda conn_str, **_: server)
    return server


def test_a_sysadmin_gives_the_database_it_creates_to_sa(monkeypatch) -> None:
    server = serve(monkeypatch)
    ensure_database("SERVER=x", "relq_prod")
    assert server.batches == ["CREATE DATABASE [relq_prod];",
                              "ALTER AUTHORIZATION ON DATABASE::[relq_prod] TO [sa];"]


def test_the_owner_is_the_one_named_and_its_name_is_quoted_whole(monkeypatch) -> None:
    server = serve(monkeypatch)
    ensure_database("SERVER=x", "relq_prod", "CORP\\ada.lovelace")
    assert server.batches[-1] == "ALTER AUTHORIZATION ON DATABASE::[relq_prod] TO [CORP\\ada.lovelace];"


@pytest.mark.parametrize("owner", [None, "deployer"])
def test_a_login_that_is_not_sysadmin_keeps_the_database_it_creates(monkeypatch, owner) -> None:
    server = serve(monkeypatch, sysadmin=False)
    ensure_database("SERVER=x", "relq_prod", owner)
    assert server.batches == ["CREATE DATABASE [relq_prod];"]


def test_an_existing_database_is_left_as_it_is(monkeypatch) -> None:
    server = serve(monkeypatch, exists=True)
    ensure_database("SERVER=x", "relq_prod", "nobody")
    assert server.batches == []


@pytest.mark.parametrize("owner, sysadmin, message", [
    ("nobody", True, "--db-owner 'nobody': no SQL login or Windows user login of that name on this server "
                     "(a group or a role cannot own a database)"),
    ("CORP\\dba.team", True, "--db-owner 'CORP\\\\dba.team': no SQL login or Windows user login of that name "
                             "on this server (a group or a role cannot own a database)"),
    ("auditor", True, "--db-owner 'auditor': it has a user in model, which every new database copies, and an "
                      "owner may not have one"),
    ("sa", False, "--create-db: a login that is not sysadmin would lose the database it creates to sa: leave "
                  "out --db-owner, or deploy as a sysadmin"),
])
def test_an_owner_that_cannot_be_is_refused_before_anything_is_created(monkeypatch, owner, sysadmin,
                                                                          message) -> None:
    server = serve(monkeypatch, sysadmin=sysadmin)
    with pytest.raises(RelqError) as refused:
        ensure_database("SERVER=x", "relq_prod", owner)
    assert str(refused.value) == message
    assert server.batches == []


def test_a_database_whose_owner_sql_server_refuses_is_dropped_again(monkeypatch) -> None:
    server = serve(monkeypatch, refuse_alter=True)
    with pytest.raises(RelqError) as refused:
        ensure_database("SERVER=x", "relq_prod")
    assert str(refused.value).startswith("--db-owner 'sa': SQL Server refused it (")
    assert str(refused.value).endswith("); the new database was dropped again")
    assert server.batches == ["CREATE DATABASE [relq_prod];",
                              "ALTER AUTHORIZATION ON DATABASE::[relq_prod] TO [sa];",
                              "DROP DATABASE [relq_prod];"]
