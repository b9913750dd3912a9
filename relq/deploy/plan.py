"""The deploy plan: what each file of the build needs on one database, decided
from the file's checksum and the database's journal. Pure: no server here.

- Types and tables are created when missing. Once deployed, a change to their
  file must come with a migration that alters them; without one, deploy
  refuses, because CREATE would silently skip an existing table.
- Migrations run once each, in order; a migration changed after it ran is refused.
- Functions, views and procedures are (re)deployed with CREATE OR ALTER when new
  or changed. A function that CHECK constraints call is altered between dropping
  and re-adding those constraints, in one transaction: SQL Server refuses to
  ALTER a function a constraint references. Re-adding them WITH CHECK scans the
  table under a schema-modification lock: the printed plan names each table and
  its row count (which the caller reads from the server, as this module never does).
- Reference data, messages and security are applied when new or changed; security
  also whenever a migration runs: an object a migration drops and creates again
  has lost its grants ("When you delete and re-create a stored procedure, all
  permissions associated with the stored procedure are lost", Modifying Stored
  Procedures, https://learn.microsoft.com/previous-versions/sql/sql-server-2008/ms187001(v=sql.100)),
  and a GRANT given again changes nothing.
- Unchanged files are skipped: a deploy right after a deploy changes nothing.

Each step also says which tables it locks as a whole (:class:`SchemaChange`, from the
build's facts): ALTER TABLE and DROP INDEX hold a schema-modification (Sch-M) lock until the
file commits; an offline CREATE INDEX a shared (S) lock, or Sch-M when it builds a clustered
index or rebuilds one (DROP_EXISTING); an online one (ONLINE = ON) short S locks at its start
and end ("ONLINE", https://learn.microsoft.com/sql/t-sql/statements/create-index-transact-sql).
A migration offers the online build through the pattern of docs/operations.md (an IF on
SESSION_CONTEXT(N'relq.online'), which the deploy sets from the server's edition); the
printed plan says which of them run online on the target.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

from relq.compiler import BuildResult
from relq.compiler.catalog import CheckConstraint, checks_calling
from relq.compiler.facts import FileFacts
from relq.compiler.names import is_external, key, qualify, unquote
from relq.errors import RelqError

CREATED_ONCE = ("types", "tables")  # never re-run: a change needs a migration
RE_DEPLOYED = ("functions", "views", "procedures")  # CREATE OR ALTER
SCH_M, SHARED = "Sch-M", "S"


@dataclass(frozen=True)
class SchemaChange:
    """A statement of a file that locks a whole table: ``statement`` as the plan names it
    ("ALTER TABLE", "CREATE INDEX IX_Job_Due", "DROP INDEX IX_Job_Due"), the lock it holds
    when it runs offline, and whether the file offers it online (an index build with an
    ONLINE = ON branch)."""

    table: str
    statement: str
    lock: str  # SCH_M | SHARED
    online: bool = False


@dataclass(frozen=True)
class Step:
    path: str
    kind: str  # the folder: types, tables, migrations, functions, ...
    objects: tuple[str, ...]  # what the file creates, for people
    action: str  # create | alter | apply | unchanged | migrated
    checksum: str
    reason: str = ""
    constraints: tuple[CheckConstraint, ...] = ()
    # (path, kind, checksum) of the files a migration brings up to date: journaled with it
    records: tuple[tuple[str, str, str], ...] = ()
    tables: tuple[str, ...] = ()  # the user tables (and views) the file reads, writes or alters
    changes: tuple[SchemaChange, ...] = ()  # its statements that lock a whole table

    @property
    def runs(self) -> bool:
        return self.action in ("create", "alter", "apply")


@dataclass
class Plan:
    steps: list[Step]
    removed: list[str] = field(default_factory=list)  # journaled files no longer in the project

    def counts(self) -> Counter[str]:
        """Steps by what they do; a migration that runs counts as "migration"."""
        return Counter("migration" if s.kind == "migrations" and s.runs else s.action
                       for s in self.steps)

    @property
    def changes(self) -> list[Step]:
        return [s for s in self.steps if s.action != "unchanged"]


class DeployRefused(RelqError):
    """The database and the project disagree in a way only a person can settle."""


def make_plan(build: BuildResult, journal: dict[str, str], unregistered: Collection[int] = ()) -> Plan:
    """The steps that bring a database whose journal is ``journal`` (path ->
    checksum) up to ``build``. Raises DeployRefused, naming every file, when a
    deployed table or type changed without a migration or a migration changed.
    ``unregistered``: message numbers the server lacks, or holds with another text
    (the preflight's finding): their files run again although the journal has
    them, since messages live in master, not in the journaled database (a restore
    onto another server, a message dropped by hand)."""
    pending = [p for p in build.order if _kind(p) == "migrations" and p not in journal]
    covering = {p: _touched(build.facts[p]) for p in pending}
    problems: list[str] = []
    steps: list[Step] = []
    migrated: dict[str, list[tuple[str, str, str]]] = {m: [] for m in pending}
    for path in build.order:
        facts = build.facts[path]
        kind = _kind(path)
        checksum = build.sources[path].checksum
        objects = tuple(d.name for d in facts.definitions if d.kind not in ("index", "constraint"))
        known = journal.get(path)
        step = Step(path, kind, objects, "unchanged", checksum, tables=_tables(facts),
                    changes=schema_changes(facts, build.sources[path].text))
        missing = kind == "messages" and any(int(d.name) in unregistered for d in facts.definitions
                                             if d.kind == "message")
        regrant = kind == "security" and bool(pending)
        if known == checksum and not missing and not regrant:
            steps.append(step)
            continue
        if kind in CREATED_ONCE:
            if known is None:
                step = _with(step, "create")
            else:
                migration = next((m for m in pending if set(map(key, objects)) & covering[m]), None)
                if migration is None:
                    problems.append(
                        f"{path} changed since it was deployed, and no pending migration in "
                        f"database/migrations alters {', '.join(objects) or 'it'}: add one "
                        f"(V<next>__<what>.sql) that brings existing databases to the new definition")
                    continue
                migrated[migration].append((path, kind, checksum))
                step = _with(step, "migrated", f"brought up to date by {migration}")
        elif kind == "migrations":
            if known is not None:
                problems.append(f"{path} changed after it was applied: a migration never changes "
                                f"once it has run; add a new one")
                continue
            step = _with(step, "apply")
        elif kind in RE_DEPLOYED:
            step = _with(step, "create" if known is None else "alter")
            step = replace(step, constraints=checks_calling(build.catalog, objects))
        else:
            step = _with(step, "apply", "new" if known is None else "changed" if known != checksum
                         else "missing or different on the server" if missing
                         else "given again after the migrations")
        steps.append(step)
    if problems:
        raise DeployRefused("deploy refused, nothing was changed:\n  " + "\n  ".join(problems))
    steps = [replace(s, records=tuple(migrated.get(s.path, ()))) for s in steps]
    removed = sorted(set(journal) - set(build.order))
    return Plan(steps, removed)


def format_plan(plan: Plan, rows: Mapping[str, int | None] | None = None,
                online: bool | None = None) -> list[str]:
    """One line per file that changes, then one per file the project no longer has.
    ``rows``: table -> its approximate row count, None for a table that does not
    exist yet; without it the re-validations and a migration's table locks are named
    without counts. ``online``: whether the server has online index operations (None:
    not known)."""
    width = max([len(s.action) for s in plan.changes] + [len("kept")] * bool(plan.removed),
                default=0)
    lines = []
    for s in plan.changes:
        what = ", ".join(s.objects) or s.path.rsplit("/", 1)[-1]
        checks = revalidations(s, rows)
        locks = table_locks(s, rows, online)
        texts = checks + locks
        if len(texts) == 1:  # the common case: one table, on the step's line
            reason, below = texts[0], []
        elif texts:
            reason = (f"CHECK constraints on {len(checks)} tables call it" if not locks
                      else f"locks {len(texts)} tables as a whole")
            below = texts
        else:
            reason, below = s.reason, []
        lines.append(f"{s.action:<{width}}  {what}  ({s.path})" + (f": {reason}" if reason else ""))
        lines += [f"{'':<{width}}    {text}" for text in below]
    for path in plan.removed:
        lines.append(f"{'kept':<{width}}  {path} is no longer in the project; deploy drops nothing "
                     f"(drop it with a migration)")
    if not lines:
        lines.append("nothing to do: the database is up to date")
    return lines


def locked_tables(step: Step) -> list[str]:
    """The tables ``step`` locks as a whole when it runs: those a migration alters or indexes,
    and those whose CHECK constraints it re-validates."""
    if not step.runs:
        return []
    changed = [c.table for c in step.changes] if step.kind == "migrations" else []
    return list(dict.fromkeys(changed + [c.table for c in step.constraints]))


def table_locks(step: Step, rows: Mapping[str, int | None] | None = None,
                online: bool | None = None) -> list[str]:
    """What a migration's statements that lock a whole table cost, one text per table that
    exists (without ``rows``: per table it changes). A table that does not exist yet is created
    by this deploy, empty: nothing waits for it. Other files lock no table that holds rows: a
    table file runs only where its table is new (a deployed one changes through a migration),
    and its statements are guarded."""
    if not step.runs or step.kind != "migrations":
        return []
    by_table: dict[str, list[SchemaChange]] = {}
    for change in step.changes:
        by_table.setdefault(change.table, []).append(change)
    texts = []
    for table, changes in by_table.items():
        count = None if rows is None else rows.get(table)
        if rows is not None and count is None:
            continue
        size = "" if count is None else f" (~{count:,} row{'' if count == 1 else 's'})"
        texts.append(f"{_statements(changes)} on {table}{size} {_holds(changes, online)}")
    return texts


def _statements(changes: list[SchemaChange]) -> str:
    """"ALTER TABLE, DROP INDEX IX_A, CREATE INDEX IX_A, IX_B": a verb once for a run of it."""
    out: list[str] = []
    verb = None
    for change in changes:
        this, _, name = change.statement.rpartition(" INDEX ")
        if name and this and this == verb:
            out[-1] += f", {name}"
            continue
        out.append(change.statement)
        verb = this if name and this else None
    return ", ".join(out)


def _holds(changes: list[SchemaChange], online: bool | None) -> str:
    """The lock a table's statements hold, and who waits for it."""
    offered = any(c.online for c in changes)
    offline = [c for c in changes if not (c.online and online)]
    if not offline:
        return ("online: a shared lock at the build's start, and from its end until the file "
                "commits; claims and reports go on meanwhile")
    if any(c.lock == SCH_M for c in offline):
        held = ("under a schema-modification lock until the file commits: every query on that table "
                "waits, NOLOCK included")
    else:
        held = ("under a shared lock until the file commits: claims, enqueues and reports on that "
                "table wait, reads go on")
    if offered and online is None:
        return held + " (online instead where the edition has online index operations)"
    if offered and online is False:
        return held + " (this edition has no online index operations)"
    if offered:  # built online, but the file's other statements hold the table anyway
        return held + " (its online build gains nothing there)"
    return held


def revalidations(step: Step, rows: Mapping[str, int | None] | None = None) -> list[str]:
    """What re-adding ``step``'s CHECK constraints WITH CHECK costs, one text per table.
    Dropping a constraint and adding it are both ALTER TABLE, which holds a
    schema-modification (Sch-M) lock on the table ("Locks and ALTER TABLE",
    https://learn.microsoft.com/sql/t-sql/statements/alter-table-transact-sql) until the
    file's transaction commits, and every query, NOLOCK included, needs a Sch-S lock that
    Sch-M blocks (https://learn.microsoft.com/sql/t-sql/queries/hints-transact-sql-table):
    the wait grows with the table's rows, as the re-added constraint checks each one."""
    by_table: dict[str, list[str]] = {}
    for c in step.constraints:
        by_table.setdefault(c.table, []).append(c.name)
    texts = []
    for table, names in by_table.items():
        checks = f"CHECK {', '.join(names)}"
        count = None if rows is None else rows.get(table)
        if rows is not None and count is None:
            texts.append(f"{checks} on {table}: the table does not exist yet, nothing to re-validate")
            continue
        size = "" if count is None else f" (~{count:,} row{'' if count == 1 else 's'})"
        texts.append(f"re-validates {checks} on {table}{size} under a schema-modification lock "
                     f"until the file commits: claims and reports on that table wait")
    return texts


_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
_DROP_INDEX = re.compile(r"\bDROP\s+INDEX\s+(?:IF\s+EXISTS\s+)?([\w\[\]]+)\s+ON\s+"
                         r"((?:[\w\[\]]+\.)?[\w\[\]]+)", re.IGNORECASE)
_REBUILDS = re.compile(r"\bCREATE\s+(?:UNIQUE\s+)?CLUSTERED\b|\bDROP_EXISTING\s*=\s*ON\b", re.IGNORECASE)
_ONLINE = re.compile(r"\bONLINE\s*=\s*ON\b", re.IGNORECASE)


def schema_changes(facts: FileFacts, text: str) -> tuple[SchemaChange, ...]:
    """The statements of a file that lock a whole table, in the file's order, one per table and
    statement: the pattern's two CREATE INDEX of one index (online and offline) are one change,
    offered online. An offline CREATE INDEX holds Sch-M when it builds a clustered index or
    replaces one (DROP_EXISTING), else S; DROP INDEX holds Sch-M ("ONLINE = OFF", CREATE INDEX,
    https://learn.microsoft.com/sql/t-sql/statements/create-index-transact-sql)."""
    lines = text.replace("\r\n", "\n").split("\n")
    found: list[tuple[int, SchemaChange]] = [
        (r.line, SchemaChange(r.name, "ALTER TABLE", SCH_M)) for r in facts.references
        if r.kind == "table" and r.context == "ALTER TABLE"]
    for d in facts.definitions:
        if d.kind == "index" and d.table:
            statement = _COMMENT.sub(" ", _statement(lines, d.line))
            lock = SCH_M if _REBUILDS.search(statement) else SHARED
            found.append((d.line, SchemaChange(d.table, f"CREATE INDEX {d.name}", lock,
                                               bool(_ONLINE.search(statement)))))
    code = _COMMENT.sub(lambda m: "\n" * m[0].count("\n"), text.replace("\r\n", "\n"))
    for m in _DROP_INDEX.finditer(code):
        table = qualify(re.split(r"\.(?![^\[]*\])", m[2]))
        found.append((code.count("\n", 0, m.start()) + 1,
                      SchemaChange(table, f"DROP INDEX {unquote(m[1])}", SCH_M)))
    merged: dict[tuple[str, str], SchemaChange] = {}
    for _, change in sorted(found, key=lambda pair: pair[0]):
        at = (key(change.table), key(change.statement))
        old = merged.get(at)
        merged[at] = change if old is None else replace(
            old, lock=SCH_M if SCH_M in (old.lock, change.lock) else SHARED,
            online=old.online or change.online)
    return tuple(merged.values())


def offline_index_builds(build: BuildResult) -> dict[str, list[str]]:
    """Migration -> the indexes it builds without an ONLINE = ON branch: each one holds its
    table for the whole build on every edition. docs/operations.md has the pattern that
    offers the online build."""
    found: dict[str, list[str]] = {}
    for path in build.order:
        if _kind(path) == "migrations":
            offline = [c.statement.split()[-1] for c in schema_changes(build.facts[path],
                                                                       build.sources[path].text)
                       if c.statement.startswith("CREATE INDEX") and not c.online]
            if offline:
                found[path] = offline
    return found


def _statement(lines: list[str], first: int) -> str:
    """The text from line ``first`` (1-based) to the end of its statement (the next ';', or the
    end of the file)."""
    text = "\n".join(lines[first - 1:])
    end = text.find(";")
    return text if end < 0 else text[:end]


def _tables(facts: FileFacts) -> tuple[str, ...]:
    """The user tables and views a file names or defines, each once, in its order."""
    names = [r.name for r in facts.references if r.kind == "table" and not is_external(r.name)]
    names += [d.table for d in facts.definitions if d.table]
    names += [d.name for d in facts.definitions if d.kind == "table"]
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(key(name), name)
    return tuple(seen.values())


def _with(step: Step, action: str, reason: str = "") -> Step:
    return replace(step, action=action, reason=reason)


def _kind(path: str) -> str:
    return path.split("/")[1]


def _touched(facts: FileFacts) -> set[str]:
    """What a migration changes: the tables it alters, indexes or writes, and what it
    creates. A table it only reads is not brought up to date by it."""
    changed = {key(r.name) for r in facts.references
               if r.kind == "column" or r.context == "ALTER TABLE" or r.context.startswith("CREATE INDEX")}
    changed |= {key(d.table) for d in facts.definitions if d.table}
    changed |= {key(d.name) for d in facts.definitions}
    return changed
