"""Each check of `invoke build`, proven on a planted error: the build fails,
naming the file, the line and the problem, and reports nothing else. The clean
fixture proves that none of them fires falsely."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from relq.compiler import KNOWN_CHECKS
from tests.conftest import HEADER, Project

NEXT = "database/procedures/dbo.Next_Job_trx.sql"
LOG = "database/procedures/dbo.Log_Job_utx.sql"
JOB = "database/tables/dbo.Job.sql"
STATUS = "database/tables/dbo.JobStatus.sql"
VIEW = "database/views/dbo.Worker_Job_V.sql"
FN = "database/functions/dbo.JobIsKnown_fn.sql"
TYPE = "database/types/dbo.QueueState.sql"
DATA = "database/data/dbo.JobStatus.sql"
ROLE = "database/security/JobWorker.sql"
MSG = "database/messages/59001.InsideTransaction.sql"
TEST = "tests_tsqlt/Next_Job_trxTests.class.sql"
FN_TESTS = "tests_tsqlt/JobIsKnown_fnTests.class.sql"
MIGRATION = "database/migrations/V0001__job_indexes.sql"
LONG = "Next_Job_trx_with_a_very_long_name_x"  # 36 characters


@dataclass
class Case:
    id: str
    edits: list[tuple[str, str, str]]
    # (file, a text on the line, check, a part of the message)
    expect: list[tuple[str, str, str, str]]
    writes: list[tuple[str, str]] = field(default_factory=list)


def empty_class(name: str) -> str:
    """An empty tSQLt class file."""
    return HEADER + f"EXEC tSQLt.NewTestClass '{name}';\nGO\n"


def proc(name: str, body: str, params: str = "") -> str:
    """A procedure file in the full _trx shape, with ``body`` as its work."""
    return f"""{HEADER}/* {name}: a test procedure.{params and chr(10) + '   ' + params + ': a parameter.'} */
CREATE OR ALTER PROCEDURE {name}{chr(10) + '    ' + params + ' INT' if params else ''}
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @ErrNo INT;
    DECLARE @RowCnt INT;
    IF (@@TRANCOUNT > 0)
        BEGIN
            RAISERROR (59001, 16, 1, N'{name}');
            GOTO EXIT_ERROR;
        END;
    BEGIN TRANSACTION T;
{body}
    COMMIT TRANSACTION T;
    RETURN 0;

    EXIT_TRANSACTION:
    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION T;

    EXIT_ERROR:
    RETURN 1;
