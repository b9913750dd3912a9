"""No live test expects NULL from a column that cannot hold one. A live test that reads
a NOT NULL column and compares it with None fails on every server, whatever the
procedures do (as the attempt history's Error, NOT NULL with a default of N'', once
was); only the live tier would say so, and only where a server runs it. Read offline
from tests/live and the build's catalog (relq.compiler.catalog.Catalog.nullable).

The reading follows what a live test can hold of a query's result: ``db.query(...,
"SELECT a, b FROM dbo.T ...")`` is a list of rows whose columns are T's a and b; a
module's function that returns it (or a row of it) is the same; names bound to
either, by assignment or by unpacking, keep the shape; a subscript picks a row, a
slice of rows, a value or a slice of a row. An ``assert`` that compares such a thing
with a literal (``==``, or ``is None``) is checked value by value. Columns it cannot
name (an expression, a view's column, ``SELECT *``) are not checked."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache

import pytest

from relq.compiler import build
from relq.compiler.catalog import Catalog
from tests.conftest import REPO

LIVE = REPO / "tests" / "live"
SELECT = re.compile(r"^\s*(?:SET\s+NOCOUNT\s+ON\s*;\s*)?SELECT\s+(?:TOP\s*\(?\s*\d+\s*\)?\s+)?"
                    r"(?P<columns>.+?)\s+FROM\s+(?P<table>dbo\.\[?\w+\]?)(?:\s+(?:AS\s+)?(?!WHERE\b|ORDER\b)"
                    r"\w+)?\s*(?:WHERE\b|ORDER\b|;|$)", re.IGNORECASE | re.DOTALL)
COLUMN = re.compile(r"^(?:\w+\.)?\[?(?P<name>\w+)\]?$")
Column = tuple[str, str] | None  # (table, column), None where the reading cannot name it


@dataclass(frozen=True)
class Shape:
    kind: str  # "rows", "row" or "value"
    columns: tuple[Column, ...]

    def pick(self, index: ast.expr) -> Shape | None:
        """The shape of ``self[index]``."""
        if isinstance(index, ast.Slice):
            if self.kind == "rows":
                return self
            bounds = [b.value if isinstance(b, ast.Constant) else None for b in (index.lower, index.upper)]
            if index.step is not None or any(b is None and e is not None for b, e in
                                              zip(bounds, (index.lower, index.upper), strict=True)):
                return None
            return Shape("row", self.columns[slice(*bounds)]) if self.kind == "row" else None
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
            return Shape("row", self.columns) if self.kind == "rows" else None
        if self.kind == "rows":
            return Shape("row", self.columns)
        if self.kind == "row" and -len(self.columns) <= index.value < len(self.columns):
            return Shape("value", (self.columns[index.value],))
        return None

    def items(self, count: int) -> list[Shape | None]:
        """The shapes of the ``count`` elements of an unpacking or a literal of this shape."""
        if self.kind == "rows":
            return [Shape("row", self.columns)] * count
        if self.kind == "row" and count == len(self.columns):
            return [Shape("value", (c,)) for c in self.columns]
        return [None] * count


def columns_of(sql: str) -> tuple[Column, ...] | None:
    """The columns a one-table SELECT returns, by (table, column); None for any other query."""
    m = SELECT.match(sql)
    if m is None:
        return None
    table, depth, items, current = m["table"].replace("[", "").replace("]", ""), 0, [], ""
    for char in m["columns"]:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    named = [COLUMN.match(item.strip()) for item in items]
    return tuple((table, n["name"]) if n else None for n in named)


def query_sql(call: ast.Call) -> str | None:
    """The SQL text of ``db.query(cursor, "...", ...)``."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "query" and len(call.args) >= 2):
        return None
    sql = call.args[1]
    return sql.value if isinstance(sql, ast.Constant) and isinstance(sql.value, str) else None


class Reader:
    """The shapes of one module's expressions."""

    def __init__(self, module: ast.Module) -> None:
        self.functions: dict[str, Shape] = {}
        for node in module.body:
            if isinstance(node, ast.FunctionDef):
                returns = [r for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None]
                shapes = {self.shape(r.value, {}) for r in returns}
                if len(shapes) == 1 and None not in shapes:
                    self.functions[node.name] = shapes.pop()

    def shape(self, node: ast.expr, names: dict[str, Shape]) -> Shape | None:
        if isinstance(node, ast.Name):
            return names.get(node.id)
        if isinstance(node, ast.Subscript):
            inner = self.shape(node.value, names)
            return inner.pick(node.slice) if inner is not None else None
        if isinstance(node, ast.Call):
            sql = query_sql(node)
            if sql is not None:
                columns = columns_of(sql)
                return Shape("rows", columns) if columns is not None else None
            if isinstance(node.func, ast.Name):
                return self.functions.get(node.func.id)
        return None

    def bind(self, target: ast.expr, shape: Shape | None, names: dict[str, Shape]) -> None:
        if isinstance(target, ast.Name):
            if shape is None:
                names.pop(target.id, None)
            else:
                names[target.id] = shape
        elif isinstance(target, ast.Tuple | ast.List):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                shape = None
            parts = shape.items(len(target.elts)) if shape is not None else [None] * len(target.elts)
            for element, part in zip(target.elts, parts, strict=True):
                self.bind(element, part, names)


