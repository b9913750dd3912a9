"""The catalog: every object the project's files create, by name."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from relq.compiler.diagnostics import Diagnostic
from relq.compiler.facts import Definition, FileFacts
from relq.compiler.names import BUILTIN_TYPES, key, qualify, unquote

# Principals every database has.
BUILTIN_PRINCIPALS = frozenset((
    "public", "dbo", "guest", "db_owner", "db_datareader", "db_datawriter", "db_ddladmin",
    "db_securityadmin", "db_accessadmin", "db_backupoperator", "db_denydatareader",
    "db_denydatawriter",
))
_TYPE_TEXT = re.compile(r"^(?P<name>[^(]+?)\s*(?P<args>\(.*\))?$")


@dataclass(frozen=True)
class CheckConstraint:
    """A CHECK constraint to drop and re-add around an ALTER of a function it calls."""

    table: str
    name: str
    definition: str  # "CHECK (dbo.X_fn(A) = 1)"


@dataclass
class Entry:
    definition: Definition
    path: str

    @property
    def kind(self) -> str:
        return self.definition.kind


@dataclass
class Catalog:
    objects: dict[str, Entry] = field(default_factory=dict)  # tables, views, functions, procedures
    types: dict[str, Entry] = field(default_factory=dict)
    messages: dict[str, Entry] = field(default_factory=dict)
    roles: dict[str, Entry] = field(default_factory=dict)
    schemas: dict[str, Entry] = field(default_factory=dict)
    # constraints and indexes by table, from the table's file and later ALTERs
    constraints: dict[str, list[tuple[Definition, str]]] = field(default_factory=dict)

    def add(self, facts: FileFacts, problems: list[Diagnostic], *, owns: bool = True) -> None:
        """Catalog what ``facts`` creates. A file that does not ``own`` its objects (a
        migration) may create one again that another file owns: that file stays its entry."""
        for d in facts.definitions:
            if d.kind in ("index", "constraint"):
                self.constraints.setdefault(key(d.table or ""), []).append((d, facts.path))
                continue
            space = self._space(d.kind)
            k = key(d.name)
            if k in space:
                if not owns:
                    continue
                first = space[k]
                problems.append(Diagnostic(
                    facts.path, d.line, "duplicate-object",
                    f"{d.kind} {d.name} is already created by {first.path}:"
                    f"{first.definition.line}"))
                continue
            space[k] = Entry(d, facts.path)

    def _space(self, kind: str) -> dict[str, Entry]:
        return {"type": self.types, "message": self.messages, "role": self.roles,
                "schema": self.schemas}.get(kind, self.objects)

    def lookup(self, kind: str, name: str) -> Entry | None:
        return self._space(kind).get(key(name))

    def has_role(self, name: str) -> bool:
        return name.casefold() in BUILTIN_PRINCIPALS or key(name) in self.roles

    def table_constraints(self, table: str) -> list[tuple[Definition, str]]:
        return self.constraints.get(key(table), [])

    def base_type(self, text: str) -> str | None:
        """A column type with alias types resolved: ``dbo.QueueState`` -> ``VARCHAR(20)``;
        None for a type the catalog does not know."""
        m = _TYPE_TEXT.match(text.strip())
        if not m:
            return None
        name = [unquote(p) for p in m["name"].split(".")]
        if len(name) == 1 and name[0].casefold() in BUILTIN_TYPES:
            return (name[0] + (m["args"] or "")).upper().replace(" ", "")
        entry = self.types.get(key(qualify(name)))
        if entry is None or entry.definition.base_type is None:
            return None
        return self.base_type(entry.definition.base_type)

    def nullable(self, table: str, column: str) -> bool | None:
        """Whether a column of a table created in the project's files takes NULL: as its
        definition says, else False for a PRIMARY KEY column, else as its alias type says,
        else True (SQL Server's default with ANSI_NULL_DFLT_ON, which ODBC and OLE DB set).
        None for a table or column the catalog does not know."""
        entry = self.objects.get(key(table))
        if entry is None or entry.kind != "table":
            return None
        found = next((c for c in entry.definition.columns if c.name.casefold() == column.casefold()), None)
        if found is None:
            return None
        if found.nullable is not None:
            return found.nullable
        keys = [c for c in entry.definition.constraints if c.kind == "PRIMARY KEY"]
        if any(name.casefold() == column.casefold() for c in keys for name in c.columns):
            return False
        name = [unquote(p) for p in found.type.split("(")[0].strip().split(".")]
        alias = self.types.get(key(qualify(name))) if len(name) > 1 else None
        if alias is not None and alias.definition.nullable is not None:
            return alias.definition.nullable
        return True


    def extended(self, files: list[FileFacts], problems: list[Diagnostic]) -> Catalog:
        """A copy of this catalog with the objects of more files (the tests)."""
        more = Catalog(dict(self.objects), dict(self.types), dict(self.messages),
                       dict(self.roles), dict(self.schemas),
                       {k: list(v) for k, v in self.constraints.items()})
        for facts in files:
            more.add(facts, problems)
        return more


def build_catalog(files: list[FileFacts]) -> tuple[Catalog, list[Diagnostic]]:
    """The objects of ``files``. Migrations come last and own nothing another file
    creates: one that re-creates a table type (which cannot be altered) is no duplicate."""
    catalog = Catalog()
    problems: list[Diagnostic] = []
    for facts in sorted(files, key=_is_migration):
        catalog.add(facts, problems, owns=not _is_migration(facts))
    return catalog, problems


def _is_migration(facts: FileFacts) -> bool:
    return facts.path.startswith("database/migrations/")


def checks_calling(catalog: Catalog, functions: tuple[str, ...]) -> tuple[CheckConstraint, ...]:
    """The CHECK constraints (of any table) that call one of ``functions``: SQL Server
    refuses to ALTER a function while a constraint references it."""
    wanted = {key(f) for f in functions}
    definitions = [e.definition for e in catalog.objects.values() if e.kind == "table"]
    definitions += [d for pairs in catalog.constraints.values() for d, _ in pairs]
    return tuple(
        CheckConstraint(d.table or d.name, c.name, c.definition)
        for d in definitions
        for c in d.constraints
        if c.kind == "CHECK" and c.name and any(key(fn) in wanted for fn in c.calls)
    )
