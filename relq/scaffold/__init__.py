"""The relational-queue pattern, written down once. The queues are listed in
database/queues.toml; their objects are rendered from the Jinja templates under
relq/scaffold/templates, in four groups:

- every_queue/: what every relational queue has alike: the base table, its job
  types and their data, the attempt history, the archive, the outcome list type,
  claim (Next_), report (Modify_), Extend_, the item controls, Move_, the batch
  report, purge, the worker view, the grants, and their tSQLt classes;
- job_queues/: the rest of a queue of the job shape (SyncQueue's: typed jobs on an
  entity with a JSON payload): the item list type, the types' procedures, enqueue,
  drain and their tSQLt classes;
- subtypes/: a job queue's exclusive subtypes, when its catalogue entry asks for
  them: per subtype a table of the type's own columns (dbo.<Queue>_<Type>) and its
  tSQLt class; and, for any queue with such a table, dbo.<Queue>_IsType_fn, which
  their CHECKs call. A subtype's columns also reach the list type, Add_, the worker
  view, the archive and the purge;
- all_queues/: objects over every queue at once (the health views, the attempt history view).

A queue of the custom shape (Notification: the seeds' queue, a subtype and delivery
channels) gets every_queue/ and dbo.<Queue>_IsType_fn: its subtype and channel
tables, list types and enqueue are the domain's, written by hand, and its catalogue
entry names the tables its worker view joins ([[queue.join]]), with the columns the
view, the archive copy and a channel's report (Modify_) use.
The queues' files must be exactly what the templates make (tests/test_scaffold.py
compares them), so a change to a templated object is made in its template and
rendered for every queue (`invoke render-queues`); `invoke new-queue` adds a queue
of the job shape."""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from relq.errors import RelqError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TEMPLATES = Path(__file__).parent / "templates"
CATALOGUE = "database/queues.toml"
NAME = "QUEUE"  # stands for the queue's name in a template's file name
SUBTYPE = "SUBTYPE"  # and for a subtype's job type in a subtypes/ template's
SHAPES = ("job", "custom")
GROUPS = {"every_queue": SHAPES, "job_queues": ("job",)}
SUBTYPES = "subtypes"  # a job queue's subtypes; the function their CHECKs call, for any typed table
ONCE = "all_queues"
# The job types the Add_ tSQLt classes enqueue (they fake dbo.<Queue>Type), so that
# none of them has a subtype whose columns the tests would have to fill.
TEST_TYPES = ("AddTestJobA", "AddTestJobB")
# The columns a job queue's list type, worker view and archive have already: a subtype's
# columns join them there, so they may not take one of these names.
BASE_COLUMNS = ("ItemNo", "EnqueuedAt", "Type", "EntityKey", "Payload", "Status", "Step", "AttemptNum",
                "Response", "Error", "StartedAt", "Duration", "ScheduledFor", "UpdatedAt", "Priority",
                "GroupKey", "DedupKey", "LockedBy", "LeaseUntil", "ArchivedAt")
# At most 14 characters: the templates' longest lines then stay within the house
# style's 120 columns (sqlfluff LT05), and every transaction name within SQL Server's 32.
_QUEUE_NAME = re.compile(r"[A-Z][A-Za-z0-9]{1,13}")
_TYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,49}")  # dbo.[_Type] is VARCHAR(50)
_PREFIX = re.compile(r"[a-z][a-z0-9]*")
_ALIAS = re.compile(r"[a-z]")
_WORDS = re.compile(r"[a-z][a-z -]{0,19}")  # short enough to keep the comments' lines in the style
# "test Worker_<Queue>_V shows NULL <table without Queue_> columns when an item has no row
# there" is 64 characters and the two names: the longest tSQLt name a join's name makes.
_JOIN_NAME_ROOM = 128 - 64
_CHANNEL_NOUN = re.compile(r"[A-Za-z][A-Za-z -]{0,19}")  # "e-mail", "SMS"
_LITERAL_ALIAS = re.compile(r"\bAS ([a-z])\b")  # a template's own one-letter aliases
_COLUMN_NAME = re.compile(r"[A-Z][A-Za-z0-9]{0,29}")
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")
# A subtype or join column's SQL type: one of the project's alias types, or a built-in type.
_SQL_TYPE = re.compile(
    r"dbo\.(?:[A-Za-z][A-Za-z0-9]*|\[_?[A-Za-z0-9]+\])"
    r"|(?:N?VARCHAR|N?CHAR|VARBINARY|BINARY)\((?:[1-9][0-9]{0,3}|MAX)\)"
    r"|(?:DECIMAL|NUMERIC)\([1-9][0-9]?, ?[0-9][0-9]?\)"
    r"|(?:DATETIME2|DATETIMEOFFSET|TIME)\([0-7]\)"
    r"|TINYINT|SMALLINT|INT|BIGINT|BIT|DATE|UNIQUEIDENTIFIER|FLOAT|REAL|MONEY", re.IGNORECASE)
