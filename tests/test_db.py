"""relq.db offline: where the server comes from, connection strings, masking,
pyodbc's error messages, call()'s batch, and connect()'s one-line failures
(against a closed port and a driver that does not exist; no server needed)."""

from __future__ import annotations

import subprocess
import sys
import types
from datetime import datetime

import pytest

from relq import db
from relq.errors import Msg, RelqError
from tests.conftest import require_odbc_driver, require_pyodbc

SAMPLE_INVALID = ("[42000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Invalid object name "
                  "'dbo.X'. (208) (SQLExecDirectW)")
SAMPLE_UNREACHABLE = ("[08S01] [FreeTDS][SQL Server]Unable to connect: Adaptive Server is unavailable or "
                      "does not exist (20009) (SQLDriverConnect)")
SAMPLE_NO_DRIVER = ("[01000] [unixODBC][Driver Manager]Can't open lib 'ODBC Driver 18 for SQL Server' : "
                    "file not found (0) (SQLDriverConnect)")


class FakeError(Exception):
    """Shaped like pyodbc.Error: args are (sqlstate, message)."""


# -- resolve_target ------------------------------------------------------------------------------------------

CONFIG = {"relq": {"mssql": "SERVER=from-yaml"}}


def test_conn_beats_env_beats_config():
    env = {"RELQ_MSSQL": "SERVER=from-env"}
    assert db.resolve_target("SERVER=from-cli", CONFIG, env) == db.Target("SERVER=from-cli", "--conn")
    assert db.resolve_target(None, CONFIG, env) == db.Target("SERVER=from-env", "RELQ_MSSQL")
    assert db.resolve_target(None, CONFIG, {}) == db.Target("SERVER=from-yaml", "invoke.yaml")


def test_blank_values_count_as_unset():
    env = {"RELQ_MSSQL": "  \n"}
    assert db.resolve_target("", CONFIG, env).source == "invoke.yaml"
    assert db.resolve_target(" SERVER=x ", None, env) == db.Target("SERVER=x", "--conn")
    assert db.resolve_target(" \t", CONFIG, {"RELQ_MSSQL": "SERVER=e"}) == db.Target("SERVER=e", "RELQ_MSSQL")


@pytest.mark.parametrize("config", [None, {}, {"relq": None}, {"relq": "text"}, {"relq": {}},
                                    {"relq": {"mssql": 5}}, {"relq": {"mssql": "   "}}, {"other": 1}])
def test_nothing_configured(config):
    with pytest.raises(RelqError) as info:
        db.resolve_target(None, config, {})
    assert str(info.value) == ("no SQL Server configured: set RELQ_MSSQL to an ODBC connection string, "
                               "pass --conn, or set relq.mssql in invoke.yaml")


def test_target_shows_masked():
    target = db.Target("SERVER=s;UID=sa;PWD=S3cr3t", "--conn")
    assert str(target) == "SERVER=s;UID=sa;PWD=*** (from --conn)"
    assert "S3cr3t" not in repr(target)


# -- parse, build ------------------------------------------------------------------------------------------


def test_parse_plain_and_braced():
    text = " Driver = {ODBC Driver 18 for SQL Server} ;Server=tcp:h,1433;;PWD={a;b}}c}; Initial Catalog=Q;"
    assert db.parse(text) == [("Driver", "ODBC Driver 18 for SQL Server"), ("Server", "tcp:h,1433"),
                              ("PWD", "a;b}c"), ("Initial Catalog", "Q")]


@pytest.mark.parametrize("pairs", [
    [("DRIVER", "FreeTDS"), ("SERVER", "h"), ("PWD", "S3cr3t;pw")],
    [("PWD", "}{;}}"), ("UID", " padded "), ("X", "")],
    [("PWD", "={x}=")],
])
def test_build_parse_round_trip(pairs):
    assert db.parse(db.build(pairs)) == pairs


def test_build_quotes_only_when_needed():
    assert db.build([("SERVER", "h"), ("PWD", "a;b}")]) == "SERVER=h;PWD={a;b}}}"


@pytest.mark.parametrize("text", ["SERVER=h;oops", "SERVER=h;=x", "PWD={never closed", "PWD={a}b;X=1"])
def test_parse_refuses_malformed(text):
    with pytest.raises(RelqError, match=r"^connection string: "):
        db.parse(text)


