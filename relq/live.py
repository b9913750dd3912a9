"""The live tier: a throwaway database on the SQL Server RELQ_MSSQL names.

`invoke test` runs it when RELQ_MSSQL is set: the project is deployed into a
fresh database, tSQLt is installed and the test classes of tests_tsqlt/ run
(JUnit XML under reports/), then pytest's mssql tests run against the same
database (RELQ_TEST_DATABASE), and the database is dropped.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

from relq import db
from relq.compiler.names import quote
from relq.deploy import tsqlt
from relq.deploy.apply import deploy
from relq.errors import RelqError

TEST_DATABASE = "RELQ_TEST_DATABASE"  # set for pytest: the database the live tier deployed
TSQLT_ZIP = "RELQ_TSQLT_ZIP"  # a tSQLt release zip already on disk
TSQLT_SHA256 = "RELQ_TSQLT_SHA256"  # the SHA-256 of a release other than the one pyproject.toml pins
DOWNLOADED_ZIP = "tSQLt.zip"  # the name a downloaded release gets in its folder
SKIPPED = ("live tier skipped: RELQ_MSSQL is not set (an ODBC connection string to a SQL Server "
           "2017 or later; see docs/live-tier.md)")


def live_target(environ: Mapping[str, str] = os.environ) -> db.Target | None:
    """The live tier runs only where RELQ_MSSQL says so (not from --conn or invoke.yaml)."""
    value = environ.get(db.ENV_VAR, "").strip()
    return db.Target(value, db.ENV_VAR) if value else None


@contextmanager
def throwaway_database(root: Path, target: db.Target, console: Console | None = None,
                       prefix: str = "relq_test") -> Iterator[str]:
    """A new database with the project deployed into it, dropped afterwards."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    try:
        deploy(root, target, create_db=name, console=console)
        yield name
    except BaseException:
        # the first failure is the one to see: a failing drop is only reported
        try:
            drop_database(target.conn_str, name)
        except RelqError as exc:
            print(f"could not drop the throwaway database {name}: {exc}", file=sys.stderr)
        raise
    drop_database(target.conn_str, name)


def drop_database(conn_str: str, name: str) -> None:
    """Drop ``name`` if it exists, closing the connections tests may have left open."""
    conn = db.connect(db.with_database(conn_str, "master"))
    try:
        cursor = conn.cursor()
        if db.query(cursor, "SELECT DB_ID(?);", name)[0][0] is not None:
            # one batch, so that no connection slips in between
            db.run_batch(cursor, f"ALTER DATABASE {quote(name)} SET SINGLE_USER WITH ROLLBACK IMMEDIATE;\n"
                                 f"DROP DATABASE {quote(name)};")
    finally:
        conn.close()


def tsqlt_release(root: Path, zip_path: str | None = None, url: str | None = None,
                  sha256: str | None = None, environ: Mapping[str, str] = os.environ,
                  download_to: Path | None = None) -> dict[str, str]:
    """The verified install scripts: from a zip on disk (--zip or RELQ_TSQLT_ZIP) or
    downloaded from --url or the pinned URL; checked against --sha256, RELQ_TSQLT_SHA256
    or the pin in pyproject.toml."""
    pin = tsqlt.pinned(root)
    checksum = sha256 or environ.get(TSQLT_SHA256, "").strip() or pin.sha256
    path = zip_path or environ.get(TSQLT_ZIP, "").strip()
    if not path:
        source = url or pin.url
        if not source:
            raise RelqError("no tSQLt release: pass --zip PATH or --url URL, or set RELQ_TSQLT_ZIP")
        folder = download_to or root / "reports"
        folder.mkdir(parents=True, exist_ok=True)
        path = str(tsqlt.fetch(source, folder / DOWNLOADED_ZIP))
    return tsqlt.read_release(Path(path), checksum)


def run_tsqlt(root: Path, conn_str: str, scripts: dict[str, str], report: Path) -> tsqlt.RunResult:
    """Install tSQLt, create the test classes, run them all; write the JUnit XML."""
    tsqlt.install(conn_str, scripts)
    files = sorted((root / "tests_tsqlt").glob("*.class.sql"))
    tsqlt.deploy_tests(conn_str, [(f.relative_to(root).as_posix(), f.read_text(encoding="utf-8-sig"))
                                  for f in files])
    result = tsqlt.run_all(conn_str)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(result.xml, encoding="utf-8")
    return result