_COLUMN = re.compile(r"\s*(\S+)\s+(.+?)(\s+(?:NOT\s+)?NULL)?\s*", re.IGNORECASE)


# SQL Server's limits on a built-in type's length, precision and scale.
_LENGTH = re.compile(r"(N?)(VAR)?(?:CHAR|BINARY)\(([0-9]+|MAX)\)", re.IGNORECASE)
_PRECISION = re.compile(r"(?:DECIMAL|NUMERIC)\(([0-9]+), ?([0-9]+)\)", re.IGNORECASE)
_ALIAS_FROM = re.compile(r"CREATE TYPE dbo\.(\S+) FROM ([^;]+?)(?:\s+(?:NOT\s+)?NULL)?\s*;", re.IGNORECASE)


@dataclass(frozen=True)
class Column:
    name: str  # Amount
    type: str  # DECIMAL(19, 4), dbo.EntityKey
    null: bool = False  # NULL allowed: the column is optional when enqueueing
    base: str = ""  # the built-in type it stores (an alias type's, from database/types)

    def __str__(self) -> str:
        return f"{self.name} {self.type}" + (" NULL" if self.null else "")

    @property
    def sample(self) -> str:
        """A literal of the column's type, for the tSQLt classes to fill it with: value(1)."""
        return self.value(1)

    def value(self, n: int) -> str:
        """A literal of the column's type that is the n-th (from 1) of its own: one for each n,
        as long as the type holds that many (a BIT holds two; a CHAR(1) 9 numbers, then 26
        letters), so that the tSQLt classes can tell their columns apart. Unresolved: n."""
        base = self.base.upper() or "INT"
        size = re.match(r"\w+\s*\(\s*([0-9]+)(?:\s*,\s*([0-9]+))?", base)
        length = int(size[1]) if size else (1 if re.match(r"N?(?:VAR)?CHAR\b|(?:VAR)?BINARY\b", base) else 0)
        if re.match(r"N?(?:VAR)?CHAR\b", base):
            text = str(n)
            if "(MAX)" not in base and len(text) > length:  # letters next: A to Z, then AA, AB, ...
                letters, rest = "", n - 9
                while rest > 0:
                    rest, digit = divmod(rest - 1, 26)
                    letters = chr(ord("A") + digit) + letters
                text = letters[-length:]  # (past them no longer its own, but still a value)
            return ("N'" if base.startswith("N") else "'") + text + "'"
        if re.match(r"(?:VAR)?BINARY\b", base):  # a BINARY(n) literal of its full length
            width = length if base.startswith("BINARY") else max(1, (n.bit_length() + 7) // 8)
            return f"0x{n % 256 ** width:0{2 * width}X}"
        if base.startswith("UNIQUEIDENTIFIER"):
            return f"'00000000-0000-0000-0000-{n:012d}'"
        day = (date(2024, 1, 1) + timedelta(days=n)).isoformat()
        if re.match(r"DATE\b", base):
            return f"'{day}'"
        if base.startswith(("DATETIME", "SMALLDATETIME")):  # the T form: any language reads it alike
            return f"'{day}T00:00:00'"
        if re.match(r"TIME\b", base):
            return f"'{8 + n // 60:02d}:{n % 60:02d}:00'"
        if base.startswith("BIT"):
            return str(n % 2)
        if base.startswith(("DECIMAL", "NUMERIC")) and size:  # DECIMAL(p, s): n units of its last digit
            precision, scale = int(size[1]), int(size[2] or 0)
            return f"{Decimal(n % 10 ** precision).scaleb(-scale):f}"
        return str(n)


@dataclass(frozen=True)
class Subtype:
    """An exclusive subtype of a job queue: the columns only items of one job type have,
    in a table of their own (dbo.<Queue>_<Type>), one row per item of that type."""

    type: str
    columns: tuple[Column, ...]


def parse_column(text: str) -> Column:
    """'Amount DECIMAL(19,4)' or 'Reference NVARCHAR(100) NULL' -> Column (unchecked)."""
    match = _COLUMN.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise RelqError(f"a column is 'Name TYPE' or 'Name TYPE NULL', not {text!r}")
    name, sql_type, null = match.groups()
    if _SQL_TYPE.fullmatch(sql_type) and not sql_type.lower().startswith("dbo."):
        sql_type = re.sub(r",\s*", ", ", sql_type.upper())
    return Column(name, sql_type, null is not None and "NOT" not in null.upper())


def parse_subtype(text: str) -> Subtype:
    """'CardPayment: Amount DECIMAL(19,4), Reference NVARCHAR(100) NULL' -> Subtype (unchecked):
    `invoke new-queue --subtype`'s form. Commas inside a type's parentheses stay with it."""
    job_type, colon, columns = text.partition(":")
    if not colon:
        raise RelqError(f"a subtype is 'Type: Column TYPE, Column TYPE NULL, ...', not {text!r}")
    parts = re.split(r",(?![^(]*\))", columns)
    return Subtype(job_type.strip(), tuple(parse_column(c) for c in parts if c.strip()))


@dataclass(frozen=True)
class Join:
    """A custom queue's table written by hand that its worker view joins on the item's key
    (a subtype, or a delivery channel): the columns the view shows of it, which its
    archive keeps too. A channel (dbo.<Queue>_<Channel>) also has Response and Error,
    its own delivery result: the view shows them as <Channel>Response and <Channel>Error,
    and Modify_ records them (@<Channel>Response, @<Channel>Error)."""

    table: str
    columns: tuple[Column, ...]  # their types are the hand-written table's (the archive has them)
    channel: bool = False
    noun: str = ""  # what the comments call a channel ("e-mail"; default: its name)


@dataclass(frozen=True)
class Queue:
    name: str  # SyncQueue
    prefix: str  # its settings' prefix in dbo.AppSettings: syncqueue
    alias: str  # the table alias its procedures use: q
    shape: str = "job"
    noun: str = "job"  # words for the comments: "sync job"
    verb: tuple[str, str] = ("process", "processed")
    types: tuple[str, ...] = ()
    subtypes: tuple[Subtype, ...] = ()
    # A custom queue's tables that its worker view joins (its subtypes and channels). The
    # templated tSQLt classes fake them with the queue; the purge deletes their rows first.
    joins: tuple[Join, ...] = ()
    # The migrations that brought the queue's tables and types to their present definition
    # in databases deployed before them ("V0001"): their comments name them. A new queue
    # has none, and its files mention none.
    history: tuple[str, ...] = ()

    @property
    def typed_tables(self) -> list[dict[str, str]]:
        """The job types that have an exclusive subtype table: {"type", "table"}."""
        tables = ({f"{self.name}_{s.type}" for s in self.subtypes}
                  | {j.table for j in self.joins if not j.channel})
        return [{"type": t, "table": f"{self.name}_{t}"} for t in self.types if f"{self.name}_{t}" in tables]

    def variables(self) -> dict[str, object]:
        subtypes = [{"type": s.type, "table": f"{self.name}_{s.type}", "alias": f"s{n}",
                     "columns": [dict(vars(c), sample=c.sample) for c in s.columns]}
                    for n, s in enumerate(self.subtypes, 1)]
        # The tables the worker view joins, as (table, alias, its columns there as
        # (expression, name)) and a channel's name: a job queue's subtypes, or a custom
        # queue's joins. The view, the purge's archive copy and Modify_ read these.
        joined = [{"table": s["table"], "alias": s["alias"], "channel": None,
                   "columns": [(f"{s['alias']}.{c['name']}", c["name"]) for c in s["columns"]]}
                  for s in subtypes]
        for n, join in enumerate(self.joins, 1):
            alias, channel = f"s{n}", join.table.removeprefix(f"{self.name}_") if join.channel else None
            result = [(f"{alias}.{c}", f"{channel}{c}") for c in ("Response", "Error")] if channel else []
            joined.append({"table": join.table, "alias": alias, "channel": channel,
                           "noun": join.noun or channel,
                           "columns": [(f"{alias}.{c.name}", c.name) for c in join.columns] + result})
        # The same columns by their name in the view, with their types, in the view's order: a
        # subtype's, a join's, and a channel's result (a dbo.WebResponse, an NVARCHAR(MAX), as
        # Modify_'s parameters). The archive keeps each of them (NULL where an item has none).
        shown = [c for s in self.subtypes for c in s.columns]
        for join in self.joins:
            channel = join.table.removeprefix(f"{self.name}_")
            shown += [*join.columns, *(Column(f"{channel}{r}", "dbo.WebResponse", base="NVARCHAR(MAX)")
                                       for r in ("Response", "Error") if join.channel)]
        return {"Queue": self.name, "prefix": self.prefix, "a": self.alias, "noun": self.noun,
                "history": list(self.history),
                "nouns": self.noun + "s", "verb": self.verb[0], "verbed": self.verb[1],
                "types": list(self.types), "subtypes": subtypes, "test_types": list(TEST_TYPES),
                "entity": self.shape == "job",  # EntityKey and Payload: a job queue's columns
                "joined": joined, "view_tables": [j["table"] for j in joined],
                "archived_columns": [f"{c.name} {c.type}" for c in shown],
                "joined_columns": [c.name for c in shown],
                # a value for each of them in the tSQLt classes, by that name: of its type, and
                # each column's its own (the n-th, in the view's order), so that a column mapped
                # to another one shows
                "joined_values": {c.name: c.value(n) for n, c in enumerate(shown, 1)},
                "channels": [j for j in joined if j["channel"]],
                # the job types with a table of their own (dbo.<Queue>_<Type>, whose CHECK asks
                # dbo.<Queue>_IsType_fn): a job queue's subtypes, a custom queue's joins so named
                "typed_tables": self.typed_tables,
                # a custom queue whose every type has one: its type table's comment says so
                "each_type_typed": self.shape == "custom" and len(self.typed_tables) == len(self.types),
                # every subtype's columns, in catalogue order, with the subtype they belong to
                "subtype_columns": [dict(c, subtype=s) for s in subtypes for c in s["columns"]]}


def load(root: Path) -> list[Queue]:
    """The queues of database/queues.toml under ``root``, checked."""
    path = root / CATALOGUE
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("queue", [])
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RelqError(f"{CATALOGUE}: {exc}") from None
    queues = []
    for n, entry in enumerate(entries, 1):
        required = ("name", "prefix", "alias")
        missing = [k for k in required if k not in entry] if isinstance(entry, dict) else ["a table"]
        if missing:
            raise RelqError(f"{CATALOGUE}: queue {n} lacks {', '.join(missing)}")
        words = [entry[k] for k in required] + [entry.get("shape", "job"), entry.get("noun", "job")]
        verb = entry.get("verb", ["process", "processed"])
        if not all(isinstance(w, str) for w in words) or not (
                isinstance(verb, list) and len(verb) == 2 and all(isinstance(v, str) for v in verb)):
            raise RelqError(f"{CATALOGUE}: queue {n}: name, prefix, alias, shape and noun are strings, "
                            f'verb = ["process", "processed"]')
        try:
            queue = Queue(*words, tuple(verb), _names(entry, "types"),
                          _subtypes(entry.get("subtype", []), root), _joins(entry.get("join", []), root),
                          _history(entry, root))
        except RelqError as exc:
            raise RelqError(f"{CATALOGUE}: queue {n}: {exc}") from None
        _check(queue, f"{CATALOGUE}: queue {n} ({queue.name})")
        queues.append(queue)
    if not queues:
        raise RelqError(f"{CATALOGUE}: no [[queue]]: the health views need at least one")
    _check_unique(queues, CATALOGUE)
    return queues


def _names(entry: dict[str, object], key: str) -> tuple[str, ...]:
    """A catalogue entry's list of strings (its types, a join's columns)."""
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RelqError(f'{key} is a list of strings: {key} = ["...", ...]')
    return tuple(value)


def _history(entry: dict[str, object], root: Path) -> tuple[str, ...]:
    """A catalogue entry's history: migrations of database/migrations, by their version."""
    history = _names(entry, "history")
    versions = {p.name.split("__", 1)[0] for p in (root / "database/migrations").glob("V*__*.sql")}
    unknown = [v for v in history if v not in versions]
    if unknown:
        raise RelqError(f"history: no migration {', '.join(unknown)} in database/migrations")
    return history


def _joins(entries: list[dict[str, object]], root: Path) -> tuple[Join, ...]:
    """A catalogue entry's [[queue.join]] tables: table = "...", columns = [...], channel = true."""
    def well_formed(e: object) -> bool:
        return (isinstance(e, dict) and isinstance(e.get("table"), str)
                and isinstance(e.get("channel", False), bool) and isinstance(e.get("noun", ""), str))

    if not isinstance(entries, list) or not all(map(well_formed, entries)):
        raise RelqError('each [[queue.join]] has table = "...", columns = ["...", ...], maybe channel = true '
                        'and noun = "..."')
    parsed = [tuple(parse_column(c) for c in _names(e, "columns")) for e in entries]
    aliases = _aliases(root, [c for columns in parsed for c in columns])
    return tuple(Join(e["table"], _resolve(columns, aliases, f"join {e['table']}"), e.get("channel", False),
                      e.get("noun", "")) for e, columns in zip(entries, parsed, strict=True))


def _subtypes(entries: list[dict[str, object]], root: Path) -> tuple[Subtype, ...]:
    """A catalogue entry's [[queue.subtype]] tables: type = "...", columns = ["Name TYPE", ...]."""
    if not isinstance(entries, list):
        raise RelqError("[[queue.subtype]] is a list of tables with type and columns")
    subtypes = []
    for entry in entries:
        columns = entry.get("columns") if isinstance(entry, dict) else None
        if not isinstance(columns, list) or not isinstance(entry.get("type"), str):
            raise RelqError("each [[queue.subtype]] has type = \"...\" and columns = [\"Name TYPE\", ...]")
        subtypes.append(Subtype(entry["type"], tuple(parse_column(c) for c in columns)))
    return resolve(tuple(subtypes), root)


def resolve(subtypes: tuple[Subtype, ...], root: Path) -> tuple[Subtype, ...]:
    """``subtypes`` with each column's built-in type: an alias type's from its file in
    ``root``'s database/types (a RelqError when there is none)."""
    aliases = _aliases(root, [c for s in subtypes for c in s.columns])
    return tuple(replace(s, columns=_resolve(s.columns, aliases, f"subtype {s.type}")) for s in subtypes)


def _resolve(columns: tuple[Column, ...], aliases: dict[str, tuple[str, str]],
             where: str) -> tuple[Column, ...]:
    """``columns`` with their built-in types (``where`` names them in an error), an alias
    type spelt as its file creates it (dbo.email -> dbo.Email: the lint wants one spelling)."""
    resolved = []
    for column in columns:
        sql_type, base = column.type, column.type
        if sql_type.lower().startswith("dbo."):
            name = sql_type[4:].strip("[]")
            spelt, base = aliases.get(name.casefold(), (name, ""))
            if not base:
                raise RelqError(f"{where}: column {column.name}'s type {column.type} "
                                f"is not an alias type of database/types")
            sql_type = f"dbo.[{spelt}]" if sql_type[4:].startswith("[") else f"dbo.{spelt}"
        resolved.append(replace(column, type=sql_type, base=base))
    return tuple(resolved)


def _aliases(root: Path, columns: list[Column]) -> dict[str, tuple[str, str]]:
    """The alias types of ``root``'s database/types: name (case-folded) -> (name as its
    file spells it, built-in type); none read when no column of ``columns`` takes one."""
    if not any(c.type.lower().startswith("dbo.") for c in columns):
        return {}
    return {m.group(1).strip("[]").casefold(): (m.group(1).strip("[]"), m.group(2))
            for f in (root / "database/types").glob("*.sql")
            for m in [_ALIAS_FROM.search(f.read_text(encoding="utf-8"))] if m}


def _check_unique(queues: list[Queue], where: str) -> None:
    """No two queues share a name (in any case: SQL Server compares names without it) or
    a settings prefix (their dbo.AppSettings rows would be the same)."""
    names, prefixes = [q.name.casefold() for q in queues], [q.prefix for q in queues]
    for what, values in (("name", names), ("prefix", prefixes)):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise RelqError(f"{where}: two queues have the {what} {twice[0]}")


def _check(queue: Queue, where: str) -> None:
    problems = []
    if not _QUEUE_NAME.fullmatch(queue.name):
        problems.append("its name is PascalCase, 2 to 14 letters and digits")
    elif queue.name.upper() in _reserved():
        problems.append(f"{queue.name} is a T-SQL reserved word")
    if not _PREFIX.fullmatch(queue.prefix):
        problems.append("its prefix is lower-case letters and digits")
    if not _ALIAS.fullmatch(queue.alias) or queue.alias in _taken_aliases(queue.shape):
        problems.append(f"its alias is one lower-case letter the templates do not use themselves "
                        f"({', '.join(sorted(_taken_aliases(queue.shape)))})")
    if queue.shape not in SHAPES:
        problems.append(f"its shape is one of {', '.join(SHAPES)}")
    if len(queue.verb) != 2 or not all(_WORDS.fullmatch(w) for w in (queue.noun, *queue.verb)):
        problems.append("its noun and verb pair are lower-case words, 20 characters at most")
    if queue.shape == "job" and not queue.types:
        problems.append("a job queue lists its job types (one or more)")
    if len({t.casefold() for t in queue.types}) != len(queue.types):
        problems.append("its job types differ in more than case (SQL Server compares them without)")
    bad = [t for t in queue.types if not _TYPE_NAME.fullmatch(t)]
    if bad:
        problems.append(f"job types are 1 to 50 letters, digits and _ (not {', '.join(map(repr, bad))})")
    if queue.shape == "custom" and not queue.types:
        problems.append("a custom queue names a job type of its own for the tSQLt classes' items")
    problems += _join_problems(queue)
    if set(map(str.casefold, TEST_TYPES)) & {t.casefold() for t in queue.types}:
        problems.append(f"{' and '.join(TEST_TYPES)} are the tSQLt classes' own job types")
    problems += _subtype_problems(queue)
    if problems:
        raise RelqError(f"{where}: " + "; ".join(problems))


def _join_problems(queue: Queue) -> list[str]:
    if queue.joins and queue.shape != "custom":
        return ["[[queue.join]] names a custom queue's tables (a job queue's come from [[queue.subtype]])"]
    problems = []
    own = {f"{queue.name}{suffix}".casefold() for suffix in ("", "Attempt", "Archive", "Type")}
    tables = [j.table.casefold() for j in queue.joins]
    if not all(_IDENTIFIER.fullmatch(j.table) for j in queue.joins) or len(set(tables) | own) != len(
            tables) + len(own):
        problems.append("[[queue.join]] names each table its worker view joins once, by name "
                        "(not the queue's own)")
    seen = {c.casefold() for c in BASE_COLUMNS}
    for join in queue.joins:
        where = f"join {join.table}"
        if join.channel and not (join.table.startswith(f"{queue.name}_")
                                 and _COLUMN_NAME.fullmatch(join.table.removeprefix(f"{queue.name}_"))):
            problems.append(f"{where}: a channel's table is {queue.name}_<Channel>, the channel PascalCase")
        if not join.columns:
            problems.append(f"{where}: lists no column")
        channel = join.table.removeprefix(f"{queue.name}_")  # the channel's name, for a channel
        if len(queue.name) + len(channel) > _JOIN_NAME_ROOM:  # Worker_<Queue>_VTests names a test after it
            problems.append(f"{where}: at most {_JOIN_NAME_ROOM - len(queue.name)} characters after "
                            f"{queue.name}_, so that the worker view's tSQLt test names stay within 128")
        if join.noun and not (join.channel and _CHANNEL_NOUN.fullmatch(join.noun)):
            problems.append(f"{where}: a channel's noun is 1 to 20 letters, spaces and hyphens "
                            f"(what the comments call it: \"e-mail\"), not {join.noun!r}")
        for column in join.columns:
            if column.null or not _SQL_TYPE.fullmatch(column.type) or _out_of_range(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type!r} is not one the "
                                f"templates take (dbo.<alias type>, NVARCHAR(n), INT, ...; no NULL: "
                                f"the archive's are)")
        names = [c.name for c in join.columns]
        for column in names + ([f"{channel}Response", f"{channel}Error"] if join.channel else []):
            if not _COLUMN_NAME.fullmatch(column) or column.upper() in _reserved():
                problems.append(f"{where}: column {column!r} is PascalCase, 1 to 30 letters and digits, "
                                f"not a reserved word")
            elif column.casefold() in seen:  # the view and the archive hold them side by side
                problems.append(f"{where}: column {column} is taken (by the queue or another join)")
            seen.add(column.casefold())
    return problems