def test_parse_error_hides_a_password_tail():
    with pytest.raises(RelqError) as info:
        db.parse("UID=sa;PWD=abc;Secret-Tail;SERVER=h")
    assert str(info.value) == ("connection string: unreadable at character 16 (expected keyword=value; "
                               "put a value that holds ';' in {braces})")


# -- mask ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("SERVER=h;UID=sa;PWD=S3cr3t", "SERVER=h;UID=sa;PWD=***"),
    ("SERVER=h;Password=S3cr3t;UID=sa", "SERVER=h;Password=***;UID=sa"),
    ("server=h;pwd = {S3cr3t;Tail};uid=sa", "server=h;pwd=***;uid=sa"),
    ("SERVER=h;PWD={S3}}cr;Tail};UID=sa", "SERVER=h;PWD=***;UID=sa"),
    ("SERVER=h;PASSWORD={S3}}}};Tail}}};UID=sa", "SERVER=h;PASSWORD=***;UID=sa"),
])
def test_mask_hides_passwords(text, expected):
    assert db.mask(text) == expected


def test_mask_braced_password_with_semicolon_and_escaped_brace():
    text = db.build([("SERVER", "h"), ("PWD", "S3cr3t;pw}x"), ("UID", "sa")])
    assert text == "SERVER=h;PWD={S3cr3t;pw}}x};UID=sa"
    assert db.mask(text) == "SERVER=h;PWD=***;UID=sa"


@pytest.mark.parametrize(("text", "secret"), [
    ("SERVER=h;PWD={S3cr3t;Tail", "Tail"),  # never closed: parse fails, the regex masks
    ("junk;PWD=S3cr3t;more junk", "S3cr3t"),
    ("Password={S3}}cr;Tail}trailing;x", "Tail"),
    ("", None),
    ("{{{;;;===}}}", None),
])
def test_mask_never_raises(text, secret):
    masked = db.mask(text)
    assert isinstance(masked, str)
    if secret:
        assert secret not in masked


NO_DATABASE = ('[42000] [FreeTDS][SQL Server]Database \'relq\' does not exist. Make sure that the name is '
               'entered correctly. (911) (SQLDriverConnect)')


@pytest.mark.parametrize("password", ["x", "e", "exist", "Databas", "S3cr3t;pw}x"])
def test_a_failed_connect_never_rewrites_the_message_around_a_password(password):
    conn_str = db.build([("SERVER", "h"), ("UID", "sa"), ("PWD", password)])
    message = db.connect_failure(conn_str, FakeError("42000", NO_DATABASE))
    assert message == ("cannot connect (server=h, uid=sa): Database 'relq' does not exist. "
                       "Make sure that the name is entered correctly.")


def test_a_failed_connect_masks_an_echoed_connection_string_and_a_long_password_standing_alone():
    password = "Relq!Ci-Passw0rd"
    conn_str = db.build([("DRIVER", "FreeTDS"), ("SERVER", "h"), ("UID", "sa"), ("PWD", password)])
    echoed = FakeError("HY000", f"[unixODBC]cannot use 'DRIVER=FreeTDS;SERVER=h;UID=sa;PWD={password}' "
                                f"(0) (SQLDriverConnect)")
    alone = FakeError("HY000", f"[FreeTDS]the password '{password}' has expired (0) (SQLDriverConnect)")
    within = FakeError("HY000", f"[FreeTDS]no user {password}X here (0) (SQLDriverConnect)")
    assert db.connect_failure(conn_str, echoed).endswith(
        "cannot use 'DRIVER=FreeTDS;SERVER=h;UID=sa;PWD=***'")
    assert db.connect_failure(conn_str, alone).endswith("the password '***' has expired")
    assert db.connect_failure(conn_str, within).endswith(f"no user {password}X here")  # another word


def test_mask_survives_non_strings():
    assert isinstance(db.mask(None), str)  # type: ignore[arg-type]


# -- database, describe -----------------------------------------------------------------------------------


def test_with_database_replaces():
    assert db.with_database("SERVER=h;DATABASE=a;UID=sa", "master") == "SERVER=h;DATABASE=master;UID=sa"
    assert db.with_database("SERVER=h;Initial Catalog=a", "b") == "SERVER=h;Initial Catalog=b"


def test_with_database_appends():
    assert db.with_database("SERVER=h;PWD={x;y}", "relq") == "SERVER=h;PWD={x;y};DATABASE=relq"


