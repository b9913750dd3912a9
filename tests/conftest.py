"""Shared fixtures: copies of the clean fixture project to plant errors in and
build, and the live tier's server, databases and connections."""

from __future__ import annotations

import builtins
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from relq import db
from relq.compiler import BuildResult, build
from relq.compiler.names import quote
from relq.errors import RelqError
from relq.live import TEST_DATABASE, drop_database, live_target, throwaway_database

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
HEADER = "SET ANSI_NULLS ON;\nSET QUOTED_IDENTIFIER ON;\nGO\n"

# The `chromium` fixture for the tests that look at a page.
pytest_plugins = ["tests.browser"]


@dataclass
class Project:
    root: Path

    def read(self, path: str) -> str:
        return (self.root / path).read_text(encoding="utf-8")

    def write(self, path: str, text: str) -> None:
        file = self.root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text, encoding="utf-8")

    def edit(self, path: str, old: str, new: str) -> None:
        text = self.read(path)
        assert old in text, f"{old!r} is not in {path}"
        self.write(path, text.replace(old, new, 1))

    def line_of(self, path: str, needle: str) -> int:
        for number, text in enumerate(self.read(path).splitlines(), start=1):
            if needle in text:
                return number
        raise AssertionError(f"{needle!r} is not in {path}")

    def build(self) -> BuildResult:
        return build(self.root)

    def problems(self) -> list[str]:
        return [str(d) for d in self.build().diagnostics]


def project_copy(into: Path) -> Path:
    """A copy of this repository's project (database/, tests_tsqlt/, .sqlfluff) in ``into``/project,
    with the parse cache a build left (`invoke test` builds first): a build of the copy parses only
    the files that differ from this one's."""
    root = into / "project"
    for name in ("database", "tests_tsqlt"):
        shutil.copytree(REPO / name, root / name)
    shutil.copy(REPO / ".sqlfluff", root / ".sqlfluff")
    if (REPO / ".relq_cache").is_dir():
        shutil.copytree(REPO / ".relq_cache", root / ".relq_cache")
    return root


@pytest.fixture(scope="session")
def warm_clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The clean fixture, built once: its parse cache makes every copy quick."""
    root = tmp_path_factory.mktemp("warm") / "project"
    shutil.copytree(FIXTURES / "clean", root)
    assert build(root).ok
    return root


@pytest.fixture
def project(tmp_path: Path, warm_clean: Path) -> Project:
    """A copy of the clean fixture (with its cache, without its dist/) to plant errors in."""
    root = tmp_path / "project"
    shutil.copytree(warm_clean, root, ignore=shutil.ignore_patterns("dist"))
    return Project(root)


# -- ODBC: tests that load pyodbc or a driver skip, with one line saying what to install ---------


def require_pyodbc() -> Any:
    """pyodbc, or a skip of the test naming what to install (unixODBC's driver manager, which
    pyodbc links against, comes from the operating system, not from pip)."""
    try:
        return db.load_pyodbc()
    except RelqError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def without_unixodbc(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import pyodbc`` fails as it does where libodbc.so.2 is missing, whatever this machine has."""
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pyodbc":
            raise ImportError("libodbc.so.2: cannot open shared object file: No such file or directory")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)


def require_odbc_driver(name: str) -> Any:
    """pyodbc with the ODBC driver ``name`` installed, or a skip naming what to install."""
    pyodbc = require_pyodbc()
    if name not in pyodbc.drivers():
        pytest.skip(f"the ODBC driver {name} is not installed: install {db.INSTALL_DRIVER}")
    return pyodbc


# -- the live tier: tests marked mssql run against RELQ_MSSQL, and skip without it --------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if live_target() is not None:
        return
    skip = pytest.mark.skip(reason="RELQ_MSSQL is not set: no SQL Server for the live tier")
    for item in items:
        if "mssql" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def mssql() -> db.Target:
    """The server RELQ_MSSQL names."""
    target = live_target()
    if target is None:
        pytest.skip("RELQ_MSSQL is not set: no SQL Server for the live tier")
    return target


@pytest.fixture(scope="session")
def live_database(mssql: db.Target) -> Iterator[str]:
    """The project deployed once per session: the live tier's database under
    `invoke test`, or a throwaway one when pytest runs alone."""
    existing = os.environ.get(TEST_DATABASE, "").strip()
    if existing:
        yield existing
        return
    with throwaway_database(REPO, mssql) as name:
        yield name


def set_read_committed_snapshot(target: db.Target, database: str, on: bool) -> None:
    """Turn READ_COMMITTED_SNAPSHOT on or off (ALTER DATABASE needs the database to itself:
    ROLLBACK IMMEDIATE ends the other sessions' transactions), and check that it took."""
    conn = db.connect(db.with_database(target.conn_str, "master"))
    try:
        cursor = conn.cursor()
        db.run_batch(cursor, f"ALTER DATABASE {quote(database)} SET READ_COMMITTED_SNAPSHOT "
                             f"{'ON' if on else 'OFF'} WITH ROLLBACK IMMEDIATE;")
        state = db.query(cursor, "SELECT is_read_committed_snapshot_on FROM sys.databases WHERE name = ?;",
                         database)
        assert state == [(on,)], f"READ_COMMITTED_SNAPSHOT of {database} is {state}, not {on}"
    finally:
        conn.close()


@pytest.fixture(scope="session")
def rcsi_database(mssql: db.Target) -> Iterator[str]:
    """The project deployed once per session into a database with READ_COMMITTED_SNAPSHOT
    ON, as Azure SQL's databases and many busy servers run."""
    with throwaway_database(REPO, mssql) as name:
        set_read_committed_snapshot(mssql, name, True)
        yield name


# Each live suite of concurrent claims, receives and purges runs with RCSI off and on.
RCSI = pytest.mark.parametrize("rcsi", [False, True], ids=["rcsi-off", "rcsi-on"])


@pytest.fixture
def new_database(mssql: db.Target) -> Iterator[str]:
    """A database name nobody uses yet; whatever a test creates under it is dropped."""
    name = f"relq_test_{secrets.token_hex(4)}"
    yield name
    drop_database(mssql.conn_str, name)


@pytest.fixture
def member(mssql, live_database: str) -> Iterator[Any]:
    """``member(*roles)``: a connect function whose connections act as one new user (without
    login) that is a member of ``roles``, in the live tier's database. EXECUTE AS USER holds for
    the session, as for an application's login mapped to such a user; each connection goes back
    to the login (REVERT) and closes at the end, and the users are dropped."""
    admin = db.connect(db.with_database(mssql.conn_str, live_database))
    users: list[str] = []
    opened: list[Any] = []

    def make(*roles: str) -> Any:
        user = f"relq_member_{secrets.token_hex(3)}"
        members = " ".join(f"ALTER ROLE {role} ADD MEMBER [{user}];" for role in roles)
        db.run_batch(admin.cursor(), f"CREATE USER [{user}] WITHOUT LOGIN; {members}")
        users.append(user)

        def connect() -> Any:
            conn = db.connect(db.with_database(mssql.conn_str, live_database))
            db.run_batch(conn.cursor(), f"EXECUTE AS USER = N'{user}';")
            opened.append(conn)
            return conn

        return connect

    yield make
    for conn in opened:  # back to the login before the connection closes (or returns to a pool)
        with suppress(Exception):  # one its owner closed already
            db.run_batch(conn.cursor(), "IF USER_NAME() <> N'dbo' REVERT;")
            conn.close()
    for user in users:
        db.run_batch(admin.cursor(), f"DROP USER IF EXISTS [{user}];")
    admin.close()
