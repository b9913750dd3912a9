"""From a parse tree to the facts of one file: what it defines, what it references."""

from __future__ import annotations

import re

from sqlfluff.core.parser.segments.base import BaseSegment

from relq.compiler.facts import Allow, Column, Constraint, Definition, Param, Reference
from relq.compiler.names import BUILTIN_TYPES, qualify, unquote
from relq.compiler.tree import code, flat, line, parts, qualified, squash, walk, words

_NO_TRANSACTION = re.compile(r"^--\[@tSQLt:NoTransaction\]\(\s*N?'(?P<proc>[^']+)'\s*\)")
_ALLOW = re.compile(r"^--\s*relq:allow\s+(?P<check>[a-z-]+)\s*(?P<reason>.*?)\s*$")
# Statements whose table references are reads or writes of a table or view.
_DML = ("select_statement", "insert_statement", "update_statement", "delete_statement",
        "merge_statement", "with_compound_statement", "truncate_table")
_PSEUDO_TABLES = frozenset({"inserted", "deleted"})


class Extractor:
    """Collects definitions and references in one pass over a tree."""

    def __init__(self, tree: BaseSegment, text: str) -> None:
        self.tree = tree
        self.lines = text.splitlines()
        self.definitions: list[Definition] = []
        self.references: list[Reference] = []
        self.allows: list[Allow] = []

    def run(self) -> None:
        for seg, ancestors in walk(self.tree):
            handler = getattr(self, "_" + seg.get_type(), None)
            if handler is not None:
                handler(seg, ancestors)

    def ref(self, kind: str, name: str, seg: BaseSegment, context: str = "", **kw) -> None:
        self.references.append(Reference(kind, name, line(seg), context, **kw))

    # -- comments ---------------------------------------------------------------
    def _inline_comment(self, seg: BaseSegment, _a) -> None:
        cleanup = _NO_TRANSACTION.match(seg.raw)
        if cleanup:  # the clean-up procedure a NoTransaction test names must exist
            self.ref("procedure", qualify(_split_name(cleanup["proc"])), seg,
                     "tSQLt NoTransaction clean-up", by_name=True)
        m = _ALLOW.match(seg.raw)
        if not m:
            return
        at = line(seg)
        alone = self.lines[at - 1].strip().startswith("--")
        self.allows.append(Allow(at + 1 if alone else at, at, m["check"], m["reason"]))

    _comment = _inline_comment

    # -- definitions -----------------------------------------------------------
    def _create_type_statement(self, seg: BaseSegment, _a) -> None:
        name_seg = seg.get_child("object_reference")
        d = Definition("type", qualified(name_seg), line(name_seg))
        table_body = seg.get_child("bracketed")
        if table_body is not None:  # CREATE TYPE ... AS TABLE
            d.columns, d.constraints = _table_body(table_body)
        else:
            base = seg.get_child("data_type")
            d.base_type = squash(base) if base is not None else None
            d.nullable = _nullability(words(seg))
        self.definitions.append(d)

    def _create_table_statement(self, seg: BaseSegment, _a) -> None:
        name_seg = seg.get_child("table_reference")
        if parts(name_seg)[:1] and parts(name_seg)[0].startswith("#"):
            return  # a temp table lives for a session, not in the catalog
        d = Definition("table", qualified(name_seg), line(name_seg))
        body = seg.get_child("bracketed")
        if body is not None:
            d.columns, d.constraints = _table_body(body)
        self.definitions.append(d)

    def _alter_table_statement(self, seg: BaseSegment, _a) -> None:
        table = seg.get_child("table_reference")
        self.ref("table", qualified(table), table, "ALTER TABLE")
        added = [_table_constraint(c) for c in seg.get_children("table_constraint")]
        if added:
            self.definitions.append(
                Definition("constraint", added[0].name or "", added[0].line,
                           constraints=added, table=qualified(table))
            )

    def _create_index_statement(self, seg: BaseSegment, _a) -> None:
        name_seg = seg.get_child("index_reference")
        table = seg.get_child("table_reference")
        columns = _index_columns(seg)
        include = seg.get_child("bracketed")
        if include is not None:
            columns += [_last(c) for c in include.get_children("column_reference")]
        name = unquote(parts(name_seg)[-1])
        kind = "UNIQUE INDEX" if "UNIQUE" in words(seg) else "INDEX"
        self.definitions.append(
            Definition("index", name, line(name_seg), table=qualified(table),
                       constraints=[Constraint(name, kind, line(name_seg), columns)])
        )
        self.ref("table", qualified(table), table, f"CREATE INDEX {name}")

    def _create_procedure_statement(self, seg: BaseSegment, _a) -> None:
        name_seg = seg.get_child("object_reference")
        params = _params(seg.get_child("procedure_parameter_list"))
        self.definitions.append(Definition("procedure", qualified(name_seg), line(name_seg),
                                           params=params))

    def _create_function_statement(self, seg: BaseSegment, _a) -> None:
        name_seg = seg.get_child("object_reference")
        plist = seg.get_child("function_parameter_list")
        params = _params(plist.get_child("bracketed")) if plist is not None else []
        self.definitions.append(Definition("function", qualified(name_seg), line(name_seg),
                                           params=params))

    def _create_view_statement(self, seg: BaseSegment, _a) -> None:
        name_seg = seg.get_child("object_reference")
        d = Definition("view", qualified(name_seg), line(name_seg))
        select = _outer_select_clause(seg)
        for element in select.get_children("select_clause_element") if select else []:
            column = _output_name(element)
            if column is None:
                d.view_columns_known = False
            else:
                d.columns.append(Column(column, "", line(element)))
        self.definitions.append(d)

    def _create_role_statement(self, seg: BaseSegment, _a) -> None:
        role = seg.get_child("role_reference")
        self.definitions.append(Definition("role", unquote(parts(role)[-1]), line(role)))

    def _create_schema_statement(self, seg: BaseSegment, _a) -> None:
        schema = seg.get_child("schema_reference")
        self.definitions.append(Definition("schema", unquote(parts(schema)[-1]), line(schema)))

    # -- references ------------------------------------------------------------
    def _table_reference(self, seg: BaseSegment, ancestors) -> None:
        parent = ancestors[-1]
        if parent.is_type("create_table_statement", "alter_table_statement",
                          "create_index_statement", "references_constraint_grammar"):
            return  # a definition, or checked with a better message elsewhere
        statement = _enclosing(ancestors, _DML)
        if statement is None or not parts(seg):
            return
        name = parts(seg)
        # A FROM source is a table unless it names a CTE; a DML target may also be an alias.
        is_source = _enclosing(ancestors, ("from_expression_element",)) is not None
        if len(name) == 1 and (
            name[0].startswith(("@", "#"))
            or unquote(name[0]).casefold() in _local_names(statement, ancestors, aliases=not is_source)
        ):
            return
        self.ref("table", qualify(name), seg, _context(statement))

    def _data_type(self, seg: BaseSegment, _a) -> None:
        name = parts(seg)
        first = code(seg)[0] if code(seg) else None
        if not name or (first is not None and first.is_type("keyword")):
            return  # a built-in type, spelt as a keyword
        if len(name) == 1 and unquote(name[0]).casefold() in BUILTIN_TYPES:
            return
        self.ref("type", qualify(name), seg)

    def _function(self, seg: BaseSegment, ancestors) -> None:
        fname = seg.get_child("function_name")
        if fname is None or len(parts(fname)) < 2:
            return  # a built-in: user functions are always called with their schema
        check = _enclosing(ancestors, ("table_constraint", "column_constraint_segment"))
        context = ""
        if check is not None and check.get_child("check_constraint_grammar") is not None:
            cname = check.get_child("object_reference")
            context = "CHECK constraint" + (f" {unquote(parts(cname)[-1])}" if cname else "")
        self.ref("function", qualified(fname), fname, context,
                 positional_args=len(_function_args(seg)))

    def _execute_script_statement(self, seg: BaseSegment, _a) -> None:
        target = seg.get_child("object_reference")
        if target is None:
            return  # EXEC (@sql): dynamic, see the conventions
        name = qualified(target)
        if name.split(".")[-1].startswith("@"):
            return  # EXEC @module: a procedure named at run time (a job's), nothing to resolve
        positional, named = exec_args(seg)
        if name.casefold() == "tsqlt.newtestclass" and positional:
            self.definitions.append(Definition("schema", _string(positional[0]), line(seg)))
        for kind, value in _tsqlt_targets(name, positional, named):
            self.ref(kind, value, seg, f"EXEC {name}", by_name=True)
        if name.split(".")[-1].casefold() == "sp_addmessage":
            number = named.get("@msgnum", positional[0] if positional else None)
            if number is not None and flat(number).isdigit():
                self.definitions.append(Definition("message", flat(number), line(seg),
                                                   severity=_literal_int(named.get("@severity")),
                                                   text=_literal_string(named.get("@msgtext"))))
        self.ref("procedure", name, target, named_args=list(named),
                 positional_args=len(positional))

    def _raiserror_statement(self, seg: BaseSegment, _a) -> None:
        args = raiserror_args(seg)
        if args and args[0].is_type("numeric_literal", "integer_literal"):
            self.ref("message", args[0].raw, seg, "RAISERROR")

    def _throw_statement(self, seg: BaseSegment, _a) -> None:
        args = code(seg)
        if len(args) > 1 and args[1].is_type("numeric_literal", "integer_literal"):
            self.ref("message", args[1].raw, seg, "THROW")

    def _grant_statement(self, seg: BaseSegment, _a) -> None:
        securable = seg.get_child("securable_segment")
        target = securable.get_child("object_reference") if securable is not None else None
        if target is not None and len(parts(target)) >= 1 and "SCHEMA" not in words(securable):
            # TYPE::dbo.List grants the use of a table type, which lives among the types
            kind = "type" if "TYPE" in words(securable) else "object"
            self.ref(kind, qualified(target), target, "GRANT")
        for role in seg.get_children("role_reference"):
            self.ref("role", unquote(parts(role)[-1]), role, "GRANT")

    _deny_statement = _grant_statement
    _revoke_statement = _grant_statement

    # -- columns written ---------------------------------------------------------
    def _insert_statement(self, seg: BaseSegment, ancestors) -> None:
        target = seg.get_child("table_reference")
        columns = seg.get_child("bracketed")
        if target is None or columns is None or not _is_catalog_table(target, seg, ancestors):
            return
        names = [_last(c) for c in columns.get_children("column_reference")]
        self.ref("column", qualified(target), target, "INSERT", columns=names)

    def _update_statement(self, seg: BaseSegment, ancestors) -> None:
        target = seg.get_child("table_reference")
        if target is None:
            return
        name = parts(target)
        table = _aliases(seg).get(unquote(name[0]).casefold()) if len(name) == 1 else None
        if table is None:
            if not _is_catalog_table(target, seg, ancestors):
                return
            table = qualified(target)
        names = _set_columns(seg.get_child("set_clause_list"))
        self.ref("column", table, target, "UPDATE ... SET", columns=names)

    def _merge_statement(self, seg: BaseSegment, ancestors) -> None:
        target = seg.get_child("table_reference")
        if target is None or not _is_catalog_table(target, seg, ancestors):
            return
        table = qualified(target)
        for clause in seg.recursive_crawl("merge_insert_clause"):
            columns = clause.get_child("bracketed")
            if columns is not None:
                names = [_last(c) for c in columns.get_children("column_reference")]
                self.ref("column", table, clause, "MERGE ... INSERT", columns=names)
        for clause in seg.recursive_crawl("merge_update_clause"):
            names = _set_columns(clause.get_child("set_clause_list"))
            self.ref("column", table, clause, "MERGE ... UPDATE SET", columns=names)