END;
GO
"""


FINAL = "database/functions/dbo.JobIsFinal_fn.sql"


def function(body: str, bound: bool = False, returns: str = "BIT") -> list[tuple[str, str]]:
    """A function file, dbo.JobIsFinal_fn of @Status, with its (empty) tSQLt class."""
    option = "WITH SCHEMABINDING\n" if bound else ""
    text = (f"{HEADER}/* dbo.JobIsFinal_fn: a test function.\n   @Status: a state. */\n"
            f"CREATE OR ALTER FUNCTION dbo.JobIsFinal_fn(@Status dbo.QueueState)\nRETURNS {returns}\n"
            f"{option}AS\n{body}GO\n")
    return [(FINAL, text), ("tests_tsqlt/JobIsFinal_fnTests.class.sql", empty_class("JobIsFinal_fnTests"))]


PURE_BODY = "BEGIN\n    IF @Status IN ('Completed', 'Failed')\n        RETURN 1;\n    RETURN 0;\nEND;\n"

CASES = [
    # -- resolution --------------------------------------------------------------
    Case("unknown table in UPDATE",
         [(NEXT, "UPDATE dbo.Job\n", "UPDATE dbo.Jobs\n")],
         [(NEXT, "UPDATE dbo.Jobs", "unknown-table", "unknown table or view dbo.Jobs (in UPDATE)")]),
    Case("unknown table in a view's FROM",
         [(VIEW, "FROM dbo.Job AS j", "FROM dbo.Jobz AS j")],
         [(VIEW, "FROM dbo.Jobz", "unknown-table", "unknown table or view dbo.Jobz (in SELECT)")]),
    Case("unqualified misspelt table in a CTE",
         [(NEXT, "FROM dbo.Job AS j WITH", "FROM Jobb AS j WITH")],
         [(NEXT, "FROM Jobb AS j", "unknown-table", "dbo.Jobb")]),
    Case("a missing table that shares its name with its alias or a column alias",
         [(VIEW, "j.UpdatedAt AS Token", "j.UpdatedAt AS Jobz"),
          (VIEW, "FROM dbo.Job AS j", "FROM Jobz AS Jobz")],
         [(VIEW, "FROM Jobz AS Jobz", "unknown-table", "unknown table or view dbo.Jobz (in SELECT)")]),
    Case("an UPDATE of a schema-qualified table that an alias also names",
         [(LOG, "    FROM dbo.Job AS j\n    WHERE j.JobId = @JobId;",
           "    FROM dbo.JobStatus AS Job\n    WHERE j.JobId = @JobId;"),
          (LOG, "    UPDATE j\n    SET j.UpdatedAt", "    UPDATE dbo.Job\n    SET UpdatedOn")],
         [(LOG, "    UPDATE dbo.Job", "unknown-column", "table dbo.Job has no column UpdatedOn")]),
    Case("a procedure used as a table",
         [(VIEW, "FROM dbo.Job AS j", "FROM dbo.Next_Job_trx AS j")],
         [(VIEW, "FROM dbo.Next_Job_trx", "unknown-table", "it is a procedure")]),
    Case("unknown type of a column",
         [(STATUS, "[Status] dbo.QueueState,", "[Status] dbo.QueueStat,")],
         [(STATUS, "dbo.QueueStat,", "unknown-type", "unknown type dbo.QueueStat")]),
    Case("unknown type of a parameter",
         [(FN, "(@Status dbo.QueueState)", "(@Status dbo.QueueStatus)")],
         [(FN, "(@Status dbo.QueueStatus)", "unknown-type", "unknown type dbo.QueueStatus")]),
    Case("unknown function",
         [(NEXT, "UpdatedAt = SYSUTCDATETIME(),", "UpdatedAt = dbo.Now_fn(),")],
         [(NEXT, "dbo.Now_fn()", "unknown-function", "unknown function dbo.Now_fn")]),
    Case("a CHECK constraint calling a missing function",
         [(JOB, "CHECK (dbo.JobIsKnown_fn(", "CHECK (dbo.JobIsKnwn_fn(")],
         [(JOB, "dbo.JobIsKnwn_fn", "unknown-function",
           "CHECK constraint Job_HasKnown_Status calls dbo.JobIsKnwn_fn, which no file")]),
    Case("a function called with too few arguments",
         [(JOB, "dbo.JobIsKnown_fn([Status])", "dbo.JobIsKnown_fn()")],
         [(JOB, "dbo.JobIsKnown_fn()", "argument-count",
           "dbo.JobIsKnown_fn takes 1 argument (@Status); this call passes 0")]),
    Case("unknown procedure",
         [(NEXT, "EXEC dbo.Log_Job_utx", "EXEC dbo.Log_Jobs_utx")],
         [(NEXT, "EXEC dbo.Log_Jobs_utx", "unknown-procedure", "unknown procedure dbo.Log_Jobs_utx")]),
    Case("EXEC with a parameter the procedure does not declare",
         [(NEXT, "@Note = N'claimed'", "@Notes = N'claimed'")],
         [(NEXT, "@Notes = N'claimed'", "unknown-parameter",
           "dbo.Log_Job_utx has no parameter @notes")]),
    Case("EXEC without a parameter that has no default",
         [(NEXT, "@JobId = @JobId, @Note", "@Note")],
         [(NEXT, "EXEC dbo.Log_Job_utx", "missing-parameter",
           "EXEC dbo.Log_Job_utx without @JobId, which has no default")]),
    Case("EXEC with too many positional arguments",
         [(NEXT, "EXEC dbo.Log_Job_utx @JobId = @JobId, @Note = N'claimed';",
           "EXEC dbo.Log_Job_utx @JobId, N'claimed', 3;")],
         [(NEXT, "EXEC dbo.Log_Job_utx", "argument-count",
           "declares 2 parameters; this EXEC passes 3 by position")]),
    Case("INSERT naming a column the table lacks",
         [(TEST, "INSERT INTO dbo.Job ([Status],", "INSERT INTO dbo.Job ([State],")],
         [(TEST, "INSERT INTO dbo.Job", "unknown-column", "table dbo.Job has no column State (in INSERT)")]),
    Case("UPDATE ... SET naming a column the table lacks",
         [(NEXT, "Attempts = Attempts + 1", "Attempt = Attempts + 1")],
         [(NEXT, "UPDATE dbo.Job", "unknown-column",
           "table dbo.Job has no column Attempt (in UPDATE ... SET)")]),
    Case("UPDATE of an alias resolves to its table",
         [(LOG, "SET j.UpdatedAt = SYSUTCDATETIME()", "SET j.UpdatedOn = SYSUTCDATETIME()")],
         [(LOG, "UPDATE j", "unknown-column", "table dbo.Job has no column UpdatedOn")]),
    Case("MERGE inserting a column the table lacks",
         [(DATA, "INSERT ([Status])", "INSERT ([State])")],
         [(DATA, "INSERT ([State])", "unknown-column",
           "table dbo.JobStatus has no column State (in MERGE ... INSERT)")]),
    Case("a key on a column the table lacks",
         [(JOB, "PRIMARY KEY CLUSTERED (JobId)", "PRIMARY KEY CLUSTERED (JobID2)")],
         [(JOB, "CONSTRAINT PK_Job", "unknown-column",
           "PRIMARY KEY PK_Job: table dbo.Job has no column JobID2")]),
    Case("an index on a column the table lacks",
         [(JOB, "ON dbo.Job (UpdatedAt)", "ON dbo.Job (UpdatedOn)")],
         [(JOB, "CREATE NONCLUSTERED INDEX", "unknown-column",
           "INDEX IX_Job_Updated: table dbo.Job has no column UpdatedOn")]),
    Case("a foreign key to a missing table",
         [(JOB, "REFERENCES dbo.JobStatus ([Status])", "REFERENCES dbo.JobState ([Status])")],
         [(JOB, "CONSTRAINT Job_IsStatedBy_JobStatus", "foreign-key",
           "references dbo.JobState, which is not a table of this project")]),
    Case("a foreign key to a missing column",
         [(JOB, "REFERENCES dbo.JobStatus ([Status])", "REFERENCES dbo.JobStatus (State)")],
         [(JOB, "CONSTRAINT Job_IsStatedBy_JobStatus", "foreign-key",
           "references dbo.JobStatus.State, which does not exist")]),
    Case("a foreign key whose column types differ",
         [(JOB, "[Status] VARCHAR(20) NOT NULL,", "[Status] VARCHAR(30) NOT NULL,")],
         [(JOB, "CONSTRAINT Job_IsStatedBy_JobStatus", "foreign-key",
           "dbo.Job.Status is VARCHAR(30) but dbo.JobStatus.Status is VARCHAR(20)")]),
    Case("a foreign key to columns that are not a key",
         [(JOB, "REFERENCES dbo.JobStatus ([Status])", "REFERENCES dbo.Job ([Status])")],
         [(JOB, "CONSTRAINT Job_IsStatedBy_JobStatus", "foreign-key",
           "references (Status) of dbo.Job, which is not its primary key or a unique key")]),
    Case("RAISERROR with an unregistered number",
         [(NEXT, "RAISERROR (59003,", "RAISERROR (59033,")],
         [(NEXT, "RAISERROR (59033,", "unregistered-message",
           "RAISERROR 59033: no file in database/messages registers message 59033")]),
    Case("THROW with an unregistered number",
         [(LOG, "    RETURN 0;\n", "    THROW 50077, N'no', 1;\n    RETURN 0;\n")],
         [(LOG, "THROW 50077", "unregistered-message", "THROW 50077: no file")]),
    Case("GRANT to a role nobody creates",
         [(ROLE, "TO JobWorker;\nGRANT SELECT", "TO JobWorkers;\nGRANT SELECT")],
         [(ROLE, "TO JobWorkers", "unknown-role", "unknown role JobWorkers")]),
    Case("GRANT on a table type nobody creates",
         [(ROLE, "TYPE::dbo.JobKeys", "TYPE::dbo.JobKeyz")],
         [(ROLE, "dbo.JobKeyz", "unknown-type", "unknown type dbo.JobKeyz")]),
    Case("GRANT on an object nobody creates",
         [(ROLE, "OBJECT::dbo.Next_Job_trx", "OBJECT::dbo.Next_Jobs_trx")],
         [(ROLE, "dbo.Next_Jobs_trx", "unknown-object", "unknown object dbo.Next_Jobs_trx")]),
    Case("a test referencing a procedure nobody creates",
         [(TEST, "EXEC Next_Job_trxTests.ClaimOne;", "EXEC Next_Job_trxTests.ClaimTwo;")],
         [(TEST, "ClaimTwo", "unknown-procedure", "unknown procedure Next_Job_trxTests.ClaimTwo")]),
    Case("a procedure without GO before the next one",
         [(TEST, "EXEC Next_Job_trxTests.ClaimOne;", "EXEC Next_Job_trxTests.ClaimOne;\nEND;\n"
           "CREATE PROCEDURE Next_Job_trxTests.Extra\nAS\nBEGIN\n    SELECT 1 AS One;")],
         [(TEST, "CREATE PROCEDURE Next_Job_trxTests.Extra", "batch-alone",
           "Next_Job_trxTests.Extra would become part of")]),
    Case("the same object created twice",
         [],
         [(VIEW, "CREATE OR ALTER VIEW", "duplicate-object",
           "view dbo.Worker_Job_V is already created by database/views/dbo.Worker_Job2_V.sql:5"),
          ("database/views/dbo.Worker_Job2_V.sql", "CREATE OR ALTER VIEW", "file-name",
           "the file creates dbo.Worker_Job_V: name it dbo.Worker_Job_V.sql")],
         writes=[("database/views/dbo.Worker_Job2_V.sql",
                  HEADER + "/* a copy */\nCREATE OR ALTER VIEW dbo.Worker_Job_V\nAS\n"
                  "SELECT j.JobId FROM dbo.Job AS j;\nGO\n")]),
    Case("views that need each other",
         [(VIEW, "FROM dbo.Job AS j;", "FROM dbo.Job AS j\nWHERE NOT EXISTS (SELECT 1 FROM dbo.Other_V);")],
         [("database/views/dbo.Other_V.sql", "", "cycle",
           "no deploy order exists: database/views/dbo.Other_V.sql -> "
           "database/views/dbo.Worker_Job_V.sql -> database/views/dbo.Other_V.sql")],
         writes=[("database/views/dbo.Other_V.sql",
                  HEADER + "/* needs the worker view */\nCREATE OR ALTER VIEW dbo.Other_V\nAS\n"
                  "SELECT v.JobId FROM dbo.Worker_Job_V AS v;\nGO\n"),
                 ("tests_tsqlt/Other_VTests.class.sql", empty_class("Other_VTests"))]),
    Case("an unparsable section",
         [(VIEW, "FROM dbo.Job AS j;", "FROM dbo.Job AS j WHERE (;")],
         [(VIEW, "FROM dbo.Job AS j WHERE (", "parse", "sqlfluff (tsql) cannot parse this")]),
    Case("a file outside the layout",
         [],
         [("database/stray.sql", "", "layout", "outside the layout")],
         writes=[("database/stray.sql", HEADER)]),
    # -- conventions -------------------------------------------------------------
    Case("no SET header",
         [(FN, HEADER, "")],
         [(FN, "/* dbo.JobIsKnown_fn", "file-header",
           "must start with SET ANSI_NULLS ON; SET QUOTED_IDENTIFIER ON; and GO")]),
    Case("a file named for another object",
         [(FN, "FUNCTION dbo.JobIsKnown_fn (", "FUNCTION dbo.JobKnown_fn (")],
         # the rename also breaks what used the old name, and leaves the new one untested
         [(FN, "FUNCTION dbo.JobKnown_fn", "file-name",
           "the file creates dbo.JobKnown_fn: name it dbo.JobKnown_fn.sql"),
          (FN, "FUNCTION dbo.JobKnown_fn", "test-class",
           "add tests_tsqlt/JobKnown_fnTests.class.sql"),
          (JOB, "dbo.JobIsKnown_fn(", "unknown-function", "dbo.JobIsKnown_fn"),
          (FN_TESTS, "dbo.JobIsKnown_fn(", "unknown-function", "dbo.JobIsKnown_fn")]),
    Case("a message file registering another number",
         [(MSG, "@msgnum = 59001", "@msgnum = 59011")],
         [(MSG, "", "file-name", "named <number>.<Meaning>.sql"),
          (NEXT, "RAISERROR (59001,", "unregistered-message", "59001")]),
    Case("a type created without its guard",
         [(TYPE, "IF TYPE_ID(N'dbo.QueueState') IS NULL\n", "")],
         [(TYPE, "CREATE TYPE", "rerunnable", "guard it with IF TYPE_ID(")]),
    Case("a table created without its guard",
         [(STATUS, "IF OBJECT_ID(N'dbo.JobStatus', N'U') IS NULL\n", "")],
         [(STATUS, "CREATE TABLE", "rerunnable", "guard it with IF OBJECT_ID(")]),
    Case("an index created without a guard",
         [(JOB, "IF NOT EXISTS (\n    SELECT 1 FROM sys.indexes\n"
                "    WHERE name = N'IX_Job_Updated' AND object_id = OBJECT_ID(N'dbo.Job')\n)\n", "")],
         [(JOB, "CREATE NONCLUSTERED INDEX", "rerunnable", "this fails on a second run")]),
    Case("a procedure created without OR ALTER",
         [(LOG, "CREATE OR ALTER PROCEDURE", "CREATE PROCEDURE")],
         [(LOG, "CREATE PROCEDURE", "rerunnable", "use CREATE OR ALTER")]),
    Case("reference rows by plain INSERT",
         [(DATA, "MERGE dbo.JobStatus AS target\nUSING (VALUES ('Pending'), ('Processing')) AS source "
                 "([Status])\n    ON target.[Status] = source.[Status]\nWHEN NOT MATCHED BY TARGET THEN\n"
                 "    INSERT ([Status]) VALUES (source.[Status]);",
           "INSERT INTO dbo.JobStatus ([Status]) VALUES ('Pending');")],
         [(DATA, "INSERT INTO", "rerunnable", "use MERGE")]),
    Case("sp_addmessage without @replace",
         [(MSG, ",\n    @replace = 'replace'", "")],
         [(MSG, "EXEC sys.sp_addmessage", "rerunnable", "@replace = 'replace'")]),
    Case("READPAST without READCOMMITTEDLOCK",
         [(NEXT, "READPAST, READCOMMITTEDLOCK)", "READPAST)")],
         [(NEXT, "WITH (UPDLOCK, ROWLOCK, READPAST)", "readpast-lock", "add READCOMMITTEDLOCK")]),
    Case("a function call as an EXEC argument",
         [(FN_TESTS, "@Expected = 1, @Actual = @Known;", "@Expected = 1, @Actual = ABS(@Known);")],
         [(FN_TESTS, "@Actual = ABS(@Known)", "exec-argument", "SQL Server refuses an expression as an EXEC "
                                                               "argument (ABS(@Known))")]),
    Case("sp_releaseapplock without WITH RESULT SETS NONE",
         [(LOG, "        @Why = @Note;\n    RETURN 0;",
           "        @Why = @Note;\n"
           "    EXEC sys.sp_releaseapplock @Resource = N'dbo.Job', @LockOwner = 'Session';\n"
           "    RETURN 0;")],
         [(LOG, "EXEC sys.sp_releaseapplock", "describable", "WITH RESULT SETS NONE")]),
    Case("a message text without relq's mark",
         [(MSG, "@msgtext = N'relq: %s", "@msgtext = N'%s")],
         [(MSG, "EXEC sys.sp_addmessage", "message-mark", "begin the text with 'relq: '")]),
    Case("a message text longer than sp_addmessage keeps",
         [(MSG, "@msgtext = N'relq: %s", "@msgtext = N'relq: " + "x" * 250 + " %s")],
         [(MSG, "EXEC sys.sp_addmessage", "message-mark", "sp_addmessage keeps 255")]),
    Case("a message severity given by a variable",
         [(MSG, "EXEC sys.sp_addmessage", "DECLARE @Severity INT = 16;\nEXEC sys.sp_addmessage"),
          (MSG, "@severity = 16", "@severity = @Severity")],
         [(MSG, "EXEC sys.sp_addmessage", "message-mark", "as literals")]),
    Case("an object without a header comment",
         [(VIEW, "/* dbo.Worker_Job_V: what a worker may see of a job. */\n", "")],
         [(VIEW, "CREATE OR ALTER VIEW", "header-comment", "needs a header comment")]),
    Case("a header comment that skips a parameter",
         [(LOG, "   @Note: why; optional.\n", "")],
         [(LOG, "CREATE OR ALTER PROCEDURE", "header-comment", "does not describe parameter @Note")]),
    Case("a function without _fn",
         [(FN, "FUNCTION dbo.JobIsKnown_fn (", "FUNCTION dbo.JobIsKnown ("),
          (JOB, "dbo.JobIsKnown_fn(", "dbo.JobIsKnown(")],
         [(FN, "FUNCTION dbo.JobIsKnown", "object-suffix", "must end in _fn"),
          (FN, "FUNCTION dbo.JobIsKnown", "file-name", "name it dbo.JobIsKnown.sql"),
          (FN, "FUNCTION dbo.JobIsKnown", "test-class", "add tests_tsqlt/JobIsKnownTests.class.sql"),
          (FN_TESTS, "dbo.JobIsKnown_fn(", "unknown-function", "dbo.JobIsKnown_fn")]),
    Case("an unnamed constraint",
         [(JOB, "CONSTRAINT DF_Job_Attempts DEFAULT (0)", "DEFAULT (0)")],
         [(JOB, "Attempts INT", "unnamed-constraint", "name this DEFAULT constraint of dbo.Job")]),
    Case("a primary key named otherwise",
         [(STATUS, "CONSTRAINT PK_JobStatus", "CONSTRAINT JobStatus_PK")],
         [(STATUS, "CONSTRAINT JobStatus_PK", "constraint-name", "PK_JobStatus")]),
    Case("an index named otherwise",
         [(JOB, "INDEX IX_Job_Due", "INDEX Job_Due")],
         [(JOB, "INDEX Job_Due", "constraint-name", "IX_Job_<Purpose>")]),
    Case("a procedure without SET NOCOUNT ON",
         [(LOG, "    SET NOCOUNT ON;\n", "")],
         [(LOG, "CREATE OR ALTER PROCEDURE", "nocount", "must start with SET NOCOUNT ON")]),
    Case("a _trx without the @@TRANCOUNT guard",
         [(NEXT, "IF (@@TRANCOUNT > 0)", "IF (@Worker IS NULL)")],
         [(NEXT, "CREATE OR ALTER PROCEDURE", "trancount-guard", "IF @@TRANCOUNT > 0")]),
    Case("a _utx guarding the wrong way",
         [(LOG, "IF (@@TRANCOUNT = 0)", "IF (@@TRANCOUNT > 0)")],
         [(LOG, "CREATE OR ALTER PROCEDURE", "trancount-guard", "IF @@TRANCOUNT = 0")]),
    Case("an unnamed transaction",
         [(NEXT, "BEGIN TRANSACTION Next_Job_trx;", "BEGIN TRANSACTION;")],
         [(NEXT, "BEGIN TRANSACTION;", "named-transaction", "name the transaction")]),
    Case("a transaction name longer than SQL Server allows",
         [(NEXT, f"TRANSACTION Next_Job_trx{end}", f"TRANSACTION {LONG}{end}")
          for end in (";\n\n    WITH", ";\n\n    SELECT", ";\n\n    EXIT_ERROR")],
         [(NEXT, f"BEGIN TRANSACTION {LONG}", "named-transaction",
           "has 36 characters; SQL Server allows 32")]),
    Case("a test name longer than SQL Server allows in any name",
         [(TEST, "when a transaction is open]", "when a transaction is open" + " and so on" * 7 + "!]")],
         [(TEST, "CREATE PROCEDURE Next_Job_trxTests.[test Next_Job_trx refuses", "name-length",
           "is 130 characters: SQL Server takes at most 128")]),
    Case("a COMMIT naming another transaction",
         [(NEXT, "COMMIT TRANSACTION Next_Job_trx", "COMMIT TRANSACTION Next_Job")],
         [(NEXT, "COMMIT TRANSACTION Next_Job", "named-transaction", "COMMIT TRANSACTION Next_Job_trx")]),
    Case("a _utx that begins a transaction",
         [(LOG, "    RETURN 0;\n", "    BEGIN TRANSACTION L;\n    RETURN 0;\n")],
         [(LOG, "BEGIN TRANSACTION L", "named-transaction", "must not begin or commit one")]),
    Case("a DML without @@ROWCOUNT and @@ERROR captured",
         [(NEXT, "    SELECT\n        @RowCnt = @@ROWCOUNT,\n        @ErrNo = @@ERROR;\n", "")],
         [(NEXT, "UPDATE dbo.Job", "capture-after-dml", "SELECT @RowCnt = @@ROWCOUNT")]),
    Case("a capture of @@ERROR alone",
         [(LOG, "        @RowCnt = @@ROWCOUNT,\n", "")],
         [(LOG, "UPDATE j", "capture-after-dml", "in one statement")]),
    Case("a _trx without EXIT_TRANSACTION",
         [(NEXT, "    EXIT_TRANSACTION:\n    IF XACT_STATE() <> 0 ROLLBACK TRANSACTION Next_Job_trx;\n", ""),
          (NEXT, "GOTO EXIT_TRANSACTION;", "GOTO EXIT_ERROR;"),
          (NEXT, "GOTO EXIT_TRANSACTION;", "GOTO EXIT_ERROR;")],
         [(NEXT, "CREATE OR ALTER PROCEDURE", "exit-labels", "EXIT_TRANSACTION: then EXIT_ERROR:")]),
    Case("a rollback without the XACT_STATE guard",
         [(NEXT, "IF XACT_STATE() <> 0 ROLLBACK", "ROLLBACK")],
         [(NEXT, "    ROLLBACK TRANSACTION", "rollback-guard", "IF XACT_STATE() <> 0 ROLLBACK")]),
    Case("an error path returning 0",
         [(NEXT, "    EXIT_ERROR:\n    RETURN 1;", "    EXIT_ERROR:\n    RETURN 0; -- planted")],
         [(NEXT, "-- planted", "error-return", "RETURN a non-zero code")]),
    Case("a RAISERROR not followed by GOTO",
         [(NEXT, "@RowCnt);\n            GOTO EXIT_TRANSACTION;", "@RowCnt);")],
         [(NEXT, "RAISERROR (59003", "raiserror-goto", "RAISERROR does not stop the procedure")]),
    Case("a GOTO to a missing label",
         [(NEXT, "IF (@ErrNo <> 0) GOTO EXIT_TRANSACTION;", "IF (@ErrNo <> 0) GOTO EXIT_TRANSACTON;")],
         [(NEXT, "GOTO EXIT_TRANSACTON", "goto-label", "dbo.Next_Job_trx has no such label")]),
    Case("a RAISERROR of ad-hoc text",
         [(NEXT, "RAISERROR (59003, 16, 1, N'dbo.Next_Job_trx', @RowCnt);",
           "RAISERROR (N'lost the row', 16, 1);")],
         [(NEXT, "RAISERROR (N'lost", "raiserror-number", "raise a registered error number")]),
    Case("SELECT * in a view",
         [(VIEW, "    j.JobId,\n    j.[Status],\n    j.UpdatedAt AS Token\n", "    j.*\n")],
         [(VIEW, "j.*", "select-star", "name the columns")]),
    Case("local time",
         [(NEXT, "UpdatedAt = SYSUTCDATETIME(),", "UpdatedAt = GETDATE(),")],
         [(NEXT, "GETDATE()", "utc-time", "GETDATE is not a precise UTC time")]),
    Case("EXEC of a string",
         [(LOG, "    RETURN 0;\n", "    EXEC (N'SELECT 1');\n    RETURN 0;\n")],
         [(LOG, "EXEC (N'SELECT 1')", "dynamic-sql", "use sys.sp_executesql with parameters")]),
    Case("sp_executesql without parameters",
         [(LOG, "    RETURN 0;\n", "    EXEC sys.sp_executesql N'SELECT 1 AS One;';\n    RETURN 0;\n")],
         [(LOG, "N'SELECT 1 AS One;'", "dynamic-sql", "as parameters")]),
    Case("GO with a semicolon",
         [(FN, "END;\nGO\n", "END;\nGO;\n")],
         [(FN, "GO;", "sqlcmd-safe", "write GO alone on its line")]),
    Case("a sqlcmd variable",
         [(VIEW, "j.UpdatedAt AS Token", "j.UpdatedAt AS [$(Token)]")],
         [(VIEW, "$(Token)", "sqlcmd-safe", "scripting variable")]),
    Case("a test class created under another name",
         [(TEST, "NewTestClass 'Next_Job_trxTests'", "NewTestClass 'NextTests'")],
         [(TEST, "", "file-name", "EXEC tSQLt.NewTestClass 'Next_Job_trxTests'")]),
    Case("a test procedure outside its file's test class",
         [(TEST, "CREATE PROCEDURE Next_Job_trxTests.ClaimOne", "CREATE PROCEDURE dbo.ClaimOne"),
          (TEST, "EXEC Next_Job_trxTests.ClaimOne;", "EXEC dbo.ClaimOne;")],
         [(TEST, "CREATE PROCEDURE dbo.ClaimOne", "file-name",
           "procedure dbo.ClaimOne is not in the test class Next_Job_trxTests")]),
    Case("a test faking a table nobody creates",
         [(TEST, "@TableName = N'dbo.Job'", "@TableName = N'dbo.Jobs'")],
         [(TEST, "N'dbo.Jobs'", "unknown-table",
           "unknown table or view dbo.Jobs (in EXEC tSQLt.FakeTable)")]),
    Case("a test spying on a procedure nobody creates",
         [(TEST, "@ProcedureName = N'dbo.Log_Job_utx'", "@ProcedureName = N'dbo.Log_Jobs_utx'")],
         [(TEST, "N'dbo.Log_Jobs_utx'", "unknown-procedure", "unknown procedure dbo.Log_Jobs_utx")]),
    Case("a NoTransaction test naming a clean-up nobody creates",
         [(TEST, "NoTransaction]('Next_Job_trxTests.CleanUp')",
          "NoTransaction]('Next_Job_trxTests.Cleanup2')")],
         [(TEST, "Cleanup2", "unknown-procedure", "unknown procedure Next_Job_trxTests.Cleanup2")]),
    Case("a test named without its condition",
         [(TEST, "[test Next_Job_trx claims a due job when one is pending]",
           "[test Next_Job_trx claims a due job]")],
         [(TEST, "[test Next_Job_trx claims a due job]", "test-name",
           "name the test [test <Object> <does what> when <condition>]")]),
    Case("a tSQLt annotation before the GO",
         [(TEST, "GO\n--[@tSQLt:NoTransaction]('Next_Job_trxTests.CleanUp')\n",
           "--[@tSQLt:NoTransaction]('Next_Job_trxTests.CleanUp')\nGO\n")],
         [(TEST, "--[@tSQLt:NoTransaction]", "tsqlt-annotation", "directly above CREATE PROCEDURE")]),
    Case("a table compared in a NoTransaction test",
         [(TEST, "EXEC tSQLt.AssertEqualsString @Expected = 'Processing', @Actual = @Status;",
           "EXEC tSQLt.AssertEqualsTable @Expected = N'#Expected', @Actual = N'#Actual';")],
         [(TEST, "tSQLt.AssertEqualsTable", "tsqlt-no-transaction", "leaves a work table behind")]),
    Case("a function that reads no table, not schema-bound",
         [],
         [(FINAL, "CREATE OR ALTER FUNCTION", "schemabinding",
           "dbo.JobIsFinal_fn reads no table or view: declare it WITH SCHEMABINDING")],
         writes=function(PURE_BODY)),
    Case("a schema-bound function that calls another function",
         [],
         [(FINAL, "CREATE OR ALTER FUNCTION", "schemabinding",
           "dbo.JobIsFinal_fn is WITH SCHEMABINDING and calls dbo.JobIsKnown_fn")],
         writes=function("BEGIN\n    RETURN dbo.JobIsKnown_fn(@Status);\nEND;\n", bound=True)),
    Case("a view without its tSQLt class",
         [],
         [("database/views/dbo.Due_Job_V.sql", "CREATE OR ALTER VIEW", "test-class",
           "view dbo.Due_Job_V has no tSQLt class: add tests_tsqlt/Due_Job_VTests.class.sql")],
         writes=[("database/views/dbo.Due_Job_V.sql",
                  HEADER + "/* dbo.Due_Job_V: due jobs. */\nCREATE OR ALTER VIEW dbo.Due_Job_V\nAS\n"
                  "SELECT j.JobId FROM dbo.Job AS j;\nGO\n")]),
    # -- silencing ---------------------------------------------------------------
    Case("an allow without a reason",
         [(NEXT, "UpdatedAt = SYSUTCDATETIME(),", "UpdatedAt = GETDATE(), -- relq:allow utc-time")],
         [(NEXT, "GETDATE()", "utc-time", "GETDATE"),
          (NEXT, "GETDATE()", "allow", "must say why")]),
    Case("two index builds in one migration",
         [],
         [(MIGRATION, "CREATE NONCLUSTERED INDEX IX_Job_Second", "one-build", "(IX_Job_Second)")],
         writes=[(MIGRATION, HEADER + """/* V0001__job_indexes: two builds. */
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'IX_Job_First' AND object_id = OBJECT_ID(N'dbo.Job'))
    BEGIN
        CREATE NONCLUSTERED INDEX IX_Job_First ON dbo.Job (UpdatedAt) WITH (ONLINE = ON);
    END;
