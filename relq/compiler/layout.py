"""The project's layout: which folder holds which kind of object, and the order
in which the kinds deploy when their references do not say otherwise."""

from __future__ import annotations

import codecs
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from relq.errors import RelqError

DATABASE = "database"
TESTS = "tests_tsqlt"

# Folder under database/ -> deploy rank. A reference can pull an object ahead
# of its rank (a function a CHECK constraint calls deploys before its table).
KIND_RANK = {
    "types": 0,
    "messages": 1,
    "tables": 2,
    "migrations": 3,
    "functions": 4,
    "views": 5,
    "procedures": 6,
    "data": 7,
    "security": 8,
}

MIGRATION_NAME = re.compile(r"^V(?P<version>\d{4})__[a-z0-9_]+\.sql$")
TEST_CLASS_NAME = re.compile(r"^(?P<cls>[A-Za-z0-9_]+Tests)\.class\.sql$")


@dataclass(frozen=True)
class Source:
    """One .sql file of the project."""

    path: str  # relative to the root, forward slashes: database/tables/dbo.QueueStatus.sql
    folder: str  # the kind folder ("tables", ...) or "tests" for tests_tsqlt
    text: str
    checksum: str

    @property
    def stem(self) -> str:
        return self.path.rsplit("/", 1)[-1][: -len(".sql")]

    @property
    def is_test(self) -> bool:
        return self.folder == "tests"


def read_source(root: Path, file: Path, folder: str) -> Source:
    raw = file.read_bytes()
    # UTF-16 with its byte-order mark is what SQL Server Management Studio saves as "Unicode";
    # anything else is read as UTF-8 (with or without a mark).
    encoding = "utf-16" if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else "utf-8-sig"
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        rel = file.relative_to(root).as_posix()
        what = "UTF-16" if encoding == "utf-16" else "UTF-8"
        raise RelqError(f"{rel}: not {what} text ({exc.reason} at byte {exc.start})") from None
    # Line endings are a checkout's detail, not the object's: a CRLF clone
    # must build the same script and the same checksums as an LF one.
    text = text.replace("\r\n", "\n")
    return Source(
        path=file.relative_to(root).as_posix(),
        folder=folder,
        text=text,
        checksum=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def discover(root: Path) -> tuple[list[Source], list[str]]:
    """All .sql files of the project, and the paths of .sql files outside the layout."""
    database = root / DATABASE
    if not database.is_dir():
        raise RelqError(f"{root}: no {DATABASE}/ folder here; run from the project root")
    sources: list[Source] = []
    strays: list[str] = []
    for file in sorted(database.rglob("*.sql")):
        rel = file.relative_to(database)
        if len(rel.parts) == 2 and rel.parts[0] in KIND_RANK:
            sources.append(read_source(root, file, rel.parts[0]))
        else:
            strays.append(file.relative_to(root).as_posix())
    tests = root / TESTS
    if tests.is_dir():
        for file in sorted(tests.rglob("*.sql")):
            if file.parent == tests:
                sources.append(read_source(root, file, "tests"))
            else:
                strays.append(file.relative_to(root).as_posix())
    return sources, strays