def exec_args(seg: BaseSegment) -> tuple[list[BaseSegment], dict[str, BaseSegment]]:
    """An EXEC's arguments after the procedure name: positional ones, and named ones."""
    items = code(seg)
    target = seg.get_child("object_reference")
    items = items[items.index(target) + 1:] if target in items else []
    positional: list[BaseSegment] = []
    named: dict[str, BaseSegment] = {}
    i = 0
    while i < len(items):
        item = items[i]
        following = items[i + 1] if i + 1 < len(items) else None
        if item.is_type("parameter") and following is not None and following.raw == "=":
            named[item.raw.casefold()] = items[i + 2] if i + 2 < len(items) else item
            i += 3
            continue
        if item.is_type("expression", "parameter", "numeric_literal", "quoted_literal"):
            positional.append(item)
        i += 1
    return positional, named


# tSQLt procedures that take an object's name as a string: (kind, parameter, position)
_TSQLT_TARGETS = {
    "tsqlt.faketable": [("table", "@tablename", 0)],
    "tsqlt.applyconstraint": [("table", "@tablename", 0)],
    "tsqlt.spyprocedure": [("procedure", "@procedurename", 0)],
    "tsqlt.fakefunction": [("function", "@functionname", 0), ("function", "@fakefunctionname", 1)],
}


