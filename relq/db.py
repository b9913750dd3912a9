"""The one place that knows connection strings, pyodbc, procedure calls, return
codes and error numbers.

The target server is an ODBC connection string, found by :func:`resolve_target`
(RELQ_MSSQL, then ``--conn``, then ``relq.mssql`` in invoke.yaml). Everything
shown to a user goes through :func:`mask` or :func:`describe`, so a password
never reaches a message. pyodbc is imported lazily, only by :func:`load_pyodbc`
(through :func:`connect`): code and tests that never connect do not need unixODBC.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from relq.errors import RelqError

ENV_VAR = "RELQ_MSSQL"

_PASSWORD_KEYS = frozenset({"pwd", "password"})
_DATABASE_KEYS = frozenset({"database", "initial catalog"})
_SERVER_KEYS = ("server", "data source", "address", "addr")
_NEEDS_BRACES = re.compile(r"[;{}]|^\s|\s$")
_PASSWORD_FALLBACK = re.compile(r"(\b(?:pwd|password)\s*=\s*)(\{(?:\}\}|[^}])*\}?|[^;]*)", re.IGNORECASE)
# The shortest password masked where a message shows it on its own: SQL Server's password
# policy asks for eight characters (https://learn.microsoft.com/sql/relational-databases/
# security/password-policy); a shorter one is likelier an ordinary word of the message.
_ECHO_MIN = 8
_NONE_CONFIGURED = ("no SQL Server configured: set RELQ_MSSQL to an ODBC connection string, pass --conn, "
                    "or set relq.mssql in invoke.yaml")


# -- where the server is -------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Target:
    """A connection string and where it came from; shown masked, never with its password."""

    conn_str: str
    source: str  # "RELQ_MSSQL", "--conn" or "invoke.yaml"

    def __str__(self) -> str:
        return f"{mask(self.conn_str)} (from {self.source})"

    def __repr__(self) -> str:
        return f"Target({mask(self.conn_str)!r}, source={self.source!r})"


def resolve_target(cli: str | None, config: Mapping[str, Any] | None,
                   environ: Mapping[str, str] = os.environ) -> Target:
    """The server to use: RELQ_MSSQL beats ``--conn`` beats invoke.yaml's ``relq: {mssql: ...}``."""
    candidates = ((environ.get(ENV_VAR), ENV_VAR), (cli, "--conn"), (_configured(config), "invoke.yaml"))
    for value, source in candidates:
        if isinstance(value, str) and value.strip():
            return Target(value.strip(), source)
    raise RelqError(_NONE_CONFIGURED)


def _configured(config: Mapping[str, Any] | None) -> str | None:
    """config["relq"]["mssql"] of invoke's config, or None if any level is missing or not a mapping."""
    try:
        value = config["relq"]["mssql"]  # type: ignore[index]
    except (KeyError, TypeError, IndexError, AttributeError):
        return None
    return value if isinstance(value, str) else None


# -- connection strings --------------------------------------------------------------------------------------


def parse(conn_str: str) -> list[tuple[str, str]]:
    """``key=value;...`` into pairs, in order, keys as spelled. Values may be ``{braced}``
    (``}}`` is a literal ``}``, ``;`` is literal); unbraced values are trimmed."""
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(conn_str)
    while i < n:
        end = _segment_end(conn_str, i)
        equals = conn_str.find("=", i, end)
        if equals < 0 or not conn_str[i:equals].strip():
            if conn_str[i:end].strip():
                raise RelqError(f"connection string: expected key=value, got "
                                f"'{_shown_segment(conn_str[i:end], pairs)}'")
            i = end + 1
            continue
        key = conn_str[i:equals].strip()
        value, i = _read_value(conn_str, equals + 1, key)
        pairs.append((key, value))
    return pairs


def _segment_end(text: str, start: int) -> int:
    """Index of the ``;`` ending the key of a segment (or len(text))."""
    end = text.find(";", start)
    return len(text) if end < 0 else end