def _subtype_problems(queue: Queue) -> list[str]:
    if queue.subtypes and queue.shape != "job":
        return ["only a job queue takes subtypes from the templates"]
    problems = []
    seen_types: set[str] = set()
    seen_columns = {c.casefold() for c in BASE_COLUMNS}
    for subtype in queue.subtypes:
        where = f"subtype {subtype.type}"
        if subtype.type not in queue.types:
            problems.append(f"{where}: not one of the queue's job types (spelt as there)")
        if subtype.type.casefold() == "istype_fn":  # dbo.<Queue>_IsType_fn is the function's name
            problems.append(f"{where}: a subtype's table would take the name of dbo.{queue.name}_IsType_fn")
        if subtype.type.casefold() in seen_types:
            problems.append(f"{where}: a job type has one subtype")
        seen_types.add(subtype.type.casefold())
        if not subtype.columns:
            problems.append(f"{where}: lists no column")
        for column in subtype.columns:
            if not _COLUMN_NAME.fullmatch(column.name):
                problems.append(f"{where}: column {column.name!r} is PascalCase, 1 to 30 letters and digits")
            elif column.name.upper() in _reserved():
                problems.append(f"{where}: column {column.name} is a T-SQL reserved word")
            elif column.name.casefold() in seen_columns:
                # the list type, the worker view and the archive hold every subtype's columns side by side
                problems.append(f"{where}: column {column.name} is taken (by the queue or another subtype)")
            seen_columns.add(column.name.casefold())
            if not _SQL_TYPE.fullmatch(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type!r} is not one the "
                                f"templates take (dbo.<alias type>, NVARCHAR(n), INT, DECIMAL(p, s), ...)")
            elif why := _out_of_range(column.type):
                problems.append(f"{where}: column {column.name}'s type {column.type}: {why}")
    return problems


