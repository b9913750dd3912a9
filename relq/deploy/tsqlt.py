"""tSQLt: installing it from its official release zip, deploying the project's
test classes, and running them with JUnit output.

The zip is verified against a pinned SHA-256 before anything in it runs:
PrepareServer.sql changes server settings (it enables CLR and trusts tSQLt's
assembly key), so only a zip someone has vetted may run.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from relq import db
from relq.deploy.batches import split_batches
from relq.errors import RelqError

SCRIPTS = ("PrepareServer.sql", "tSQLt.class.sql")
# SQL Server's answers when CLR is off, strict, or the login may not change it.
CLR_ERRORS = frozenset({6263, 6266, 10314, 10327, 10343, 15247, 15151})


@dataclass(frozen=True)
class Pin:
    url: str
    sha256: str


def pinned(root: Path) -> Pin:
    """The release the project pins in pyproject.toml, [tool.relq.tsqlt]."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    section = data.get("tool", {}).get("relq", {}).get("tsqlt", {})
    return Pin(section.get("url", ""), section.get("sha256", "").strip().lower())


RETRY_WAITS = (5, 20)  # seconds before the second and the third try: a site's brief outage is no failure


def fetch(url: str, dest: Path, sleep: Callable[[float], None] = time.sleep) -> Path:
    """Download the release zip (users' CI; this project's own machines cannot), trying three
    times."""
    waits = iter(RETRY_WAITS)
    while True:
        try:
            with urllib.request.urlopen(url, timeout=60) as response, dest.open("wb") as out:
                out.write(response.read())
            return dest
        except OSError as exc:
            wait = next(waits, None)
            if wait is None:
                raise RelqError(f"cannot download tSQLt from {url} (three tries): {exc}; pass --zip PATH "
                                f"instead") from None
            sleep(wait)


def read_release(zip_path: Path, sha256: str) -> dict[str, str]:
    """The two install scripts of a release zip whose SHA-256 is ``sha256``."""
    if not sha256:
        raise RelqError("no SHA-256 pinned for the tSQLt zip: verify the release, then set "
                        "[tool.relq.tsqlt] sha256 in pyproject.toml (or pass --sha256)")
    try:
        actual = hashlib.sha256(zip_path.read_bytes()).hexdigest()
    except OSError as exc:
        raise RelqError(f"cannot read {zip_path}: {exc.strerror}") from None
    if actual != sha256.lower():
        raise RelqError(f"{zip_path}: SHA-256 is {actual}, but {sha256} is pinned: refusing to "
                        f"install a tSQLt release nobody vetted")
    scripts: dict[str, str] = {}
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            name = info.filename.rsplit("/", 1)[-1]
            for wanted in SCRIPTS:
                if name.casefold() == wanted.casefold():
                    scripts[wanted] = archive.read(info).decode("utf-8-sig")
    missing = [s for s in SCRIPTS if s not in scripts]
    if missing:
        raise RelqError(f"{zip_path} is not a tSQLt release: {', '.join(missing)} missing")
    return scripts


def install(conn_str: str, scripts: dict[str, str]) -> None:
    """Run PrepareServer.sql, then tSQLt.class.sql, in the target database."""
    conn = db.connect(conn_str)
    try:
        cursor = conn.cursor()
        for name in SCRIPTS:
            for batch in split_batches(scripts[name]):
                try:
                    db.run_batch(cursor, batch.sql)
                except db.SqlError as exc:
                    raise RelqError(_install_failure(name, batch.line, exc)) from None
    finally:
        conn.close()


def _install_failure(script: str, line: int, exc: db.SqlError) -> str:
    if exc.number in CLR_ERRORS or "clr" in str(exc).lower():
        return (f"{script}:{line}: {exc}. tSQLt needs CLR: a sysadmin must run its "
                f"PrepareServer.sql (it enables 'clr enabled' and trusts tSQLt's assembly key), "
                f"or allow CLR on this server; Azure SQL Database has no CLR at all")
    return f"{script}:{line}: {exc}"


def deploy_tests(conn_str: str, files: list[tuple[str, str]]) -> None:
    """Create the test classes: (path, text) pairs, each file's batches in order."""
    conn = db.connect(conn_str)
    try:
        cursor = conn.cursor()
        for path, text in files:
            for batch in split_batches(text):
                try:
                    db.run_batch(cursor, batch.sql)
                except db.SqlError as exc:
                    raise RelqError(f"{path}:{batch.line}: {exc}") from None
    finally:
        conn.close()


@dataclass
class RunResult:
    tests: int
    failures: int
    errors: int
    xml: str

    @property
    def ok(self) -> bool:
        return self.tests > 0 and self.failures == 0 and self.errors == 0


def run_all(conn_str: str) -> RunResult:
    """tSQLt.RunAll, then its JUnit XML. RunAll raises when a test fails; the
    XML, not that error, says what happened."""
    conn = db.connect(conn_str)
    try:
        cursor = conn.cursor()
        # A failing run ends in a summary error; the XML below counts what failed.
        with contextlib.suppress(db.SqlError):
            db.run_batch(cursor, "EXEC tSQLt.RunAll;")
        rows = db.query(cursor, "EXEC tSQLt.XmlResultFormatter;")
        xml = str(rows[0][0]) if rows and rows[0][0] is not None else "<testsuites/>"
    finally:
        conn.close()
    return summarize(xml)


def summarize(xml: str) -> RunResult:
    root = ET.fromstring(xml)
    cases = root.iter("testcase")
    tests = failures = errors = 0
    for case in cases:
        tests += 1
        failures += len(case.findall("failure"))
        errors += len(case.findall("error"))
    return RunResult(tests, failures, errors, xml)
