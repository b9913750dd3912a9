"""The deploy journal: one row per file deployed to this database, with its
checksum, who deployed it and when. It lives in the target database, in the
relq schema, so that it travels with backups and restores of the data."""

from __future__ import annotations

from relq import __version__
from relq.db import query, run_batch

CREATE = [
    "IF SCHEMA_ID(N'relq') IS NULL EXEC sys.sp_executesql N'CREATE SCHEMA relq AUTHORIZATION dbo;';",
    """IF OBJECT_ID(N'relq.DeployJournal', N'U') IS NULL
    CREATE TABLE relq.DeployJournal (
        [Path] NVARCHAR(400) NOT NULL,
        Kind VARCHAR(20) NOT NULL,
        Checksum CHAR(64) NOT NULL,
        DeployedAt DATETIME2(7) NOT NULL
            CONSTRAINT DF_DeployJournal_DeployedAt DEFAULT (SYSUTCDATETIME()),
        DeployedBy NVARCHAR(128) NOT NULL
            CONSTRAINT DF_DeployJournal_DeployedBy DEFAULT (SUSER_SNAME()),
        RelqVersion VARCHAR(20) NOT NULL,
        CONSTRAINT PK_DeployJournal PRIMARY KEY CLUSTERED ([Path])
    );""",
]

RECORD = """
SET NOCOUNT ON;
UPDATE relq.DeployJournal
SET Kind = ?, Checksum = ?, DeployedAt = SYSUTCDATETIME(), DeployedBy = SUSER_SNAME(),
    RelqVersion = ?
WHERE [Path] = ?;
IF @@ROWCOUNT = 0
    INSERT INTO relq.DeployJournal ([Path], Kind, Checksum, RelqVersion) VALUES (?, ?, ?, ?);
"""


def ensure(cursor) -> None:
    """Create the journal when this database has none."""
    for sql in CREATE:
        run_batch(cursor, sql)


def read(cursor) -> dict[str, str]:
    """path -> checksum of every file deployed here; empty when there is no journal yet."""
    if query(cursor, "SELECT OBJECT_ID(N'relq.DeployJournal', N'U');")[0][0] is None:
        return {}
    return dict(query(cursor, "SELECT [Path], Checksum FROM relq.DeployJournal;"))


def record(cursor, path: str, kind: str, checksum: str) -> None:
    query(cursor, RECORD, kind, checksum, __version__, path, path, kind, checksum, __version__)
