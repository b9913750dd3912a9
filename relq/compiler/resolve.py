"""Name resolution: every reference a file makes must name something that
exists, and be used the way that thing is declared.

SQL Server resolves names inside procedures only when they run, so a misspelt
table deploys fine and fails in production; this is where the build catches it.
"""

from __future__ import annotations

from collections.abc import Iterator

from relq.compiler.catalog import Catalog, Entry
from relq.compiler.diagnostics import Diagnostic
from relq.compiler.facts import Constraint, Definition, FileFacts, Reference
from relq.compiler.names import is_external, is_system_procedure, key

# The first number sp_addmessage accepts; below it are SQL Server's own messages.
FIRST_USER_MESSAGE = 50001
_TABLE_LIKE = ("table", "view", "function")  # a table-valued function reads like a table

# What each resolution check catches; `-- relq:allow <check>` names them.
CHECKS = {
    "unknown-table": "a table or view that no file creates",
    "unknown-type": "a type that no file in database/types creates",
    "unknown-function": "a function (in a CHECK constraint too) that no file creates",
    "unknown-procedure": "EXEC of a procedure that no file creates",
    "unknown-object": "GRANT on an object that no file creates",
    "unknown-role": "GRANT to a role that no file creates",
    "unknown-parameter": "EXEC with a parameter the procedure does not declare",
    "missing-parameter": "EXEC without a parameter that has no default",
    "argument-count": "too many arguments, or a function called with the wrong number",
    "unknown-column": "INSERT, UPDATE SET, MERGE, key or index naming a column the table lacks",
    "foreign-key": "a foreign key to a missing table or column, of another type, or not to a key",
    "unregistered-message": "RAISERROR or THROW with a number database/messages does not register",
}


def resolve(files: list[FileFacts], catalog: Catalog) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    for f in files:
        for ref in f.references:
            for check, message in _resolve(ref, catalog):
                problems.append(Diagnostic(f.path, ref.line, check, message))
        for d in f.definitions:
            for c in d.constraints:
                for check, message in _constraint(d, c, catalog):
                    problems.append(Diagnostic(f.path, c.line, check, message))
    return problems


def _resolve(ref: Reference, catalog: Catalog) -> Iterator[tuple[str, str]]:
    where = f" (in {ref.context})" if ref.context else ""
    if ref.kind == "message":
        yield from _message(ref, catalog)
        return
    if ref.kind == "role":
        if not catalog.has_role(ref.name):
            yield "unknown-role", f"unknown role {ref.name}{where}: no file in database/security creates it"
        return
    if is_external(ref.name):
        return
    if ref.kind == "type":
        if catalog.lookup("type", ref.name) is None:
            yield "unknown-type", f"unknown type {ref.name}: no file in database/types creates it"
        return
    if ref.kind == "procedure" and is_system_procedure(ref.name):
        return
    entry = catalog.lookup("object", ref.name)
    if ref.kind == "table":
        if entry is None or entry.kind not in _TABLE_LIKE:
            yield "unknown-table", f"unknown table or view {ref.name}{where}" + _is_a(entry)
    elif ref.kind == "object":
        if entry is None:
            yield "unknown-object", f"unknown object {ref.name}{where}"
    elif entry is not None and (entry.definition.opaque or ref.by_name):
        return  # its file did not parse, or a string names it: only its name counts
    elif ref.kind == "function":
        if entry is None or entry.kind != "function":
            if ref.context.startswith("CHECK"):
                yield "unknown-function", (f"{ref.context} calls {ref.name}, which no file in "
                                           f"database/functions creates" + _is_a(entry))
            else:
                yield "unknown-function", f"unknown function {ref.name}{where}" + _is_a(entry)
        else:
            yield from _function_args(ref, entry)
    elif ref.kind == "procedure":
        if entry is None or entry.kind != "procedure":
            yield "unknown-procedure", f"unknown procedure {ref.name}" + _is_a(entry)
        else:
            yield from _exec_args(ref, entry)
    elif ref.kind == "column":
        yield from _columns(ref, entry, catalog)


def _is_a(entry: Entry | None) -> str:
    return f": it is a {entry.kind}" if entry is not None else ""


def _message(ref: Reference, catalog: Catalog) -> Iterator[tuple[str, str]]:
    number = int(ref.name)
    if ref.context == "THROW" and number < 50000:
        yield "unregistered-message", f"THROW {number}: THROW takes numbers from 50000 up"
    elif number >= FIRST_USER_MESSAGE and ref.name not in catalog.messages:
        yield "unregistered-message", (f"{ref.context} {number}: no file in database/messages "
                                       f"registers message {number}")