def test_describe_has_no_password():
    text = "DRIVER={FreeTDS};SERVER=127.0.0.1;PORT=1;DATABASE=x;UID=sa;PWD=S3cr3t;TDS_Version=7.4"
    assert db.describe(text) == "server=127.0.0.1, port=1, database=x, driver=FreeTDS, uid=sa"
    assert "S3cr3t" not in db.describe("Server=h;Password=S3cr3t")
    assert "S3cr3t" not in db.describe("Server=h;Password={S3cr3t")


def test_describe_reads_a_repeated_key_as_odbc_does_from_its_first_occurrence():
    assert db.describe("SERVER=first;SERVER=second;DATABASE=;DATABASE=x;UID=sa") == "server=first, uid=sa"


# -- server_messages, SqlError ------------------------------------------------------------------------------


@pytest.mark.parametrize(("message", "expected"), [
    (SAMPLE_INVALID, db.ServerMessage(208, "Invalid object name 'dbo.X'.", "42000")),
    (SAMPLE_UNREACHABLE, db.ServerMessage(
        20009, "Unable to connect: Adaptive Server is unavailable or does not exist", "08S01")),
    (SAMPLE_NO_DRIVER, db.ServerMessage(
        0, "Can't open lib 'ODBC Driver 18 for SQL Server' : file not found", "01000")),
])
def test_server_messages_samples(message, expected):
    assert db.server_messages(FakeError(message[1:6], message)) == [expected]


def test_server_messages_concatenated():
    second = ("[42000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]The statement has been "
              "terminated. (3621)")
    messages = db.server_messages(FakeError("42000", f"{SAMPLE_INVALID}; {second}"))
    assert messages == [db.ServerMessage(208, "Invalid object name 'dbo.X'.", "42000"),
                        db.ServerMessage(3621, "The statement has been terminated.", "42000")]


@pytest.mark.parametrize("exc", [ValueError(), ValueError(1, 2, 3), FakeError("42000", "plain text"),
                                 FakeError(None, None), KeyError("x")])
def test_server_messages_never_raises(exc):
    messages = db.server_messages(exc)
    assert len(messages) >= 1 and all(isinstance(m, db.ServerMessage) for m in messages)


def test_sql_error_formatting():
    invalid = db.ServerMessage(208, "Invalid object name 'dbo.X'.", "42000")
    assert str(db.SqlError([invalid], "dbo.Enqueue")) == (
        "dbo.Enqueue: SQL Server error 208: Invalid object name 'dbo.X'.")
    assert str(db.SqlError([invalid])) == "SQL Server error 208: Invalid object name 'dbo.X'."
    assert str(db.SqlError([db.ServerMessage(None, "odd", None)], "ctx")) == "ctx: SQL Server error: odd"
    assert str(db.SqlError([], "ctx")) == "ctx: SQL Server error"
    assert db.SqlError([invalid]).number == 208
    assert isinstance(db.SqlError([]), RelqError)


def test_pyodbc_own_errors_keep_their_text():
    """pyodbc raises its own errors with (message, sqlstate), the driver's with (sqlstate, message)."""
    own = FakeError("The SQL contains 1 parameter markers, but 2 parameters were supplied", "HY000")
    assert db.server_messages(own) == [db.ServerMessage(
        None, "The SQL contains 1 parameter markers, but 2 parameters were supplied", "HY000")]


@pytest.mark.parametrize(("message", "broken"), [
    (db.ServerMessage(10054, "TCP Provider: Error code 0x2746", "08S01"), True),
    (db.ServerMessage(0, "Query timeout expired", "HYT00"), True),
    (db.ServerMessage(None, "Attempt to use a closed connection.", None), True),  # from pyodbc
    (db.ServerMessage(596, "Cannot continue the execution because the session is in the kill state.",
                      "HY000"), True),
    (db.ServerMessage(0, "A severe error occurred on the current command.", "HY000"), True),
    (db.ServerMessage(None, "The SQL contains 1 parameter markers, but 2 parameters were supplied",
                      "HY000"), False),  # pyodbc refused the call: the connection is fine
    (db.ServerMessage(1205, "Transaction was deadlocked", "40001"), False),
    (db.ServerMessage(735705, "relq: stale token", "42000"), False),
])
def test_a_sql_error_says_whether_its_connection_is_done_for(message, broken):
    assert db.SqlError([message]).broken is broken


def test_sql_error_skips_print_output():
    printed = db.ServerMessage(0, "starting", "01000")
    error = db.ServerMessage(735701, "queue is full", "42000")
    assert db.SqlError([printed, error]).number == 735701