def _read_value(text: str, start: int, key: str) -> tuple[str, int]:
    """The value starting at ``start`` and the index just past its ``;``."""
    k = start
    while k < len(text) and text[k].isspace():
        k += 1
    if k < len(text) and text[k] == "{":
        value, k = _read_braced(text, k, key)
        while k < len(text) and text[k].isspace():
            k += 1
        if k < len(text) and text[k] != ";":
            raise RelqError(f"connection string: unexpected text after '}}' in the value of {key}")
        return value, k + 1
    end = _segment_end(text, k)
    return text[k:end].strip(), end + 1


def _read_braced(text: str, start: int, key: str) -> tuple[str, int]:
    """A ``{...}`` value from its ``{`` at ``start``: the value and the index after its ``}``."""
    chars: list[str] = []
    k = start + 1
    while k < len(text):
        if text[k] == "}":
            if text.startswith("}}", k):
                chars.append("}")
                k += 2
                continue
            return "".join(chars), k + 1
        chars.append(text[k])
        k += 1
    raise RelqError(f"connection string: the value of {key} opens '{{' but never closes it")


def _shown_segment(segment: str, pairs: list[tuple[str, str]]) -> str:
    """A bad segment, as safe to show: right after a password it is probably the password's tail."""
    if pairs and pairs[-1][0].casefold() in _PASSWORD_KEYS:
        return "***"
    return _mask_fallback(segment.strip())


def build(pairs: list[tuple[str, str]]) -> str:
    """The inverse of :func:`parse`: values that need it are ``{braced}``, with ``}`` as ``}}``."""
    return ";".join(f"{key}={_quote(value)}" for key, value in pairs)


def _quote(value: str) -> str:
    if _NEEDS_BRACES.search(value):
        return "{" + value.replace("}", "}}") + "}"
    return value


def mask(conn_str: str) -> str:
    """The connection string with the values of PWD and Password as ``***``. Never raises."""
    try:
        pairs = parse(conn_str)
        return build([(k, "***" if k.casefold() in _PASSWORD_KEYS else v) for k, v in pairs])
    except Exception:
        return _mask_fallback(conn_str)


def _mask_fallback(text: object) -> str:
    try:
        return _PASSWORD_FALLBACK.sub(r"\1***", str(text))
    except Exception:
        return "***"


def _value(conn_str: str, keys: tuple[str, ...] | frozenset[str]) -> str | None:
    """The first non-empty value of any of ``keys`` (ODBC uses the first occurrence)."""
    for key, value in parse(conn_str):
        if key.casefold() in keys and value:
            return value
    return None


def with_database(conn_str: str, database: str) -> str:
    """The connection string with DATABASE (or Initial Catalog) set to ``database``."""
    pairs = parse(conn_str)
    if not any(k.casefold() in _DATABASE_KEYS for k, _ in pairs):
        return build([*pairs, ("DATABASE", database)])
    return build([(k, database if k.casefold() in _DATABASE_KEYS else v) for k, v in pairs])


def describe(conn_str: str) -> str:
    """A safe one-line summary: server, port, database, driver and UID (never the password)."""
    try:
        fields = (("server", _SERVER_KEYS), ("port", ("port",)), ("database", _DATABASE_KEYS),
                  ("driver", ("driver",)), ("uid", ("uid", "user id")))
        parts = [f"{name}={value}" for name, keys in fields if (value := _value(conn_str, keys))]
    except RelqError:
        return "unreadable connection string"
    return ", ".join(parts) or "no server named"


# -- errors --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerMessage:
    """One diagnostic record of an ODBC error."""

    number: int | None  # SQL Server's error number (the native error), None if not found
    text: str  # without the [..][..] prefixes and the (number) (SQLFunction) suffix
    sqlstate: str | None