def _out_of_range(sql_type: str) -> str:
    """Why SQL Server would refuse a built-in type's length, precision or scale ('' if it would not)."""
    length, precision = _LENGTH.fullmatch(sql_type), _PRECISION.fullmatch(sql_type)
    if length:
        unicode, varying, size = length.groups()
        if size.upper() == "MAX":
            return "" if varying else "MAX is for the VAR types only"
        limit = 4000 if unicode else 8000
        return "" if int(size) <= limit else f"the length is 1 to {limit}"
    if precision and not (1 <= int(precision[1]) <= 38 and int(precision[2]) <= int(precision[1])):
        return "the precision is 1 to 38 and the scale at most the precision"
    return ""


@functools.cache
def _reserved() -> frozenset[str]:
    """T-SQL's reserved words (sqlfluff's tsql dialect): the templates write names unbracketed."""
    from sqlfluff.core import dialect_selector

    return frozenset(dialect_selector("tsql").sets("reserved_keywords"))


@functools.cache
def _taken_aliases(shape: str) -> frozenset[str]:
    """The one-letter aliases the templates a queue of ``shape`` gets use for other tables
    (a job queue's own alias, q, is written literally in its templates)."""
    groups = [g for g, shapes in GROUPS.items() if shape in shapes] + [ONCE, SUBTYPES]
    found = {a for g in groups for t in templates(g) for a in _LITERAL_ALIAS.findall(t.read_text())}
    return frozenset(found - {"q"} if shape == "job" else found)


