"""What one file says, as plain data: the definitions it makes, the references
it makes, and the convention findings about it.

Facts are extracted from a parse tree once and cached by the file's checksum,
so that a rebuild re-parses only the files that changed. Everything here is
JSON-serialisable through ``to_json`` and ``from_json``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Column:
    name: str
    type: str  # as written: "dbo.QueueState", "VARCHAR(20)"
    line: int
    nullable: bool | None = None  # NULL or NOT NULL as the column says; None where it says neither


@dataclass
class Constraint:
    name: str | None
    kind: str  # PRIMARY KEY, FOREIGN KEY, UNIQUE, CHECK, DEFAULT, INDEX
    line: int
    columns: list[str] = field(default_factory=list)
    ref_table: str | None = None
    ref_columns: list[str] = field(default_factory=list)
    definition: str = ""  # a CHECK's clause as written: "CHECK (dbo.X_fn(A) = 1)"
    calls: list[str] = field(default_factory=list)  # the functions a CHECK calls


@dataclass
class Param:
    name: str  # with its @
    type: str
    has_default: bool = False
    is_output: bool = False


@dataclass
class Definition:
    """An object the file creates: type, table, view, function, procedure,
    index, message, role or schema."""

    kind: str
    name: str  # qualified for schema objects; the number for a message
    line: int
    base_type: str | None = None  # alias types
    nullable: bool | None = None  # an alias type's NULL or NOT NULL; None where it says neither
    columns: list[Column] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    table: str | None = None  # the table an index or a later constraint belongs to
    view_columns_known: bool = True  # False when a view's select list has unnamed columns
    opaque: bool = False  # stands in for an object whose file did not parse
    severity: int | None = None  # a message's, when its file gives it as a literal
    text: str | None = None  # a message's text, likewise


@dataclass
class Reference:
    """A use of a name that must resolve against the catalog.

    kind: table (table or view), type, function, procedure, message, role,
    schema, column (``columns`` of ``name``).
    """

    kind: str
    name: str
    line: int
    context: str = ""  # where it stands, for the message: "INSERT", "CHECK constraint X"
    columns: list[str] = field(default_factory=list)
    named_args: list[str] = field(default_factory=list)  # EXEC @Param = ...
    positional_args: int = 0  # EXEC's unnamed arguments; a function's arguments
    by_name: bool = False  # named in a string (tSQLt): only its existence is checked


@dataclass
class Finding:
    line: int
    check: str
    message: str


@dataclass
class Allow:
    """``-- relq:allow <check> <reason>``: silences one check on one line."""

    line: int  # the line silenced
    comment_line: int
    check: str
    reason: str


@dataclass
class FileFacts:
    path: str  # relative to the project root, with forward slashes
    checksum: str
    definitions: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    allows: list[Allow] = field(default_factory=list)
    parse_error: Finding | None = None


def to_json(obj: Any) -> Any:
    return dataclasses.asdict(obj)


def from_json(cls: type, data: Any) -> Any:
    """Rebuild a dataclass (recursively) from ``to_json``'s output."""
    return _load(cls, data)


def _load(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_load(item, x) for x in data]
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _load(inner[0], data)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return tp(**{f.name: _load(hints[f.name], data[f.name]) for f in dataclasses.fields(tp)})
    return data