_RECORD_SPLIT = re.compile(r";\s+(?=\[[0-9A-Z]{5}\]\s)")
_RECORD = re.compile(r"^\s*\[(?P<state>[0-9A-Z]{5})\]\s*(?P<rest>.*)$", re.DOTALL)
_PREFIXES = re.compile(r"^(?:\[[^\[\]]*\]\s*)+")
_SUFFIX = re.compile(r"\s*\((?P<number>-?\d+)\)\s*(?:\(SQL\w+\))?\s*$")
_FUNCTION = re.compile(r"\s*\(SQL\w+\)\s*$")


def server_messages(exc: BaseException) -> list[ServerMessage]:
    """Every record of a pyodbc error (``[state] [..][..]text (number) (SQLFunction); ...``). Never raises."""
    try:
        state, text = _state_and_text(exc)
        messages = [_message(record, state) for record in _RECORD_SPLIT.split(text)]
        return [m for m in messages if m.text or m.number is not None] or [ServerMessage(None, "", state)]
    except Exception:
        return [ServerMessage(None, _safe_str(exc), None)]


def _state_and_text(exc: BaseException) -> tuple[str | None, str]:
    """A driver's errors come from pyodbc as (sqlstate, message), pyodbc's own (say, a wrong
    number of parameters) as (message, sqlstate); anything else: no state and str(exc)."""
    args = getattr(exc, "args", ())
    if len(args) >= 2 and isinstance(args[0], str) and isinstance(args[-1], str):
        if _STATE.fullmatch(args[-1]) and not _STATE.fullmatch(args[0]):
            return args[-1], args[0]
        return (args[0] if _STATE.fullmatch(args[0]) else None), args[-1]
    return None, _safe_str(exc)


_STATE = re.compile(r"[0-9A-Z]{5}")


def _message(record: str, default_state: str | None) -> ServerMessage:
    match = _RECORD.match(record)
    state, rest = (match["state"], match["rest"]) if match else (default_state, record)
    rest = _PREFIXES.sub("", rest.strip())
    suffix = _SUFFIX.search(rest)
    if suffix:
        return ServerMessage(int(suffix["number"]), _one_line(rest[: suffix.start()]), state)
    return ServerMessage(None, _one_line(_FUNCTION.sub("", rest)), state)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _safe_str(exc: BaseException) -> str:
    try:
        return _one_line(str(exc))
    except Exception:
        return type(exc).__name__


def _main(messages: list[ServerMessage]) -> ServerMessage | None:
    """The message that matters: the first error, skipping warnings and PRINT output (class 01)."""
    errors = [m for m in messages if not (m.sqlstate or "").startswith("01")]
    return (errors or messages or [None])[0]


ENDED_SESSION = frozenset({0, 596})  # a severe error; "the session is in the kill state"


class SqlError(RelqError):
    """SQL Server refused a batch or a procedure call; ``number`` is its error number."""

    def __init__(self, messages: list[ServerMessage], context: str = "") -> None:
        self.messages = list(messages)
        self.context = context
        main = _main(self.messages)
        self.number: int | None = main.number if main else None
        self.text: str = main.text if main else ""
        self.sqlstate: str | None = main.sqlstate if main else None
        super().__init__(self._line())

    @property
    def broken(self) -> bool:
        """Whether the connection it came on is done for and a new one is needed: the link
        failed (SQLSTATE class 08), the query timed out (HYT00, HYT01: SQL Server stopped
        the call, and with XACT_ABORT ON rolled its transaction back), the session was killed
        (596) or ended by a severe error (0: "A severe error occurred on the current
        command"), or the error came with neither a state nor a number (pyodbc's "Attempt to
        use a closed connection"). pyodbc's own refusals of a call (a wrong parameter count,
        HY000) come with a state: the connection is fine."""
        state = self.sqlstate or ""
        return (state.startswith("08") or state in ("HYT00", "HYT01") or self.number in ENDED_SESSION
                or (self.number is None and not state))

    def _line(self) -> str:
        head = "SQL Server error" if self.number is None else f"SQL Server error {self.number}"
        return ": ".join(part for part in (self.context, head, self.text) if part)

    def __str__(self) -> str:
        return self._line()


