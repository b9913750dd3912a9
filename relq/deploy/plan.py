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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

from relq.compiler import BuildResult
from relq.compiler.catalog import CheckConstraint, checks_calling
from relq.compiler.facts import FileFacts
from relq.compiler.names import key
from relq.errors import RelqError

CREATED_ONCE = ("types", "tables")  # never re-run: a change needs a migration
RE_DEPLOYED = ("functions", "views", "procedures")  # CREATE OR ALTER


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
        step = Step(path, kind, objects, "unchanged", checksum)
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


def format_plan(plan: Plan, rows: Mapping[str, int | None] | None = None) -> list[str]:
    """One line per file that changes, then one per file the project no longer has.
    ``rows``: table -> its approximate row count, None for a table that does not
    exist yet; without it the re-validations are named without counts."""
    width = max([len(s.action) for s in plan.changes] + [len("kept")] * bool(plan.removed),
                default=0)
    lines = []
    for s in plan.changes:
        what = ", ".join(s.objects) or s.path.rsplit("/", 1)[-1]
        checks = revalidations(s, rows)
        if len(checks) == 1:  # the common case: one table, on the step's line
            reason, below = checks[0], []
        elif checks:
            reason, below = f"CHECK constraints on {len(checks)} tables call it", checks
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