def _tsqlt_targets(name: str, positional, named) -> list[tuple[str, str]]:
    """The objects a tSQLt call names in strings, so that a test faking a
    misspelt table fails the build instead of the test run."""
    found = []
    for kind, param, position in _TSQLT_TARGETS.get(name.casefold(), []):
        value = named.get(param, positional[position] if len(positional) > position else None)
        if value is None or not value.is_type("quoted_literal", "expression"):
            continue
        text = _string(value)
        schema = named.get("@schemaname")  # FakeTable's legacy form: ('Table', 'schema')
        if schema is None and kind == "table" and param == "@tablename" and len(positional) > 1:
            schema = positional[1]
        parts_ = _split_name(text)
        if len(parts_) == 1 and schema is not None:
            parts_ = [_string(schema), parts_[0]]
        found.append((kind, qualify(parts_)))
    return found


def _split_name(text: str) -> list[str]:
    """``Class.[test x]`` -> [Class, [test x]]: dots inside brackets do not split."""
    return re.findall(r"\[[^\]]*\]|[^.\s]+", text)


def raiserror_args(seg: BaseSegment) -> list[BaseSegment]:
    """RAISERROR's arguments: message, severity, state, substitutions."""
    bracket = seg.get_child("bracketed")
    return _bracket_items(bracket) if bracket is not None else []


