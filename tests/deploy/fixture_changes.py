"""Changes made to the clean fixture project (tests/fixtures/clean) and what the deploy
plans for them: one expected value for the offline tests (tests/deploy, no server) and
the live ones (tests/live/test_deploy.py), so that a change to the planner changes
both at once."""

from __future__ import annotations

from tests.conftest import HEADER, Project

JOB = "database/tables/dbo.Job.sql"
FN = "database/functions/dbo.JobIsKnown_fn.sql"
VIEW = "database/views/dbo.Worker_Job_V.sql"
DATA = "database/data/dbo.JobStatus.sql"
MIGRATION = "database/migrations/V0001__add_job_priority.sql"
INDEX_MIGRATION = "database/migrations/V0002__index_job_attempts.sql"

# The plan's changes after add_priority on a deployed database: the table is brought up to
# date by its migration, and the role's grants are given again (a migration may drop and
# re-create what they name).
PRIORITY_CHANGES = [(JOB, "migrated"), (MIGRATION, "apply"), ("database/security/JobWorker.sql", "apply")]


def add_priority(project: Project) -> None:
    """A new column in dbo.Job's file, and the migration that adds it to a deployed table."""
    project.edit(JOB, "Attempts INT NOT NULL", "Priority INT NOT NULL CONSTRAINT DF_Job_Priority "
                 "DEFAULT (0),\n            Attempts INT NOT NULL")
    project.write(MIGRATION, HEADER + "IF COL_LENGTH(N'dbo.Job', N'Priority') IS NULL\n"
                  "    BEGIN\n        ALTER TABLE dbo.Job ADD Priority INT NOT NULL\n"
                  "            CONSTRAINT DF_Job_Priority DEFAULT (0);\n    END;\nGO\n")


def revalidates(rows: str) -> str:
    """What the plan says of dbo.Job's CHECK when FN changes, with the table's rows as shown:
    "~3 rows", "~1,234,567 rows"."""
    return (f"re-validates CHECK Job_HasKnown_Status on dbo.Job ({rows}) under a schema-modification "
            f"lock until the file commits: claims and reports on that table wait")


def altered(rows: str) -> str:
    """What the plan says of add_priority's migration on a deployed database whose dbo.Job
    holds ``rows`` ("~3 rows")."""
    return (f"ALTER TABLE on dbo.Job ({rows}) under a schema-modification lock until the file "
            f"commits: every query on that table waits, NOLOCK included")


def add_attempts_index(project: Project) -> None:
    """A new index on dbo.Job in its table file, and the migration that builds it on a deployed
    table the way docs/operations.md says: online where the deploy says the edition can."""
    project.edit(JOB, "INDEX IX_Job_Due NONCLUSTERED ([Status], ScheduledFor)",
                 "INDEX IX_Job_Due NONCLUSTERED ([Status], ScheduledFor),\n"
                 "            INDEX IX_Job_Attempts NONCLUSTERED (Attempts)")
    project.write(INDEX_MIGRATION, HEADER + INDEX_PATTERN)


INDEX_PATTERN = """IF NOT EXISTS (
    SELECT 1 FROM sys.indexes
    WHERE name = N'IX_Job_Attempts' AND object_id = OBJECT_ID(N'dbo.Job')
)
    BEGIN
        IF CAST(SESSION_CONTEXT(N'relq.online') AS INT) = 1
            BEGIN
                CREATE NONCLUSTERED INDEX IX_Job_Attempts ON dbo.Job (Attempts) WITH (ONLINE = ON);
            END;
        ELSE
            BEGIN
                CREATE NONCLUSTERED INDEX IX_Job_Attempts ON dbo.Job (Attempts);
            END;
    END;
GO
"""


def indexed(rows: str, online: bool) -> str:
    """What the plan says of add_attempts_index's migration, on a server with online index
    operations or without."""
    head = f"CREATE INDEX IX_Job_Attempts on dbo.Job ({rows}) "
    if online:
        return head + ("online: a shared lock at the build's start, and from its end until the file "
                       "commits; claims and reports go on meanwhile")
    return head + ("under a shared lock until the file commits: claims, enqueues and reports on that "
                   "table wait, reads go on (this edition has no online index operations)")