def _is_pyodbc_error(exc: BaseException, kind: str = "Error") -> bool:
    """Whether ``exc`` is a pyodbc error, without importing pyodbc (no cursor exists without it)."""
    module = sys.modules.get("pyodbc")
    return module is not None and isinstance(exc, getattr(module, kind))


# -- connecting ----------------------------------------------------------------------------------------------


# What to install, one line each: pyodbc links against unixODBC's driver manager (libodbc.so.2;
# libodbc.2.dylib on macOS), which comes from the operating system, and it loads a driver.
INSTALL_UNIXODBC = "apt-get install unixodbc; dnf install unixODBC; brew install unixodbc"
INSTALL_DRIVER = ("FreeTDS (apt-get install tdsodbc; dnf install freetds; brew install freetds) "
                  "or Microsoft's ODBC Driver 18 for SQL Server (msodbcsql18)")


def load_pyodbc() -> Any:
    """The pyodbc module; a RelqError naming what to install when it cannot load."""
    try:
        import pyodbc
    except ModuleNotFoundError as exc:
        if exc.name != "pyodbc":
            raise
        raise RelqError(f"pyodbc is not installed in {sys.executable}: pip install -e . in the project"
                        ) from None
    except ImportError as exc:  # pyodbc is there, the driver manager it links against is not
        raise RelqError(f"unixODBC is not installed ({INSTALL_UNIXODBC}): pyodbc cannot load "
                        f"({_safe_str(exc)})") from None
    return pyodbc


def connect(conn_str: str, *, autocommit: bool = True, timeout: int = 15) -> Any:
    """A pyodbc connection (login timeout ``timeout`` seconds), session settings untouched.
    A failure is one masked line saying what to check, or what to install."""
    pyodbc = load_pyodbc()
    try:
        return pyodbc.connect(conn_str, autocommit=autocommit, timeout=timeout)
    except pyodbc.Error as exc:
        raise RelqError(connect_failure(conn_str, exc, _drivers(pyodbc))) from exc


def connect_failure(conn_str: str, exc: BaseException, drivers: list[str] | None = None) -> str:
    """The one line a failed connect ends in: what to check, and no password.
    ``drivers``: the installed ODBC drivers, to name when the one asked for is missing."""
    return _scrub(_connect_problem(conn_str, server_messages(exc), drivers), conn_str)


def _drivers(pyodbc: Any) -> list[str]:
    """The ODBC drivers the driver manager knows (odbcinst.ini); [] if it cannot say."""
    try:
        return list(pyodbc.drivers())
    except Exception:
        return []


def _connect_problem(conn_str: str, messages: list[ServerMessage], drivers: list[str] | None = None) -> str:
    """The one line explaining why connecting failed. ``drivers``: the installed ODBC drivers."""
    states = {m.sqlstate for m in messages}
    numbers = {m.number for m in messages}
    texts = "; ".join(dict.fromkeys(m.text for m in messages if m.text)) or "no message from the driver"
    where = describe(conn_str)
    driver = _safe_value(conn_str, ("driver",))
    if any("Can't open lib" in m.text for m in messages) or ("IM002" in states and driver):
        name = driver or _library(messages) or "?"
        installed = ", ".join(drivers or []) or "none"
        return (f"ODBC driver '{name}' is not installed here (installed: {installed}): install "
                f"{INSTALL_DRIVER} and name it in DRIVER=...")
    if "IM002" in states and not _safe_value(conn_str, ("dsn",)):
        return (f"cannot connect ({where}): no ODBC driver named: add DRIVER={{ODBC Driver 18 for SQL "
                f"Server}} or DRIVER={{FreeTDS}} to the connection string")
    if 4060 in numbers:
        return f"cannot open the database ({where}): {texts}; check DATABASE in the connection string"
    if 18456 in numbers:
        return f"login failed ({where}): check UID and PWD in the connection string"
    if states & {"08001", "08S01", "HYT00"}:
        return (f"cannot reach SQL Server ({where}): {texts}; check that the server runs "
                f"and SERVER in the connection string")
    return f"cannot connect ({where}): {texts}"