def _bracket_items(bracket: BaseSegment) -> list[BaseSegment]:
    return [c for c in code(bracket) if not c.is_type("start_bracket", "end_bracket", "comma")]


def _table_body(body: BaseSegment) -> tuple[list[Column], list[Constraint]]:
    columns: list[Column] = []
    constraints: list[Constraint] = []
    for item in code(body):
        if item.is_type("column_definition"):
            name = unquote(code(item)[0].raw)
            dtype = item.get_child("data_type")
            column = Column(name, squash(dtype) if dtype is not None else "", line(item))
            columns.append(column)
            for cc in item.get_children("column_constraint_segment"):
                if column.nullable is None:
                    column.nullable = _nullability(words(cc))
                c = _column_constraint(cc, name)
                if c is not None:
                    constraints.append(c)
        elif item.is_type("table_constraint"):
            constraints.append(_table_constraint(item))
        elif item.is_type("table_index_segment"):
            name_seg = item.get_child("object_reference")
            constraints.append(Constraint(
                unquote(parts(name_seg)[-1]) if name_seg else None, "INDEX", line(item),
                _index_columns(item)))
    return columns, constraints


def _nullability(keywords: list[str]) -> bool | None:
    """Keywords ending in ``NOT NULL`` -> False, in ``NULL`` -> True, else None (not said)."""
    if keywords[-2:] == ["NOT", "NULL"]:
        return False
    return True if keywords[-1:] == ["NULL"] else None