GO
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE name = N'IX_Job_Second' AND object_id = OBJECT_ID(N'dbo.Job'))
    BEGIN
        CREATE NONCLUSTERED INDEX IX_Job_Second ON dbo.Job (UpdatedAt) WITH (ONLINE = ON);
    END;
GO
""")]),
    Case("an allow that silences nothing",
         [(NEXT, "UpdatedAt = SYSUTCDATETIME(),",
           "UpdatedAt = SYSUTCDATETIME(), -- relq:allow utc-time because it is already UTC")],
         [(NEXT, "relq:allow", "allow", "silences nothing on line")]),
    Case("an allow of a check that cannot be silenced",
         [(VIEW, "FROM dbo.Job AS j;", "FROM dbo.Job AS j; -- relq:allow parse because I say so")],
         [(VIEW, "relq:allow", "allow", "names no check that can be silenced: parse")]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_planted_error_fails_the_build_at_its_line(project: Project, case: Case) -> None:
    for path, old, new in case.edits:
        project.edit(path, old, new)
    for path, text in case.writes:
        project.write(path, text)
    result = project.build()
    got = sorted((d.path, d.line, d.check, d.message) for d in result.diagnostics)
    want = sorted((path, project.line_of(path, needle) if needle else 1, check, fragment)
                  for path, needle, check, fragment in case.expect)
    assert [g[:3] for g in got] == [w[:3] for w in want], "\n".join(map(str, result.diagnostics))
    for g, w in zip(got, want, strict=True):
        assert w[3] in g[3]
    assert not result.ok


def test_the_clean_fixture_builds_without_a_single_finding(project: Project) -> None:
    result = project.build()
    assert [str(d) for d in result.diagnostics] == []
    assert result.ok


def test_an_allow_with_a_reason_silences_exactly_its_check_on_its_line(project: Project) -> None:
    project.edit(NEXT, "UpdatedAt = SYSUTCDATETIME(),",
                 "-- relq:allow utc-time because this column is shown to people in local time\n"
                 "        UpdatedAt = GETDATE(),")
    assert project.problems() == []


def test_every_check_is_planted_at_least_once() -> None:
    planted = {check for case in CASES for _, _, check, _ in case.expect}
    assert KNOWN_CHECKS - planted == set()


@pytest.mark.parametrize("name, body", [
    ("system objects", "    SELECT TOP (1) o.name FROM sys.objects AS o;\n"
                       "    EXEC sys.sp_getapplock @Resource = N'x', @LockMode = 'Exclusive'\n"
                       "    WITH RESULT SETS NONE;\n"),
    ("temp tables and table variables",
     "    DECLARE @T TABLE (Id INT NOT NULL);\n    INSERT INTO @T (Id) VALUES (1);\n"
     "    SELECT @RowCnt = @@ROWCOUNT, @ErrNo = @@ERROR;\n"
     "    SELECT t.Id INTO #Copy FROM @T AS t;\n    DROP TABLE #Copy;\n"),
    ("a CTE updated through its name",
     "    WITH q AS (SELECT TOP (1) j.Attempts FROM dbo.Job AS j ORDER BY j.JobId)\n"
     "    UPDATE q SET q.Attempts = 0;\n    SELECT @RowCnt = @@ROWCOUNT, @ErrNo = @@ERROR;\n"),
    ("informational RAISERROR", "    RAISERROR (N'progress', 0, 1) WITH NOWAIT;\n"),
    ("a procedure named at run time",
     "    DECLARE @Job NVARCHAR(300) = N'dbo.AnyJob';\n    EXEC @RowCnt = @Job @JobId = 1;\n"),
])
def test_what_sql_server_or_the_statement_itself_defines_is_not_unknown(
    project: Project, name: str, body: str
) -> None:
    project.write("database/procedures/dbo.Probe_trx.sql", proc("dbo.Probe_trx", body))
    project.write("tests_tsqlt/Probe_trxTests.class.sql", empty_class("Probe_trxTests"))
    problems = [p for p in project.problems() if "raiserror-number" not in p]
    assert problems == []


def test_a_migration_may_create_again_a_table_type_its_file_owns(project: Project) -> None:
    # A table type cannot be altered: a migration drops and re-creates it.
    project.write("database/migrations/V0001__widen_job_keys.sql", HEADER + """/* widen */