def _environment() -> Environment:
    environment = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                              autoescape=False)
    environment.filters["a"] = with_article
    return environment


# An acronym's first letter read out starts with a vowel sound for these: an SMS, an HTTP call.
_VOWEL_LETTERS = frozenset("AEFHILMNORSX")
# A vowel letter read as a consonant: a user, a unit, a one-off, a euro.
_CONSONANT_SOUND = ("eu", "one", "uni", "use", "usu", "uti")


def with_article(word: str) -> str:
    """``word`` after its indefinite article, by how it starts: a sync job, an InvoicePdf,
    an SMS (an acronym is read letter by letter), a UserSync. Templates write {{ noun | a }}."""
    if len(word) > 1 and word[:2].isupper():
        vowel = word[0] in _VOWEL_LETTERS
    else:
        vowel = word[:1].lower() in "aeiou" and not word.lower().startswith(_CONSONANT_SOUND)
    return f"{'an' if vowel else 'a'} {word}"


def templates(group: str | None = None) -> list[Path]:
    folder = TEMPLATES / group if group else TEMPLATES
    return sorted(folder.rglob("*.sql.tmpl"))


def _target(template: Path, name: str | None = None, subtype: str | None = None) -> str:
    folder = template.parent.name
    file = template.name.removesuffix(".tmpl")
    if name is not None:
        file = file.replace(NAME, name)
    if subtype is not None:
        file = file.replace(SUBTYPE, subtype)
    return f"tests_tsqlt/{file}" if folder == "tests_tsqlt" else f"database/{folder}/{file}"


