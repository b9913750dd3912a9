"""The one place that knows connection strings, pyodbc, procedure calls, return
codes and error numbers.

The target server is an ODBC connection string, found by :func:`resolve_target`:
``--conn``, then RELQ_MSSQL, then ``relq.mssql`` in invoke.yaml (what is typed on
the command line beats the environment, which beats the file, as in sqlcmd,
sqlpackage, Flyway and the Azure CLI). Everything shown to a user goes through
:func:`mask` or :func:`describe`, and a driver's message through :func:`connect_failure`,
so a password never reaches a message, whatever the form of the string; a string
that breaks the grammar is refused with the character where it does, never its
text. pyodbc is imported lazily, only by :func:`load_pyodbc` (through
:func:`connect`): code and tests that never connect do not need unixODBC.
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
# Where a password's value starts in free text, and a segment that begins a keyword=value pair.
_PASSWORD_AT = re.compile(r"\b(?:pwd|password)\s*=\s*", re.IGNORECASE)
_NEXT_PAIR = re.compile(r"\s*\w[\w\s]*=")
# The shortest password masked where a message shows it on its own: SQL Server's password
# policy asks for eight characters (https://learn.microsoft.com/sql/relational-databases/
# security/password-policy); a shorter one is likelier an ordinary word of the message.
_ECHO_MIN = 8
_ECHOED = "\x00"  # stands in a message for the connection string it echoes, until it is masked
_NONE_CONFIGURED = ("no SQL Server configured: set RELQ_MSSQL to an ODBC connection string, pass --conn, "
                    "or set relq.mssql in invoke.yaml")


# -- where the server is -------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Target:
    """A connection string and where it came from; shown masked, never with its password."""

    conn_str: str
    source: str  # "--conn", "RELQ_MSSQL" or "invoke.yaml"

    def __str__(self) -> str:
        return f"{mask(self.conn_str)} (from {self.source})"

    def __repr__(self) -> str:
        return f"Target({mask(self.conn_str)!r}, source={self.source!r})"


def resolve_target(cli: str | None, config: Mapping[str, Any] | None,
                   environ: Mapping[str, str] = os.environ) -> Target:
    """The server to use: ``--conn`` (``cli``) beats RELQ_MSSQL beats invoke.yaml's
    ``relq: {mssql: ...}``. A blank value counts as unset."""
    candidates = ((cli, "--conn"), (environ.get(ENV_VAR), ENV_VAR), (_configured(config), "invoke.yaml"))
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

# The grammar is SQLDriverConnect's (https://learn.microsoft.com/sql/odbc/reference/syntax/
# sqldriverconnect-function, "Comments"): attribute-keyword=attribute-value pairs separated by ';';
# a value may be {braced}, where ';' is literal and '}}' is a literal '}'; a keyword holds none of
# []{}(),;?*=!@; when a keyword is repeated, the driver uses its first occurrence. relq reads
# keywords more strictly, as letters, digits, '_' and spaces: every keyword of Microsoft's ODBC
# Driver for SQL Server and of FreeTDS is spelled so, and a "keyword" with a quote, a brace or
# a '!' in it is far likelier the tail of a password whose ';' was left unbraced.
_BAD_KEYWORD = "a keyword holds only letters, digits, '_' and spaces; put a value that holds ';' in {braces}"
_NO_EQUALS = "expected keyword=value; put a value that holds ';' in {braces}"
_NO_KEYWORD = "no keyword before '='"
_EARLY_BRACE = "text follows the '}' that closes a braced value; inside braces, '}' is written '}}'"
_UNCLOSED = "a '{' that no '}' closes"


@dataclass(frozen=True)
class _Problem:
    """Where a connection string stops being readable: a 0-based index and why (never its text)."""

    index: int
    reason: str

    def __str__(self) -> str:
        return f"connection string: unreadable at character {self.index + 1} ({self.reason})"


def parse(conn_str: str) -> list[tuple[str, str]]:
    """``key=value;...`` into pairs, in order, keys as spelled (trimmed). Values may be ``{braced}``
    (``}}`` is a literal ``}``, ``;`` is literal); unbraced values are trimmed. A string that breaks
    the grammar raises RelqError naming the character where it does, and nothing of the string."""
    pairs, problem = _scan(conn_str)
    if problem:
        raise RelqError(str(problem))
    return pairs


def _scan(text: str) -> tuple[list[tuple[str, str]], _Problem | None]:
    """The pairs of ``text`` before its first problem, and that problem (None when there is none).
    A pair the problem is in is not among the pairs."""
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        start = i
        while i < n and text[i] not in "=;":
            i += 1
        key = text[start:i].strip()
        if i == n or text[i] == ";":
            if key:  # a segment without '=': pointed at where it starts
                return pairs, _Problem(start + len(text[start:i]) - len(text[start:i].lstrip()), _NO_EQUALS)
            i += 1  # an empty segment: ";;" or a trailing ";"
            continue
        if not key:
            return pairs, _Problem(i, _NO_KEYWORD)
        bad = next((k for k in range(start, i) if not _keyword_char(text[k])), None)
        if bad is not None:
            return pairs, _Problem(bad, _BAD_KEYWORD)
        value, i, problem = _scan_value(text, i + 1)
        if problem:
            return pairs, problem
        pairs.append((key, value))
    return pairs, None


def _keyword_char(char: str) -> bool:
    return char.isalnum() or char == "_" or char.isspace()


def _scan_value(text: str, start: int) -> tuple[str, int, _Problem | None]:
    """The value starting at ``start``, the index just past its ``;``, and its problem if any."""
    n = len(text)
    k = start
    while k < n and text[k].isspace():
        k += 1
    if k == n or text[k] != "{":
        end = text.find(";", k)
        end = n if end < 0 else end
        return text[k:end].strip(), end + 1, None
    opening, chars = k, []
    k += 1
    while k < n:
        if text.startswith("}}", k):
            chars.append("}")
            k += 2
        elif text[k] == "}":
            closing = k
            k += 1
            while k < n and text[k].isspace():
                k += 1
            if k < n and text[k] != ";":
                return "", k, _Problem(closing, _EARLY_BRACE)
            return "".join(chars), k + 1, None
        else:
            chars.append(text[k])
            k += 1
    return "", n, _Problem(opening, _UNCLOSED)


def build(pairs: list[tuple[str, str]]) -> str:
    """The inverse of :func:`parse`: values that need it are ``{braced}``, with ``}`` as ``}}``."""
    return ";".join(f"{key}={_quote(value)}" for key, value in pairs)


def _quote(value: str) -> str:
    if _NEEDS_BRACES.search(value):
        return "{" + value.replace("}", "}}") + "}"
    return value


def mask(conn_str: str) -> str:
    """The connection string with the values of PWD and Password as ``***``, and a password
    standing in another value as ``***`` too. A string that breaks the grammar shows its pairs
    before the problem, then ``… (unreadable from character N)``: nothing from the problem on,
    which may be a password's tail. Never raises."""
    try:
        text = conn_str if isinstance(conn_str, str) else str(conn_str)
        pairs, problem = _scan(text)
        secrets = _secrets(text)
        shown = build([(k, "***" if k.casefold() in _PASSWORD_KEYS else _hide(v, secrets)) for k, v in pairs])
        if problem is None:
            return shown
        rest = f"… (unreadable from character {problem.index + 1})"
        return f"{shown} {rest}" if shown else rest
    except Exception:
        return "***"