IF TYPE_ID(N'dbo.JobKeys') IS NOT NULL
    BEGIN
        DROP TYPE dbo.JobKeys;
    END;
GO
IF TYPE_ID(N'dbo.JobKeys') IS NULL
    BEGIN
        CREATE TYPE dbo.JobKeys AS TABLE (
            JobId BIGINT NOT NULL,
            PRIMARY KEY (JobId)
        );
    END;
GO
""")
    result = project.build()
    assert [str(d) for d in result.diagnostics] == []
    assert result.catalog.lookup("type", "dbo.JobKeys").path == "database/types/dbo.JobKeys.sql"


@pytest.mark.parametrize("work, findings", [
    ("    EXEC @RetCode = dbo.Next_Job_trx;\n", []),
    ("    EXEC @RetCode = dbo.Next_Job_trx;\n    EXEC @RetCode = dbo.Next_Job_trx;\n",
     ["named-transaction", "exit-labels"]),
    ("    EXEC @RetCode = dbo.Log_Job_utx @JobId = 1;\n", ["named-transaction", "exit-labels"]),
])
def test_a_trx_may_leave_its_transaction_to_the_one_trx_it_calls(
    project: Project, work: str, findings: list[str]
) -> None:
    header = "/* dbo.Next_One_Job_trx: the one-item form. */"
    project.write("database/procedures/dbo.Next_One_Job_trx.sql", f"""{HEADER}{header}