# SQL Server's text of error 18054 (https://learn.microsoft.com/sql/relational-databases/errors-events/
# database-engine-events-and-errors-18000-to-18999), as Microsoft's ODBC driver delivers it for a
# RAISERROR (735710, 16, 1, ...) on a server whose master lacks relq's messages.
SAMPLE_UNREGISTERED = ("[42000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Error 735710, "
                       "severity 16, state 1 was raised, but no message with that error number was found in "
                       "sys.messages. If error is larger than 50000, make sure the user-defined message is "
                       "added using sp_addmessage. (18054) (SQLExecDirectW)")


def test_a_relq_error_that_arrives_as_18054_is_that_relq_error():
    (message,) = db.server_messages(FakeError("42000", SAMPLE_UNREGISTERED))
    assert message.number == 18054  # the record stays as the server sent it
    error = db.SqlError([message], "dbo.Modify_SyncQueue_trx")
    assert (error.number, error.raised_as) == (Msg.TakenOver, 18054)
    assert str(error) == (
        "dbo.Modify_SyncQueue_trx: SQL Server error 735710 (arrived as 18054: relq's messages are not "
        "registered on this server; run invoke register-messages against it): Error 735710, severity 16, "
        "state 1 was raised, but no message with that error number was found in sys.messages. If error is "
        "larger than 50000, make sure the user-defined message is added using sp_addmessage.")


@pytest.mark.parametrize(("number", "text", "expected"), [
    # another application's unregistered message: its number is not relq's to claim
    (18054, "Error 50009, severity 16, state 10 was raised, but no message with that error number was "
            "found in sys.messages. If error is larger than 50000, make sure the user-defined message is "
            "added using sp_addmessage.", 18054),
    (18054, "Error 7357051, severity 16, state 1 was raised, but no message ...", 18054),  # not 735705
    (18054, "Error 735700, severity 16, state 1 was raised, but no message ...", 18054),  # below the range
    (18054, "Fehler 735705, Schweregrad 16, Status 1 wurde ausgelöst, ...", 735705),  # another language
    (50000, "relq: message 735705 holds another application's text", 50000),  # only 18054 is read
    (735705, "relq: dbo.Modify_Job_trx: item 2024-01-01 has changed since it was read", 735705),
])
def test_only_an_18054_naming_a_number_of_relqs_range_is_read_as_that_error(number, text, expected):
    error = db.SqlError([db.ServerMessage(number, text, "42000")])
    assert error.number == expected
    assert error.raised_as == (18054 if expected != number else None)


# -- run_batch, call ---------------------------------------------------------------------------------------


class Untouchable:
    def __getattr__(self, name):
        raise AssertionError(f"the connection was used: .{name}")


@pytest.mark.parametrize("name", ["dbo.X; DROP TABLE dbo.Job", "dbo.X--", "[dbo].[X]]; --]", "dbo..X",
                                  "a.b.c.d", "", "dbo.X @a=1", "'dbo'.X", "[dbo].[X;]"])
def test_call_refuses_injection_looking_names(name):
    with pytest.raises(ValueError):
        db.call(Untouchable(), name)


def test_call_refuses_bad_parameter_names():
    with pytest.raises(ValueError):
        db.call(Untouchable(), "dbo.X", **{"a=1; --": 2})


class FakeCursor:
    """Result sets as (columns, rows); None for a row count."""

    def __init__(self, sets):
        self.sets = list(sets)
        self.executed = None
        self.closed = False

    def execute(self, sql, *params):
        self.executed = (sql, params)

    @property
    def description(self):
        current = self.sets[0]
        return None if current is None else [(name, None) for name in current[0]]

    def fetchall(self):
        return list(self.sets[0][1])

    def nextset(self):
        self.sets.pop(0)
        return bool(self.sets)

    def close(self):
        self.closed = True


class FakeConnection:
    def __init__(self, cursor):
        self._cursor = cursor

    def cursor(self):
        return self._cursor


def test_call_builds_the_batch_and_pops_the_return_code():
    cursor = FakeCursor([(["id"], [(1,), (2,)]), None, (["a", "b"], []), (["return_code"], [(3,)])])
    result = db.call(FakeConnection(cursor), "[dbo].[Dequeue]", Queue="q", Count=None)
    assert cursor.executed == ("SET NOCOUNT ON; DECLARE @rc INT; EXEC @rc = [dbo].[Dequeue] @Queue = ?, "
                               "@Count = ?; SELECT @rc AS [return_code];", ("q", None))
    assert result == db.CallResult(3, [[(1,), (2,)], []], [["id"], ["a", "b"]])
    assert cursor.closed