def _hide(value: str, secrets: list[str]) -> str:
    """A value other than a password's, as safe to show: ``***`` when it is a password, with
    ``***`` for a password of at least _ECHO_MIN characters inside it."""
    if value.strip() in secrets:
        return "***"
    for secret in secrets:
        if len(secret) >= _ECHO_MIN:
            value = value.replace(secret, "***")
    return value


def _secrets(conn_str: str) -> list[str]:
    """Every text of ``conn_str`` that is, or may be, a password, longest first: the values of
    PWD and Password as the driver reads them, and, for a string that breaks the grammar, as the
    user may have meant them (a ';' or '}' inside an unbraced value, an unescaped '}' inside a
    braced one, a '{' never closed)."""
    pairs, _ = _scan(conn_str)
    found = {v for k, v in pairs if k.casefold() in _PASSWORD_KEYS}
    for match in _PASSWORD_AT.finditer(conn_str):
        found |= _readings(conn_str[match.end():_lenient_end(conn_str, match.end())])
    return sorted((s for s in found if s.strip()), key=len, reverse=True)


def _readings(raw: str) -> set[str]:
    """The ways a password written as ``raw`` may be read (braced or not, escaped or not)."""
    raw = raw.strip()
    forms = {raw, raw.split(";", 1)[0].strip()}
    if raw.startswith("{"):
        body = raw[1:]
        first = re.match(r"(?:\}\}|[^}])*", body)
        forms |= {body, body[:-1] if body.endswith("}") else body, first[0] if first else body}
    return {f for form in forms for f in (form.strip(), form.replace("}}", "}").strip())}