def _function_args(ref: Reference, entry: Entry) -> Iterator[tuple[str, str]]:
    params = entry.definition.params
    if ref.positional_args != len(params):
        names = ", ".join(p.name for p in params) or "none"
        yield "argument-count", (f"{ref.name} takes {len(params)} argument"
                                 f"{'' if len(params) == 1 else 's'} ({names}); this call "
                                 f"passes {ref.positional_args}")


def _exec_args(ref: Reference, entry: Entry) -> Iterator[tuple[str, str]]:
    params = entry.definition.params
    declared = {p.name.casefold(): p for p in params}
    if ref.positional_args > len(params):
        yield "argument-count", (f"{ref.name} declares {len(params)} parameters; this EXEC "
                                 f"passes {ref.positional_args} by position")
    for name in ref.named_args:
        if name not in declared:
            yield "unknown-parameter", f"{ref.name} has no parameter {name}"
    given = {p.name.casefold() for p in params[: ref.positional_args]} | set(ref.named_args)
    for p in params:
        if not p.has_default and p.name.casefold() not in given:
            yield "missing-parameter", (f"EXEC {ref.name} without {p.name}, which has no "
                                        f"default")


def _columns(ref: Reference, entry: Entry | None, catalog: Catalog) -> Iterator[tuple[str, str]]:
    if entry is None or entry.kind not in ("table", "view"):
        return  # reported as an unknown table where it is named
    d = entry.definition
    if d.kind == "view" and not d.view_columns_known:
        return
    have = {c.name.casefold() for c in d.columns}
    for column in ref.columns:
        if column.casefold() not in have:
            yield "unknown-column", f"{d.kind} {d.name} has no column {column} (in {ref.context})"


def _constraint(d: Definition, c: Constraint, catalog: Catalog) -> Iterator[tuple[str, str]]:
    """Columns of keys and indexes exist; foreign keys point at a key of the same types."""
    table_name = d.table or d.name
    if d.kind == "type":
        return
    table = catalog.lookup("object", table_name)
    if table is None or table.kind != "table":
        return
    own = {col.name.casefold(): col for col in table.definition.columns}
    for column in c.columns:
        if column.casefold() not in own:
            label = f"{c.kind} {c.name}" if c.name else c.kind
            yield "unknown-column", f"{label}: table {table_name} has no column {column}"
    if c.kind != "FOREIGN KEY" or c.ref_table is None:
        return
    target = catalog.lookup("object", c.ref_table)
    label = f"foreign key {c.name or ''}".rstrip()
    if target is not None and target.definition.opaque:
        return
    if target is None or target.kind != "table":
        yield "foreign-key", f"{label} references {c.ref_table}, which is not a table of this project"
        return
    theirs = {col.name.casefold(): col for col in target.definition.columns}
    ref_columns = c.ref_columns or _primary_key(target.definition.name, target, catalog)
    missing = [rc for rc in ref_columns if rc.casefold() not in theirs]
    for rc in missing:
        yield "foreign-key", f"{label} references {c.ref_table}.{rc}, which does not exist"
    if missing:
        return
    if len(ref_columns) != len(c.columns):
        yield "foreign-key", (f"{label} has {len(c.columns)} columns but references "
                              f"{len(ref_columns)}")
        return
    for mine, theirs_name in zip(c.columns, ref_columns, strict=True):
        if mine.casefold() not in own:
            continue
        a = catalog.base_type(own[mine.casefold()].type)
        b = catalog.base_type(theirs[theirs_name.casefold()].type)
        if a and b and a != b:  # an unknown type is reported where it is used
            yield "foreign-key", (f"{label}: {table_name}.{mine} is {a} but "
                                  f"{c.ref_table}.{theirs_name} is {b}; the types must match")
    if not _is_key(target.definition.name, ref_columns, target, catalog):
        yield "foreign-key", (f"{label} references ({', '.join(ref_columns)}) of "
                              f"{c.ref_table}, which is not its primary key or a unique key")


def _keys(table: str, entry: Entry, catalog: Catalog) -> list[Constraint]:
    kinds = ("PRIMARY KEY", "UNIQUE", "UNIQUE INDEX")
    found = [c for c in entry.definition.constraints if c.kind in kinds]
    for d, _ in catalog.table_constraints(table):
        found += [c for c in d.constraints if c.kind in kinds]
    return found


def _primary_key(table: str, entry: Entry, catalog: Catalog) -> list[str]:
    for c in _keys(table, entry, catalog):
        if c.kind == "PRIMARY KEY":
            return c.columns
    return []


def _is_key(table: str, columns: list[str], entry: Entry, catalog: Catalog) -> bool:
    wanted = sorted(key(c) for c in columns)
    return any(sorted(key(c) for c in k.columns) == wanted for k in _keys(table, entry, catalog))