def _constraint_name(seg: BaseSegment) -> str | None:
    if "CONSTRAINT" not in words(seg):
        return None
    name_seg = seg.get_child("object_reference")
    return unquote(parts(name_seg)[-1]) if name_seg is not None else None


def _table_constraint(seg: BaseSegment) -> Constraint:
    kw = words(seg)
    c = Constraint(_constraint_name(seg), "", line(seg))
    refs = seg.get_child("references_constraint_grammar")
    if "PRIMARY" in kw or "UNIQUE" in kw:
        c.kind = "PRIMARY KEY" if "PRIMARY" in kw else "UNIQUE"
        c.columns = _index_columns(seg)
    elif refs is not None:
        c.kind = "FOREIGN KEY"
        own = seg.get_child("bracketed")
        c.columns = [_last(x) for x in own.get_children("column_reference")] if own else []
        _foreign(c, refs)
    elif seg.get_child("check_constraint_grammar") is not None:
        c.kind = "CHECK"
        _check(c, seg.get_child("check_constraint_grammar"))
    elif "DEFAULT" in kw:
        c.kind = "DEFAULT"
    return c


def _check(c: Constraint, grammar: BaseSegment) -> None:
    """Keep a CHECK's clause and the functions it calls: deploy drops and re-adds
    it around an ALTER of those functions, which SQL Server otherwise refuses."""
    c.definition = grammar.raw  # as written: string literals and comments intact
    for fn in grammar.recursive_crawl("function_name"):
        if len(parts(fn)) >= 2:
            c.calls.append(qualified(fn))


def _column_constraint(seg: BaseSegment, column: str) -> Constraint | None:
    kw = words(seg)
    refs = seg.get_child("references_constraint_grammar")
    if "PRIMARY" in kw:
        kind = "PRIMARY KEY"
    elif "UNIQUE" in kw:
        kind = "UNIQUE"
    elif refs is not None:
        kind = "FOREIGN KEY"
    elif seg.get_child("check_constraint_grammar") is not None:
        kind = "CHECK"
    elif "DEFAULT" in kw:
        kind = "DEFAULT"
    else:
        return None  # NULL, NOT NULL, IDENTITY: properties, not constraints
    c = Constraint(_constraint_name(seg), kind, line(seg), [column])
    if refs is not None:
        _foreign(c, refs)
    if kind == "CHECK":
        _check(c, seg.get_child("check_constraint_grammar"))
    return c


def _foreign(c: Constraint, refs: BaseSegment) -> None:
    table = refs.get_child("table_reference")
    c.ref_table = qualified(table) if table is not None else None
    cols = refs.get_child("bracketed")
    c.ref_columns = [_last(x) for x in cols.get_children("column_reference")] if cols else []


def _index_columns(seg: BaseSegment) -> list[str]:
    grammar = seg.get_child("bracketed_index_column_list_grammar")
    if grammar is None:
        return []
    return [unquote(code(c)[0].raw) for c in grammar.recursive_crawl("index_column_definition")]


def _params(plist: BaseSegment | None) -> list[Param]:
    params: list[Param] = []
    if plist is None:
        return params
    for item in code(plist):
        if item.is_type("parameter"):
            params.append(Param(item.raw, ""))
        elif not params:
            continue
        elif item.is_type("data_type"):
            params[-1].type = squash(item)
        elif item.raw == "=":
            params[-1].has_default = True
        elif item.is_type("keyword") and item.raw.upper() in ("OUTPUT", "OUT"):
            params[-1].is_output = True
        elif item.is_type("keyword") and item.raw.upper() == "READONLY":
            # A table-valued parameter left out of an EXEC is an empty table, never an error.
            params[-1].has_default = True
    return params


def _function_args(seg: BaseSegment) -> list[BaseSegment]:
    contents = seg.get_child("function_contents")
    bracket = contents.get_child("bracketed") if contents is not None else None
    return _bracket_items(bracket) if bracket is not None else []