def _library(messages: list[ServerMessage]) -> str | None:
    for m in messages:
        found = re.search(r"Can't open lib '([^']*)'", m.text)
        if found:
            return found[1]
    return None


def _safe_value(conn_str: str, keys: tuple[str, ...]) -> str | None:
    try:
        return _value(conn_str, keys)
    except RelqError:
        return None


def _scrub(message: str, conn_str: str) -> str:
    """``message`` with no password of ``conn_str`` in it, and otherwise as the driver wrote it.

    A connection string echoed in the message is masked by its structure (``PWD=...``).
    A password standing alone is masked only where it is a whole token and at least
    _ECHO_MIN characters long: replacing its text wherever it occurs would rewrite the
    message letter by letter ("does not e***ist" for PWD=x) and show which letters the
    password has."""
    message = _mask_fallback(message)
    for secret in _passwords(conn_str):
        if len(secret) >= _ECHO_MIN:
            message = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", "***", message)
    return _one_line(message)


def _passwords(conn_str: str) -> list[str]:
    try:
        found = [v for k, v in parse(conn_str) if k.casefold() in _PASSWORD_KEYS]
    except Exception:
        found = []
        for match in _PASSWORD_FALLBACK.finditer(conn_str):
            raw = match[2].strip()
            found += [raw, raw.strip("{}"), raw.strip("{}").replace("}}", "}")]
    return sorted({s for s in found if s}, key=len, reverse=True)


# -- executing -----------------------------------------------------------------------------------------------


@contextmanager
def server_errors(context: str = "") -> Iterator[None]:
    """A pyodbc error raised inside becomes a :class:`SqlError` with the server's messages."""
    try:
        yield
    except Exception as exc:
        if _is_pyodbc_error(exc):
            raise SqlError(server_messages(exc), context=context) from exc
        raise


def run_batch(cursor: Any, sql: str) -> None:
    """Execute ``sql`` and drain every result set and row count, so that an error in any
    statement of the batch surfaces here, as a :class:`SqlError`."""
    with server_errors():
        cursor.execute(sql)
        while _next_set(cursor):
            pass


def sql_value(value: Any) -> Any:
    """A parameter as relq sends it: a datetime becomes its ISO 8601 text with microseconds.

    relq's keys and concurrency tokens are DATETIME2 values in whole microseconds, and a
    token only works if it comes back exactly. How a datetime parameter is bound (and how
    much of it survives) has varied across pyodbc versions and ODBC drivers; ISO 8601
    text converts to DATETIME2 exactly, whatever the session's language or DATEFORMAT.
    relq's times are UTC: a datetime with an offset is converted to UTC first."""
    if isinstance(value, datetime):
        return utc(value).isoformat(timespec="microseconds")
    return value


def utc(value: datetime) -> datetime:
    """A datetime as relq stores times: naive, in UTC (one with an offset converted to UTC)."""
    return value if value.tzinfo is None else value.astimezone(timezone.utc).replace(tzinfo=None)


def query(cursor: Any, sql: str, *params: Any) -> list[tuple]:
    """Run a parameterised batch of relq's own: the rows of its first result set ([] when
    it has none), every later result drained so that the connection is free again."""
    with server_errors():
        cursor.execute(sql, *[sql_value(p) for p in params])
        rows: list[tuple] | None = None
        while True:
            if rows is None and cursor.description is not None:
                rows = [tuple(row) for row in cursor.fetchall()]
            if not _next_set(cursor):
                return rows or []


def result_sets(cursor: Any, sql: str, *params: Any,
                context: str = "") -> tuple[list[list[tuple]], list[list[str]]]:
    """Run a batch and keep every result set with its column names (a batch that returns
    more than its procedure's rows, such as the actual plans of SET STATISTICS XML ON)."""
    with server_errors(context):
        cursor.execute(sql, *[sql_value(p) for p in params])
        return _collect(cursor)