def _lenient_end(text: str, start: int) -> int:
    """Where a value starting at ``start`` ends, read as a password's: generously. A braced value
    never closed runs to the end; one closed early by a lone '}' reads on; an unbraced value
    runs over every following segment that does not begin a ``keyword=`` pair."""
    n, k = len(text), start
    if text.startswith("{", k):
        k += 1
        while k < n and (text[k] != "}" or text.startswith("}}", k)):
            k += 2 if text.startswith("}}", k) else 1
        if k >= n:
            return n
        k += 1
        end = text.find(";", k)
        if not text[k:n if end < 0 else end].strip():
            return k
    while True:
        end = text.find(";", k)
        if end < 0:
            return n
        if end + 1 == n or _NEXT_PAIR.match(text, end + 1):
            return end
        k = end + 1


def _mask_fallback(text: object) -> str:
    """Free text (a driver's message) with every value after ``PWD=`` or ``Password=`` as
    ``***``, read generously (:func:`_lenient_end`): a message that echoes a password shows
    none of it, though what follows it up to the next ``keyword=`` may go with it. Never raises."""
    try:
        text = str(text)
        parts, k = [], 0
        for match in _PASSWORD_AT.finditer(text):
            if match.start() < k:
                continue  # inside a value already masked
            parts += [text[k:match.end()], "***"]
            k = _lenient_end(text, match.end())
        return "".join([*parts, text[k:]])
    except Exception:
        return "***"


def _first(pairs: list[tuple[str, str]], keys: tuple[str, ...] | frozenset[str]) -> str | None:
    """The value of the first of ``keys`` to occur (ODBC uses the first occurrence), None if empty."""
    for key, value in pairs:
        if key.casefold() in keys:
            return value or None
    return None


def _value(conn_str: str, keys: tuple[str, ...] | frozenset[str]) -> str | None:
    return _first(parse(conn_str), keys)


def with_database(conn_str: str, database: str) -> str:
    """The connection string with DATABASE (or Initial Catalog) set to ``database``."""
    pairs = parse(conn_str)
    if not any(k.casefold() in _DATABASE_KEYS for k, _ in pairs):
        return build([*pairs, ("DATABASE", database)])
    return build([(k, database if k.casefold() in _DATABASE_KEYS else v) for k, v in pairs])


def describe(conn_str: str) -> str:
    """A safe one-line summary: server, port, database, driver and UID (never the password,
    nor a value that is the password)."""
    try:
        pairs = parse(conn_str)
    except RelqError:
        return "unreadable connection string"
    secrets = _secrets(conn_str)
    fields = (("server", _SERVER_KEYS), ("port", ("port",)), ("database", _DATABASE_KEYS),
              ("driver", ("driver",)), ("uid", ("uid", "user id")))
    parts = [f"{name}={_hide(value, secrets)}" for name, keys in fields if (value := _first(pairs, keys))]
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

# A RAISERROR of a number that this server's sys.messages lacks arrives as error 18054, "Error
# %d, severity %d, state %d was raised, but no message with that error number was found in
# sys.messages. If error is larger than 50000, make sure the user-defined message is added using
# sp_addmessage." (https://learn.microsoft.com/sql/relational-databases/errors-events/
# database-engine-events-and-errors-18000-to-18999). relq's messages live in each server's master
# (https://learn.microsoft.com/sql/relational-databases/databases/manage-metadata-when-making-a-
# database-available-on-another-server#user-defined-error-messages), so after a failover or a
# restore onto a server where they were never registered every relq error comes so. Its text names
# the number raised; of its other numbers the severity is at most 25, the state at most 255, and
# 50000 is no relq number, so a number of relq's range in it is the one raised, whatever the
# session's language words the rest.
UNREGISTERED = 18054
RELQ_NUMBERS = range(735701, 735800)  # docs/errors.md
_RAISED = re.compile(r"(?<!\d)(7357\d\d)(?!\d)")