CREATE OR ALTER PROCEDURE dbo.Next_One_Job_trx
AS
BEGIN
    SET NOCOUNT ON;
    DECLARE @RetCode INT;
    IF (@@TRANCOUNT > 0)
        BEGIN
            RAISERROR (59001, 16, 1, N'dbo.Next_One_Job_trx');
            GOTO EXIT_ERROR;
        END;
{work}    IF (@RetCode <> 0) GOTO EXIT_ERROR;
    RETURN 0;

    EXIT_ERROR:
    RETURN 1;
END;
GO
""")
    project.write("tests_tsqlt/Next_One_Job_trxTests.class.sql", empty_class("Next_One_Job_trxTests"))
    result = project.build()
    assert sorted(d.check for d in result.diagnostics) == sorted(findings), \
        "\n".join(map(str, result.diagnostics))


def test_a_table_valued_parameter_may_be_left_out_of_an_exec(project: Project) -> None:
    """SQL Server passes an empty table for a table-valued parameter an EXEC leaves out."""
    project.edit(LOG, "    @Note NVARCHAR(100) = NULL\n",
                 "    @Note NVARCHAR(100) = NULL,\n    @Keys dbo.JobKeys READONLY\n")
    project.edit(LOG, "   @Note: why; optional.\n",
                 "   @Note: why; optional.\n   @Keys: more jobs; optional (left out: an empty table).\n")
    assert project.problems() == []
    project.edit(LOG, "    @Keys dbo.JobKeys READONLY\n", "    @Keys BIGINT\n")
    assert any("missing-parameter" in p for p in project.problems())


@pytest.mark.parametrize("files, findings", [
    (function(PURE_BODY, bound=True), []),
    (function("BEGIN\n    RETURN dbo.JobIsKnown_fn(@Status);\nEND;\n"), []),
    (function("BEGIN\n    IF EXISTS (SELECT 1 FROM dbo.Job AS j WHERE j.[Status] = @Status)\n"
              "        RETURN 1;\n    RETURN 0;\nEND;\n"), []),
    (function("RETURN (SELECT @Status AS [Status]);\n", returns="TABLE"), []),
    # a table variable is no data access (CREATE FUNCTION: UserDataAccess), so it still asks for the binding
    (function("BEGIN\n    DECLARE @Final TABLE ([Status] VARCHAR(20) NOT NULL);\n"
              "    INSERT INTO @Final ([Status]) VALUES ('Completed');\n"
              "    IF EXISTS (SELECT 1 FROM @Final AS f WHERE f.[Status] = @Status)\n        RETURN 1;\n"
              "    RETURN 0;\nEND;\n"), ["schemabinding"]),
], ids=["bound", "calls a function", "reads a table", "table-valued", "table variable"])
def test_schemabinding_is_asked_only_of_scalar_functions_that_read_no_table(
    project: Project, files: list[tuple[str, str]], findings: list[str]
) -> None:
    for path, text in files:
        project.write(path, text)
    result = project.build()
    assert [d.check for d in result.diagnostics] == findings, "\n".join(map(str, result.diagnostics))