def _output_name(element: BaseSegment) -> str | None:
    alias = element.get_child("alias_expression")
    if alias is not None:
        ids = [c for c in code(alias) if c.is_type("naked_identifier", "quoted_identifier")]
        return unquote(ids[-1].raw) if ids else None
    column = element.get_child("column_reference")
    if column is not None and len(code(element)) == 1:
        return _last(column)
    return None


def _last(column_reference: BaseSegment) -> str:
    return unquote(parts(column_reference)[-1])


def _literal_int(seg: BaseSegment | None) -> int | None:
    return int(flat(seg)) if seg is not None and flat(seg).isdigit() else None


def _literal_string(seg: BaseSegment | None) -> str | None:
    """A string literal's value; None for anything else (a variable, an expression)."""
    raw = seg.raw.strip() if seg is not None else ""
    if len(raw) < 2 or raw[-1] != "'" or raw.lstrip("Nn")[:1] != "'":
        return None
    return _string(seg)


def _string(seg: BaseSegment) -> str:
    """The value of a string literal: N'dbo.Job' -> dbo.Job."""
    raw = seg.raw.strip()
    if raw[:1] in ("N", "n"):
        raw = raw[1:]
    return raw.strip("'").replace("''", "'")


def _set_columns(clauses: BaseSegment | None) -> list[str]:
    if clauses is None:
        return []
    names = []
    for clause in clauses.get_children("set_clause"):
        column = clause.get_child("column_reference")
        if column is not None:  # SET @Variable = ... assigns no column
            names.append(_last(column))
    return names


def _enclosing(ancestors, types) -> BaseSegment | None:
    for seg in reversed(ancestors):
        if seg.is_type(*types):
            return seg
    return None


def _outermost_dml(seg: BaseSegment, ancestors) -> BaseSegment:
    """The whole statement ``seg`` belongs to, CTEs included."""
    outer = seg
    for a in reversed(ancestors):
        if a.is_type(*_DML):
            outer = a
        elif a.is_type("statement"):
            break
    return outer


def _local_names(statement: BaseSegment, ancestors, *, aliases: bool) -> set[str]:
    """Names that are not catalog objects: the statement's CTEs and inserted/deleted,
    and with ``aliases`` the table aliases of its FROM clauses (column aliases never)."""
    outer = _outermost_dml(statement, ancestors)
    names = set(_PSEUDO_TABLES)
    for cte in outer.recursive_crawl("common_table_expression"):
        first = code(cte)[0]
        names.add(unquote(first.raw).casefold())
    if aliases:
        names |= set(_aliases(outer))
    return names


def _outer_select_clause(view: BaseSegment) -> BaseSegment | None:
    """The select list a view returns: the outer one, not a CTE's."""
    body = view.get_child("with_compound_statement", "select_statement", "set_expression")
    while body is not None and not body.is_type("select_statement"):
        body = body.get_child("select_statement", "set_expression")
    return body.get_child("select_clause") if body is not None else None


def _aliases(statement: BaseSegment) -> dict[str, str]:
    """alias -> table for the tables a statement's FROM clause names."""
    found = {}
    for element in statement.recursive_crawl("from_expression_element"):
        table = next(element.recursive_crawl("table_reference"), None)
        alias = element.get_child("alias_expression")
        if table is None or alias is None:
            continue
        ids = [c for c in code(alias) if c.is_type("naked_identifier", "quoted_identifier")]
        if ids:
            found[unquote(ids[0].raw).casefold()] = qualified(table)
    return found


def _is_catalog_table(target: BaseSegment, statement: BaseSegment, ancestors) -> bool:
    name = parts(target)
    if not name:
        return False
    if len(name) > 1:
        return True
    return not name[0].startswith(("@", "#")) and (
        unquote(name[0]).casefold() not in _local_names(statement, ancestors, aliases=True)
    )


def _context(statement: BaseSegment) -> str:
    return {
        "select_statement": "SELECT",
        "insert_statement": "INSERT",
        "update_statement": "UPDATE",
        "delete_statement": "DELETE",
        "merge_statement": "MERGE",
        "truncate_table": "TRUNCATE TABLE",
    }.get(statement.get_type(), "")