def render(template: Path, queue: Queue, subtype: int | None = None) -> tuple[str, str]:
    """(the file's path under the project, its text) of one queue's object; of its subtype
    number ``subtype`` (0-based) for a subtypes/ template named after one."""
    source = template.relative_to(TEMPLATES).as_posix()
    variables = queue.variables()
    if subtype is None:
        return _target(template, queue.name), _environment().get_template(source).render(variables)
    own = variables["subtypes"][subtype]  # type: ignore[index]
    return (_target(template, queue.name, own["type"]),
            _environment().get_template(source).render(variables, subtype=own))


def render_once(template: Path, queues: list[Queue]) -> tuple[str, str]:
    """(path, text) of an object over every queue (``queues`` in catalogue order)."""
    source = template.relative_to(TEMPLATES).as_posix()
    return _target(template), _environment().get_template(source).render(
        queues=[q.variables() for q in queues])


def queue_renders(queue: Queue) -> list[tuple[str, str]]:
    """One queue's own files: (path, text)."""
    own = [render(t, queue) for group, shapes in GROUPS.items() if queue.shape in shapes
           for t in templates(group)]
    for template in templates(SUBTYPES):
        if SUBTYPE in template.name:  # a subtype's table and tests: a job queue's, from the catalogue
            own += [render(template, queue, n) for n in range(len(queue.subtypes))]
        elif queue.typed_tables:  # dbo.<Queue>_IsType_fn and its tests, which their CHECKs call
            own.append(render(template, queue))
    return own