def unregistered_relq_number(number: int | None, text: str) -> int | None:
    """The relq error an error 18054 stands for (its text names the number raised), None for any
    other error."""
    if number != UNREGISTERED:
        return None
    found = _RAISED.search(text or "")
    return int(found[1]) if found and int(found[1]) in RELQ_NUMBERS else None


class SqlError(RelqError):
    """SQL Server refused a batch or a procedure call; ``number`` is its error number. A relq
    error that arrived as 18054 (its message is not registered on the server) has relq's number,
    and ``raised_as`` 18054, so that every caller branching on the number (the worker's lost
    items, the dashboard, the pipeline) sees the error relq raised; ``raised_as`` is None for
    every other error."""

    def __init__(self, messages: list[ServerMessage], context: str = "") -> None:
        self.messages = list(messages)
        self.context = context
        main = _main(self.messages)
        sent = main.number if main else None
        self.text: str = main.text if main else ""
        self.sqlstate: str | None = main.sqlstate if main else None
        relq_number = unregistered_relq_number(sent, self.text)
        self.number: int | None = sent if relq_number is None else relq_number
        self.raised_as: int | None = None if relq_number is None else sent
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
        if self.raised_as is not None:
            head += (f" (arrived as {self.raised_as}: relq's messages are not registered on this server; "
                     f"run invoke register-messages against it)")
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
# The driver comes along: the driver manager alone reaches no server.
INSTALL_UNIXODBC = ("apt-get install unixodbc tdsodbc; dnf install unixODBC freetds; "
                    "brew install unixodbc freetds")
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
        raise RelqError(f"unixODBC and an ODBC driver are not installed ({INSTALL_UNIXODBC}): pyodbc cannot "
                        f"load "
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
    ``drivers``: the installed ODBC drivers, to name when the one asked for is missing.
    The driver's texts are scrubbed before they are worded in, so that a scrub never eats
    relq's own advice after them."""
    messages = [ServerMessage(m.number, _scrub(m.text, conn_str), m.sqlstate) for m in server_messages(exc)]
    return _one_line(_connect_problem(conn_str, messages, drivers))


def _drivers(pyodbc: Any) -> list[str]:
    """The ODBC drivers the driver manager knows (odbcinst.ini); [] if it cannot say."""
    try:
        return list(pyodbc.drivers())
    except Exception:
        return []


def _connect_problem(conn_str: str, messages: list[ServerMessage], drivers: list[str] | None = None) -> str:
    """The one line explaining why connecting failed. ``messages``: the driver's, scrubbed;
    ``drivers``: the installed ODBC drivers."""
    states = {m.sqlstate for m in messages}
    numbers = {m.number for m in messages}
    texts = "; ".join(dict.fromkeys(m.text for m in messages if m.text)) or "no message from the driver"
    where = describe(conn_str)
    driver = _safe_value(conn_str, ("driver",))
    if any("Can't open lib" in m.text for m in messages) or ("IM002" in states and driver):
        name = _hide(driver, _secrets(conn_str)) if driver else _library(messages) or "?"
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

    The connection string echoed whole becomes :func:`mask`'s form of it (put in last, so
    that nothing reads relq's own ``PWD=***`` as a value to mask). A value after
    ``PWD=`` or ``Password=`` is masked, whatever its form (:func:`_mask_fallback`). A password
    standing alone is masked only where it is a whole token, and either at least _ECHO_MIN
    characters long or also the whole value of another key (a DATABASE or UID the message
    names): replacing a short password's text wherever it occurs would rewrite the message
    letter by letter ("does not e***ist" for PWD=x) and show which letters the password has.
    Never raises."""
    try:
        text = str(message).replace(_ECHOED, "")
        for form in sorted({conn_str, conn_str.strip()}, key=len, reverse=True):
            if form.strip():
                text = text.replace(form, _ECHOED)
        secrets = _secrets(conn_str)
        for secret in secrets:  # longest first: the exact extent of a password echoed after PWD=
            text = re.sub(rf"(\b(?:pwd|password)\s*=\s*){re.escape(secret)}", r"\1***", text,
                          flags=re.IGNORECASE)
        text = _mask_fallback(text)
        values = {v.strip() for k, v in _scan(conn_str)[0] if k.casefold() not in _PASSWORD_KEYS}
        for secret in secrets:
            if len(secret) >= _ECHO_MIN or secret in values:
                text = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", "***", text)
        return _one_line(text.replace(_ECHOED, mask(conn_str)))
    except Exception:
        return "***"


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