def test_call_without_parameters():
    cursor = FakeCursor([(["return_code"], [(0,)])])
    assert db.call(FakeConnection(cursor), "dbo.Ping") == db.CallResult(0, [], [])
    assert cursor.executed[0] == ("SET NOCOUNT ON; DECLARE @rc INT; EXEC @rc = dbo.Ping; "
                                  "SELECT @rc AS [return_code];")


def test_call_turns_pyodbc_errors_into_sql_errors():
    pyodbc = require_pyodbc()
    message = ("[42000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]queue 'q' is full (735701) "
               "(SQLExecDirectW)")

    class FailingCursor(FakeCursor):
        def execute(self, sql, *params):
            raise pyodbc.ProgrammingError("42000", message)

    with pytest.raises(db.SqlError) as info:
        db.call(FakeConnection(FailingCursor([])), "dbo.Enqueue", Queue="q")
    assert info.value.number == 735701
    assert str(info.value) == "dbo.Enqueue: SQL Server error 735701: queue 'q' is full"


def test_result_sets_keeps_every_set_with_its_columns_and_sends_datetimes_as_text():
    cursor = FakeCursor([(["plan"], [("<x/>",)]), None, (["id"], [(1,), (2,)])])
    sets, columns = db.result_sets(cursor, "EXEC dbo.X @At = ?;", datetime(2024, 1, 1, 0, 0, 0, 5))
    assert cursor.executed == ("EXEC dbo.X @At = ?;", ("2024-01-01T00:00:00.000005",))
    assert (sets, columns) == ([[("<x/>",)], [(1,), (2,)]], [["plan"], ["id"]])


def test_run_batch_drains_every_set():
    cursor = FakeCursor([None, (["x"], [(1,)]), None])
    db.run_batch(cursor, "SELECT 1;")
    assert cursor.executed == ("SELECT 1;", ()) and cursor.sets == []


def test_run_batch_stops_on_no_results():
    pyodbc = require_pyodbc()

    class NoResults(FakeCursor):
        def nextset(self):
            raise pyodbc.ProgrammingError("No results.  Previous SQL was not a query.")

    db.run_batch(NoResults([None]), "SET NOCOUNT ON;")


def test_run_batch_raises_sql_error():
    pyodbc = require_pyodbc()

    class Failing(FakeCursor):
        def nextset(self):
            raise pyodbc.Error("42000", SAMPLE_INVALID)

    with pytest.raises(db.SqlError) as info:
        db.run_batch(Failing([None]), "SELECT 1; SELECT * FROM dbo.X;")
    assert info.value.number == 208


# -- connect ------------------------------------------------------------------------------------------------


def test_importing_relq_db_does_not_import_pyodbc():
    code = "import sys, relq.db; assert 'pyodbc' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.usefixtures("without_unixodbc")
def test_without_unixodbc_connecting_is_one_line_naming_what_to_install():
    with pytest.raises(RelqError) as info:
        db.connect("DRIVER={FreeTDS};SERVER=h;UID=sa;PWD=S3cr3t")
    assert str(info.value) == (
        "unixODBC and an ODBC driver are not installed (apt-get install unixodbc tdsodbc; dnf install "
        "unixODBC freetds; brew install unixodbc freetds): pyodbc cannot load (libodbc.so.2: cannot open "
        "shared object file: No such file or directory)")


@pytest.mark.usefixtures("without_unixodbc")
def test_without_unixodbc_the_odbc_tests_skip_with_that_line():
    with pytest.raises(pytest.skip.Exception) as info:
        require_pyodbc()
    assert str(info.value.msg).startswith(
        "unixODBC and an ODBC driver are not installed (apt-get install unixodbc tdsodbc; ")


def test_without_pyodbc_itself_the_line_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyodbc", None)  # import pyodbc: ModuleNotFoundError
    with pytest.raises(RelqError, match=r"^pyodbc is not installed in .*: pip install -e \. in the project$"):
        db.load_pyodbc()


class FakePyodbc(types.ModuleType):
    """pyodbc with a driver manager that knows ``drivers`` and fails every connection with ``message``."""

    class Error(Exception):
        pass

    def __init__(self, drivers: list[str], state: str, message: str) -> None:
        super().__init__("pyodbc")
        self._drivers, self._state, self._message = drivers, state, message

    def drivers(self) -> list[str]:
        return self._drivers

    def connect(self, conn_str: str, **kwargs):
        raise self.Error(self._state, self._message)