def _next_set(cursor: Any) -> bool:
    """cursor.nextset(), False when some drivers say "No results" instead."""
    try:
        return bool(cursor.nextset())
    except Exception as exc:
        if _is_pyodbc_error(exc, "ProgrammingError") and "No results" in str(exc):
            return False
        raise


@contextmanager
def transaction(conn: Any) -> Iterator[Any]:
    """An explicit transaction on an autocommit connection: BEGIN TRANSACTION, then
    COMMIT when the block ends, or ROLLBACK when it raises.

    This is how to call a relq _utx procedure from Python. pyodbc's autocommit=False
    does not do: ODBC implements it with SET IMPLICIT_TRANSACTIONS ON, where no
    transaction is open until a statement needs one, so a _utx called first would
    find @@TRANCOUNT at 0 and refuse (735702)."""
    cursor = conn.cursor()
    run_batch(cursor, "BEGIN TRANSACTION;")
    try:
        yield conn
    except BaseException:
        run_batch(cursor, "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION;")
        raise
    run_batch(cursor, "COMMIT TRANSACTION;")


@dataclass
class CallResult:
    """What a procedure returned: its RETURN code and its result sets, in order."""

    return_code: int
    result_sets: list[list[tuple]]  # rows of each result set, in order
    columns: list[list[str]]  # column names of each result set


_PART = r"(?:[A-Za-z_][A-Za-z0-9_$#@]{0,127}|\[[A-Za-z0-9_$#@ ]{1,128}\])"
_PROCEDURE = re.compile(rf"{_PART}(?:\.{_PART}){{0,2}}")
_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def call(conn: Any, procedure: str, *, with_plans: bool = False, **params: Any) -> CallResult:
    """Call ``procedure`` (``dbo.Name`` or ``[dbo].[Name]``) with named parameters (None is
    NULL) and capture its RETURN code. OUTPUT parameters are not supported: return values
    as a result set instead. ``with_plans``: run it under SET STATISTICS XML ON, so that
    each statement's actual plan comes back as a result set of its own among the
    procedure's. Raises ValueError for a name that is not a plain identifier, before
    touching ``conn``, and SqlError (context: the procedure) when SQL Server fails."""
    sql = _call_sql(procedure, list(params), with_plans)
    with server_errors(procedure):
        cursor = conn.cursor()
    try:
        sets, columns = result_sets(cursor, sql, *params.values(), context=procedure)
    finally:
        cursor.close()
    if not columns or columns[-1] != ["return_code"] or len(sets[-1]) != 1:
        raise RelqError(f"{procedure}: no return code came back (the batch ended early)")
    columns.pop()
    return_code = sets.pop()[0][0]
    return CallResult(int(return_code) if return_code is not None else 0, sets, columns)


def _call_sql(procedure: str, names: list[str], with_plans: bool = False) -> str:
    """The batch :func:`call` runs; ValueError if a name could smuggle in SQL."""
    if not isinstance(procedure, str) or not _PROCEDURE.fullmatch(procedure):
        raise ValueError(f"not a procedure name: {procedure!r} (expected schema.Name or [schema].[Name])")
    for name in names:
        if not _PARAMETER.fullmatch(name):
            raise ValueError(f"not a parameter name: {name!r}")
    arguments = ", ".join(f"@{name} = ?" for name in names)
    execute = f"EXEC @rc = {procedure}{' ' if arguments else ''}{arguments};"
    if with_plans:
        execute = f"SET STATISTICS XML ON; {execute} SET STATISTICS XML OFF;"
    return f"SET NOCOUNT ON; DECLARE @rc INT; {execute} SELECT @rc AS [return_code];"


def _collect(cursor: Any) -> tuple[list[list[tuple]], list[list[str]]]:
    """The rows and column names of every result set (row counts skipped)."""
    result_sets: list[list[tuple]] = []
    columns: list[list[str]] = []
    while True:
        if cursor.description is not None:
            columns.append([d[0] for d in cursor.description])
            result_sets.append([tuple(row) for row in cursor.fetchall()])
        if not _next_set(cursor):
            return result_sets, columns