def nulls_against(shape: Shape, literal: ast.expr) -> list[Column]:
    """The named columns of ``shape`` that ``literal`` expects to be NULL."""
    if shape.kind == "value":
        is_none = isinstance(literal, ast.Constant) and literal.value is None
        return [shape.columns[0]] if is_none and shape.columns[0] is not None else []
    if not isinstance(literal, ast.Tuple | ast.List) or any(isinstance(e, ast.Starred) for e in literal.elts):
        return []
    found: list[Column] = []
    for element, part in zip(literal.elts, shape.items(len(literal.elts)), strict=True):
        if part is not None:
            found += nulls_against(part, element)
    return found


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def expected_nulls(source: str) -> list[tuple[int, str, str]]:
    """(line, table, column) of each comparison in ``source`` that expects NULL of a column."""
    module = ast.parse(source)
    reader = Reader(module)
    found = []
    for function in (n for n in module.body if isinstance(n, ast.FunctionDef)):
        names: dict[str, Shape] = {}
        for node in sorted(ast.walk(function), key=_position):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    reader.bind(target, reader.shape(node.value, names), names)
            elif isinstance(node, ast.Assert):
                for compare in (c for c in ast.walk(node.test) if isinstance(c, ast.Compare)):
                    if len(compare.ops) != 1:
                        continue
                    left, right = compare.left, compare.comparators[0]
                    if isinstance(compare.ops[0], ast.Is):
                        pairs = [(left, right)]
                    elif isinstance(compare.ops[0], ast.Eq):
                        pairs = [(left, right), (right, left)]
                    else:
                        continue
                    for side, literal in pairs:
                        shape = reader.shape(side, names)
                        for table, column in nulls_against(shape, literal) if shape else []:
                            found.append((compare.lineno, table, column))
    return found


@cache
def catalog() -> Catalog:
    return build(REPO, write=False).catalog


def test_the_reading_finds_a_null_expected_of_a_not_null_column() -> None:
    """The assertions that once expected NULL of the attempt history's Error, as they were."""
    source = '''
def attempts(conn, key):
    return db.query(conn.cursor(), "SELECT AttemptNum, Outcome, Error FROM dbo.SyncQueueAttempt "
                                   "WHERE EnqueuedAt = ? ORDER BY StartedAt;", key)

def test_history(conn):
    assert attempts(conn, key) == [(1, "Completed", None)]
    (abandoned, current) = attempts(conn, key)
    assert current == (2, None, None)
    assert attempts(conn, key)[0][2] is None
    rows = db.query(conn.cursor(), "SELECT a.Outcome, a.Duration FROM dbo.SyncQueueAttempt AS a;")
    assert rows[-1][:2] == (None, None)
'''
    found = expected_nulls(source)
    assert found == [(7, "dbo.SyncQueueAttempt", "Error"),
                     (9, "dbo.SyncQueueAttempt", "Outcome"), (9, "dbo.SyncQueueAttempt", "Error"),
                     (10, "dbo.SyncQueueAttempt", "Error"),
                     (12, "dbo.SyncQueueAttempt", "Outcome"), (12, "dbo.SyncQueueAttempt", "Duration")]
    refused = [(line, column) for line, table, column in found if catalog().nullable(table, column) is False]
    assert refused == [(7, "Error"), (9, "Error"), (10, "Error")]


def test_the_catalog_knows_nullability_from_the_column_its_key_and_its_type() -> None:
    assert catalog().nullable("dbo.SyncQueueAttempt", "Outcome") is True  # NULL, said
    assert catalog().nullable("dbo.SyncQueueAttempt", "Error") is False  # dbo.WebResponse is NOT NULL
    assert catalog().nullable("dbo.SyncQueueAttempt", "EnqueuedAt") is False
    assert catalog().nullable("dbo.SyncQueueAttempt", "NoSuchColumn") is None
    assert catalog().nullable("dbo.Worker_SyncQueue_V", "Status") is None  # a view: not read


def live_modules() -> list[str]:
    return sorted(p.name for p in LIVE.glob("test_*.py"))


@pytest.mark.parametrize("module", live_modules())
def test_no_live_test_expects_null_of_a_not_null_column(module: str) -> None:
    found = expected_nulls((LIVE / module).read_text(encoding="utf-8"))
    wrong = [f"tests/live/{module}:{line}: {table}.{column} is NOT NULL: SQL Server never returns NULL there"
             for line, table, column in found if catalog().nullable(table, column) is False]
    assert not wrong, "\n".join(wrong)