@pytest.mark.parametrize(("drivers", "state", "message", "installed"), [
    (["FreeTDS"], "01000", SAMPLE_NO_DRIVER, "FreeTDS"),
    ([], "IM002", "[IM002] [unixODBC][Driver Manager]Data source name not found and no default driver "
                  "specified (0) (SQLDriverConnect)", "none"),
])
def test_a_driver_that_is_not_installed_is_one_line_naming_what_to_install(monkeypatch, drivers, state,
                                                                           message, installed):
    monkeypatch.setitem(sys.modules, "pyodbc", FakePyodbc(drivers, state, message))
    with pytest.raises(RelqError) as info:
        db.connect("DRIVER={ODBC Driver 18 for SQL Server};SERVER=h;UID=sa;PWD=S3cr3t", timeout=2)
    assert str(info.value) == (
        f"ODBC driver 'ODBC Driver 18 for SQL Server' is not installed here (installed: {installed}): "
        f"install FreeTDS (apt-get install tdsodbc; dnf install freetds; brew install freetds) or "
        f"Microsoft's ODBC Driver 18 for SQL Server (msodbcsql18) and name it in DRIVER=...")


def test_connect_to_a_closed_port_names_the_server_but_not_the_password():
    require_odbc_driver("FreeTDS")
    conn_str = db.build([("DRIVER", "FreeTDS"), ("SERVER", "127.0.0.1"), ("PORT", "1"), ("DATABASE", "x"),
                         ("UID", "sa"), ("PWD", "S3cr3t;pw"), ("TDS_Version", "7.4")])
    with pytest.raises(RelqError) as info:
        db.connect(conn_str, timeout=2)
    message = str(info.value)
    assert "cannot reach SQL Server" in message
    assert "server=127.0.0.1, port=1" in message
    assert "S3cr3t" not in message and "\n" not in message


def test_connect_with_a_missing_driver():
    installed = ", ".join(require_pyodbc().drivers()) or "none"
    with pytest.raises(RelqError) as info:
        db.connect("DRIVER={No Such Driver 99};SERVER=h;UID=sa;PWD=S3cr3t", timeout=2)
    message = str(info.value)
    assert message.startswith(
        f"ODBC driver 'No Such Driver 99' is not installed here (installed: {installed}): ")
    assert "apt-get install tdsodbc" in message and "S3cr3t" not in message


def test_datetimes_travel_as_exact_iso_text() -> None:
    from datetime import datetime, timedelta, timezone

    from relq.db import sql_value

    assert sql_value(datetime(2026, 11, 21, 8, 30, 0, 123456)) == "2026-11-21T08:30:00.123456"
    assert sql_value(datetime(2026, 11, 21, 8, 30)) == "2026-11-21T08:30:00.000000"
    assert sql_value(datetime(2026, 11, 21, 8, 30, tzinfo=timezone.utc)) == "2026-11-21T08:30:00.000000"
    two_hours_east = timezone(timedelta(hours=2))  # relq's times are UTC: an offset is converted, not dropped
    assert sql_value(datetime(2026, 11, 21, 8, 30, tzinfo=two_hours_east)) == "2026-11-21T06:30:00.000000"
    assert sql_value(5) == 5 and sql_value(None) is None


class _RecordingCursor:
    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.description = None

    def execute(self, sql: str, *params) -> None:
        self.log.append(sql)

    def nextset(self) -> bool:
        return False


class _RecordingConnection:
    def __init__(self) -> None:
        self.log: list[str] = []

    def cursor(self) -> _RecordingCursor:
        return _RecordingCursor(self.log)


def test_a_transaction_commits_when_its_block_ends() -> None:
    from relq.db import transaction

    conn = _RecordingConnection()
    with transaction(conn):
        conn.cursor().execute("EXEC dbo.Next_SyncQueue_utx;")
    assert conn.log == ["BEGIN TRANSACTION;", "EXEC dbo.Next_SyncQueue_utx;", "COMMIT TRANSACTION;"]


def test_a_transaction_rolls_back_when_its_block_raises() -> None:
    from relq.db import transaction

    conn = _RecordingConnection()
    with pytest.raises(ValueError), transaction(conn):
        raise ValueError("the worker failed")
    assert conn.log == ["BEGIN TRANSACTION;", "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;"]