def renders(queues: list[Queue]) -> list[tuple[str, str]]:
    """Every templated file of the project: (path, text)."""
    own = [r for queue in queues for r in queue_renders(queue)]
    return own + [render_once(t, queues) for t in templates(ONCE)]


def write(root: Path, queues: list[Queue] | None = None) -> list[str]:
    """Render every queue of ``root``'s catalogue into its database/ and tests_tsqlt/;
    returns the paths whose text changed (a second run changes nothing)."""
    return _write(root, renders(load(root) if queues is None else queues))


def _write(root: Path, files: list[tuple[str, str]]) -> list[str]:
    changed = []
    for path, text in files:
        target = root / path
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def new_queue(root: Path, name: str, types: list[str], noun: str | None = None,
              verb: tuple[str, str] = ("process", "processed"),
              subtypes: tuple[Subtype, ...] = ()) -> list[str]:
    """Add a queue of the job shape to ``root``'s catalogue and write its files and the
    files over every queue (the health views, the settings' defaults); other queues'
    files are left as they are. Nothing is written when the name, a type or an existing
    object says no."""
    queues = load(root)
    default_noun = f"{_words(name)} job"
    noun = noun or (default_noun if _WORDS.fullmatch(default_noun) else "job")
    queue = Queue(name, name.lower(), "q", "job", noun, verb, tuple(types), resolve(tuple(subtypes), root))
    where = f"new queue {name}"
    _check(queue, where)
    if any(q.name.casefold() == name.casefold() for q in queues):
        raise RelqError(f"{where}: {CATALOGUE} lists it already")
    if any(q.prefix == queue.prefix for q in queues):
        raise RelqError(f"{where}: another queue's settings use the prefix {queue.prefix}")
    own = queue_renders(queue)
    existing = {p.name.casefold(): p.relative_to(root).as_posix()
                for folder in ("database", "tests_tsqlt") for p in (root / folder).rglob("*.sql")}
    names = [Path(path).name.casefold() for path, _ in own]
    paths = [path.casefold() for path, _ in own]
    if len(set(paths)) != len(paths):  # two renders of one file: the checks above should prevent it
        raise RelqError(f"{where}: two of its objects would be written to one file; pick other names")
    taken = [existing[n] for n in names if n in existing]
    if taken:  # SQL Server's default collation compares names without case
        raise RelqError(f"{where}: {taken[0]} exists already; pick another name")
    catalogue = (root / CATALOGUE).read_text(encoding="utf-8") + _entry(queue)
    try:
        tomllib.loads(catalogue)  # the entry is checked above; the file must stay TOML too
    except tomllib.TOMLDecodeError as exc:
        raise RelqError(f"{where}: {CATALOGUE} would not be TOML any more ({exc})") from None
    written = _write(root, own + [render_once(t, [*queues, queue]) for t in templates(ONCE)])
    (root / CATALOGUE).write_text(catalogue, encoding="utf-8")
    return written


def _words(name: str) -> str:
    """InvoiceExport -> invoice export"""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower()


def _entry(queue: Queue) -> str:
    """The queue's catalogue entry (its words are checked: TOML strings need no escapes)."""
    def strings(values: object) -> str:
        return ", ".join(f'"{v}"' for v in values)  # type: ignore[attr-defined]

    entry = (f'\n[[queue]]\nname = "{queue.name}"\nprefix = "{queue.prefix}"\nalias = "{queue.alias}"\n'
             f'shape = "job"\nnoun = "{queue.noun}"\nverb = [{strings(queue.verb)}]\n'
             f"types = [{strings(queue.types)}]\n")
    for subtype in queue.subtypes:
        entry += f'\n[[queue.subtype]]\ntype = "{subtype.type}"\ncolumns = [{strings(subtype.columns)}]\n'
    return entry
